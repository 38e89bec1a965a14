"""PIT-2015 (SemEval-2015 task 1, Xu et al.): ``topic id \\t topic \\t s1 \\t s2 \\t label ...``,
one pair a line. The label is the crowd's votes ``(pos, neg)`` in train and dev, and one
expert score 0-5 in test (or nothing: test's labels may come in a separate ``test.label``).

Read as the identifier's labelled data (votes 3-5 of 5 a paraphrase, 2 debatable, 0-1 not;
an expert score 4-5 a paraphrase, 3 debatable; or a separate label file) and as an STS set
(the score: the positive votes).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from paramill.text.numbers import counts
from paramill.formats.rows import Bad, Labelled, Scored
from paramill.formats.reading import bad_fields, check_sides, collect_labelled, fields, strict_lines
from paramill.errors import InputError

NAME = "pit2015"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "PIT-2015: `topic id \\t topic \\t s1 \\t s2 \\t label`"
#: topic id, topic, s1, s2: a line has at least these
MIN_COLUMNS = 4
#: the labelled data may come with a separate label file (PIT-2015 test's ``test.label``)
LABEL_FILE = True
_EXPERT = re.compile(r"^[0-5]$")
#: the label, then (after white space holding a tab) the score; the white space before the
#: first tab is the one place a tab may be taken (``\s*\t`` tried every split of a run of
#: tabs: 8,000 tabs before a bad score 0.35 s, a 64 KiB line ~20 s)
_LABEL_LINE = re.compile(r"^(true|false|-+)(?:[^\S\t]*\t\s*([0-9.]+))?\s*$")


@dataclass(frozen=True)
class Pit:
    """One pair as written (sentences untrimmed); ``label``: the fifth column, stripped
    (None where the line has only four)."""

    line_no: int
    s1: str
    s2: str
    label: str | None


def read(path: str, max_line_bytes: int = 65536) -> Iterator[Pit | Bad]:
    """The pairs of ``path`` in order; a line of fewer than 4 columns is ``column_count``."""
    for item in fields(str(path), max_line_bytes):
        if isinstance(item, Bad):
            yield item
            continue
        line_no, columns = item
        if len(columns) < MIN_COLUMNS:
            yield bad_fields(line_no, columns, "column_count",
                             f"expected PIT-2015 fields (topic id, topic, s1, s2, label); got "
                             f"{len(columns)} fields")
            continue
        yield Pit(line_no, columns[2], columns[3],
                  columns[4].strip() if len(columns) > MIN_COLUMNS else None)


def sts(path: str, max_line_bytes: int = 65536) -> Iterator[Scored | Bad]:
    """Each pair scored by its positive crowd votes (none where the label is not votes)."""
    for pit in read(path, max_line_bytes):
        if isinstance(pit, Bad):
            yield pit
            continue
        found = counts(pit.label)
        yield Scored(pit.s1.strip(), pit.s2.strip(), None if found is None else found[0])


def label_of(votes: str) -> tuple[int | None, str | None]:
    """A label column: crowd votes ``(pos, neg)`` (train/dev) or an expert score 0-5
    (test). (label or None if debatable, error or None)."""
    found = counts(votes)
    if found is not None:
        pos = found[0]
        return (None if pos == 2 else int(pos > 2)), None
    if _EXPERT.match(votes):
        score = int(votes)
        return (None if score == 3 else int(score > 3)), None
    return None, f"label must be crowd votes (pos, neg) or an expert score 0-5, not {votes!r}"


def read_label_file(path: str | Path) -> list[int | None]:
    """PIT-2015's ``test.label``: one ``true|false|----`` (and the expert score) per line of
    the data; debatable lines are None."""
    out: list[int | None] = []
    for line_no, line in strict_lines(path):
        m = _LABEL_LINE.match(line.strip())
        if not m:
            raise InputError(path, line_no, f"expected true, false or ---- (and a score), "
                                            f"not {line[:80]!r}")
        out.append({"true": 1, "false": 0}.get(m.group(1)))
    return out


def labelled(path: str, max_line_bytes: int = 65536, labels: str | None = None
             ) -> tuple[list[tuple[str, str]], list[int], int]:
    """The pairs labelled by their label column, or by the separate ``labels`` file."""
    if labels is not None:
        return _with_label_file(Path(path), Path(labels), max_line_bytes)

    def row(pit: Pit) -> Labelled:
        if pit.label is None:
            raise InputError(path, pit.line_no, "expected PIT-2015 fields (topic id, topic, s1, "
                                                "s2, label); got 4 fields")
        label, error = label_of(pit.label)
        if error:
            raise InputError(path, pit.line_no, error)
        return Labelled(pit.line_no, pit.s1, pit.s2, label)

    return collect_labelled((item if isinstance(item, Bad) else row(item)
                             for item in read(path, max_line_bytes)), path)


def _with_label_file(path: Path, label_path: Path, max_line_bytes: int
                     ) -> tuple[list[tuple[str, str]], list[int], int]:
    gold = read_label_file(label_path)
    pairs, labels, dropped, line_no = [], [], 0, 0
    for pit in read(str(path), max_line_bytes):
        if isinstance(pit, Bad):
            raise InputError(path, pit.line_no, pit.detail)
        line_no = pit.line_no
        if line_no > len(gold):
            continue  # counted for the error below
        check_sides(path, line_no, pit.s1, pit.s2)
        if gold[line_no - 1] is None:
            dropped += 1
            continue
        pairs.append((pit.s1, pit.s2))
        labels.append(gold[line_no - 1])
    if line_no != len(gold):
        raise InputError(label_path, None, f"{len(gold)} labels for {line_no} lines of {path}: "
                                           "the label file must have one line per pair")
    return pairs, labels, dropped
