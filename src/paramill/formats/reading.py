"""What the layouts' readers share: lines and tab-separated fields of text files (strict
UTF-8, bounded lines, errors naming the file and line), JSON lines checked as text, rejected
rows, labelled rows collected, and the check that a corpus has some readable line."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from paramill.formats.rows import Bad, Candidate, Labelled
from paramill.io.lines import REJECTED_TEXT_CHARS, EmptyInput, LineStream, decode_line, shown_text
from paramill.errors import InputError


def lines(source: str | LineStream, max_line_bytes: int = 65536
          ) -> Iterator[tuple[int, str] | Bad]:
    """Each line's text, or a :class:`Bad` for a line that is too long (``line_too_long``,
    never held whole), not UTF-8 (``invalid_utf8``) or holding a NUL byte (``not_text``). ``source``: a path, or a
    :class:`~paramill.io.LineStream` (whose ``lines`` then counts what was read)."""
    stream = source if isinstance(source, LineStream) else LineStream(str(source), max_line_bytes)
    max_line_bytes = stream.max_line_bytes
    for line_no, raw in stream:
        if raw is None:
            yield Bad(line_no, "line_too_long", f"line longer than {max_line_bytes} bytes", None)
            continue
        text, reason, problem = decode_line(raw)
        if text is None:
            yield Bad(line_no, str(reason), str(problem), shown_text(raw))
            continue
        yield line_no, text


def strict_lines(path: str | Path, max_line_bytes: int = 65536) -> Iterator[tuple[int, str]]:
    """Each line's number and text, where any bad line is an
    :class:`~paramill.io.InputError` naming file and line."""
    for item in lines(str(path), max_line_bytes):
        if isinstance(item, Bad):
            raise InputError(path, item.line_no, item.detail)
        yield item


def text_lines(path: str | Path, max_line_bytes: int = 65536) -> list[str]:
    """The whole file's lines (see :func:`strict_lines`)."""
    return [text for _, text in strict_lines(path, max_line_bytes)]


def fields(source: str | LineStream, max_line_bytes: int = 65536
           ) -> Iterator[tuple[int, list[str]] | Bad]:
    """Each line's tab-separated fields, or a :class:`Bad` (see :func:`lines`)."""
    for item in lines(source, max_line_bytes):
        yield item if isinstance(item, Bad) else (item[0], item[1].split("\t"))


def json_lines(path: str | Path, max_line_bytes: int = 16 << 20, text: bool = True
               ) -> Iterator[tuple[int, Any] | Bad]:
    """Each non-blank line's JSON value, or a :class:`Bad` for a line too long, not UTF-8, not
    JSON (``not_json``, also nested deeper than Python parses), or with ``text`` holding what
    no row may (:func:`.jsontext.found`; else :func:`.jsontext.marked`: the caller checks)."""
    from paramill.formats import jsontext

    for item in lines(str(path), max_line_bytes):
        if isinstance(item, Bad):
            yield item
            continue
        line_no, line = item
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            yield Bad(line_no, "not_json", f"not JSON ({exc})", line[:REJECTED_TEXT_CHARS])
        except RecursionError:  # '[[[[...' a hundred thousand deep: Python's parser gives up
            yield Bad(line_no, "not_json", "not JSON: nested too deeply to read", line[:REJECTED_TEXT_CHARS])
        else:
            found = text and jsontext.found(line, value)
            yield Bad(line_no, *found, line[:REJECTED_TEXT_CHARS]) if found else (
                line_no, value if text else jsontext.marked(line, value))


def bad_fields(line_no: int, columns: list[str], reason: str, detail: str) -> Bad:
    return Bad(line_no, reason, detail, "\t".join(columns)[:REJECTED_TEXT_CHARS])


def rejected(bad: Bad, method: str, path: str) -> Candidate:
    """The rejected candidate row of a bad line of a pair corpus."""
    return Candidate(bad.line_no, bad.text, None, method, source_file=path, reason=bad.reason,
                     detail=bad.detail)


def candidate_fields(stream: LineStream, method: str
                     ) -> Iterator[tuple[int, list[str] | Candidate]]:
    """Tab-separated fields of each line, or the rejected row of a line that has none."""
    for item in fields(stream):
        yield ((item.line_no, rejected(item, method, stream.path)) if isinstance(item, Bad)
               else item)


def bad_candidate(line_no: int, columns: list[str], method: str, path: str, reason: str,
                  detail: str) -> Candidate:
    """The rejected row of a line whose columns cannot be a candidate."""
    return Candidate(line_no, "\t".join(columns)[:REJECTED_TEXT_CHARS], None, method,
                     source_file=path, reason=reason, detail=detail)


def candidates_by_line(path: str, method: str, max_line_bytes: int,
                       parse: Callable[[int, list[str]], Iterator[Candidate]]
                       ) -> Iterator[Candidate]:
    """The candidates ``parse(line_no, columns)`` makes of each readable line of ``path``;
    the rejected row of each unreadable line (not UTF-8, too long) passed on in its place."""
    for line_no, columns in candidate_fields(LineStream(path, max_line_bytes), method):
        if isinstance(columns, Candidate):
            yield columns
        else:
            yield from parse(line_no, columns)


def bad_score(line_no: int, columns: list[str], column: int | str, value: str, method: str,
              path: str) -> Candidate:
    """The rejected row of a line whose score (``column``: its number or name) is not a
    finite decimal number."""
    return bad_candidate(line_no, columns, method, path, "bad_score",
                         f"column {column}: score {value[:40]!r} is not a finite decimal number")


def check_sides(path: str | Path, line_no: int, s1: str, s2: str) -> None:
    """A labelled pair has two sentences: an empty (or blank) side is an
    :class:`~paramill.io.InputError` naming the file, the line and the side. Such a line is a
    broken row (a column shifted, a sentence lost), and scoring it would put a label on
    nothing into training or into an evaluation's figures."""
    for side, text in ((1, s1), (2, s2)):
        if not text.strip():
            raise InputError(path, line_no, f"sentence {side} of the pair is empty; a labelled "
                                            "pair needs two sentences")


def collect_labelled(rows: Iterator[Labelled | Bad], path: str | Path
                     ) -> tuple[list[tuple[str, str]], list[int], int]:
    """(pairs, labels, dropped) of labelled rows: a blank line is skipped, any other bad line
    (an empty sentence among them, :func:`check_sides`) is an
    :class:`~paramill.io.InputError` naming file and line, a debatable pair dropped."""
    pairs, labels, dropped = [], [], 0
    for row in rows:
        if isinstance(row, Bad):
            if row.reason == "column_count" and not (row.text or "").strip():
                continue  # a blank line
            raise InputError(path, row.line_no, row.detail)
        check_sides(path, row.line_no, row.s1, row.s2)
        if row.label is None:
            dropped += 1
            continue
        pairs.append((row.s1, row.s2))
        labels.append(row.label)
    return pairs, labels, dropped


#: the reasons a reader gives a line it could not parse at all (as opposed to a judgement on
#: a parsed row's content, such as a Twitter URL pair's ``not_paraphrase`` label)
UNREADABLE = frozenset({"invalid_utf8", "not_text", "line_too_long", "column_count", "not_json",
                        "duplicate_key", "not_object", "missing_field", "bad_field", "bad_quote",
                        "bad_score", "bad_label", "bad_votes"})


def some_readable(rows: Iterable[Any], path: str, what: str,
                  hint: str = "Check the corpus's format, columns and header",
                  empty: str | None = None, allow_empty: bool = False) -> Iterator[Any]:
    """``rows`` (a reader's: a row whose ``reason`` is set carries ``line_no`` and ``detail``,
    as :class:`Bad` does) passed on; when the reader ends and every one of them was
    :data:`UNREADABLE`, an :class:`~paramill.io.InputError` naming ``path`` (or the row's
    ``source_file``), the first such line, the reasons and ``hint``.

    Some bad lines are data (they go to the rejected table); none readable is a wrong
    ``format``, ``columns`` or ``header`` (a four-column file read as two), or not this
    kind of file at all: the stage fails (its outputs were never renamed into place)
    instead of writing an empty corpus. A reader that yields no row at all (an empty file,
    a header alone) is an error too where ``empty`` says how to allow it, and no error with
    ``allow_empty``."""
    reasons: Counter[str] = Counter()
    first = None
    rows = iter(rows)  # the rest is passed on from where the first readable row was
    try:
        head = next(rows, None)
    except EmptyInput as exc:
        if allow_empty:
            return
        if empty is None:
            raise
        raise InputError(exc.path, None, f"file is empty; give it its rows, or {empty}") from None
    if head is None:  # not one row, not even a bad one: a header alone
        if empty is not None and not allow_empty:
            raise InputError(path, None, f"yields no rows: {what} with nothing in it (an empty "
                             f"file, or a header alone); give it its rows, or {empty}")
        return
    for row in itertools.chain([head], rows):
        reason = getattr(row, "reason", None)
        if reason not in UNREADABLE:
            yield row
            yield from rows
            return
        reasons[reason] += 1
        first = first or row
        yield row
    if first is not None:
        counts = ", ".join(f"{r} {n}" for r, n in reasons.most_common())
        raise InputError(getattr(first, "source_file", None) or path, first.line_no,
                         f"no line could be read as {what} ({counts}); this one: {first.detail}. "
                         + hint)
