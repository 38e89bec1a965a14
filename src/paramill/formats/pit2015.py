"""PIT-2015 (SemEval-2015 task 1, Xu et al.): ``topic id \\t topic \\t s1 \\t s2 \\t label ...``,
one pair a line. The label is the crowd's votes ``(pos, neg)`` in train and dev, and one
expert score 0-5 in test (or nothing: test's labels may come in a separate ``test.label``).

Read by the identifier's labelled data and STS evaluation, each labelling it its own way.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from paramill.formats import Bad, bad_fields, fields

NAME = "pit2015"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "PIT-2015: `topic id \\t topic \\t s1 \\t s2 \\t label`"
#: topic id, topic, s1, s2: a line has at least these
MIN_COLUMNS = 4


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
