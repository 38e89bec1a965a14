"""SICK with its header line: ``pair_ID \\t sentence_A \\t sentence_B \\t relatedness_score
...``; the columns are found by name."""

from __future__ import annotations

from collections.abc import Iterator

from paramill.text.numbers import gold_score
from paramill.formats.rows import Scored
from paramill.formats.reading import text_lines
from paramill.errors import InputError

NAME = "sick"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "SICK with a header (sentence_A, sentence_B, relatedness_score)"
COLUMNS = ("sentence_A", "sentence_B", "relatedness_score")
SCALE = (1.0, 5.0)  # relatedness, the mean of ten ratings of 1-5


def sts(path: str, max_line_bytes: int = 65536) -> Iterator[Scored]:
    lines = text_lines(path, max_line_bytes)
    header = lines[0].split("\t") if lines else []
    if missing := [c for c in COLUMNS if c not in header]:
        raise InputError(path, 1, f"header names no {', '.join(missing)}")
    ia, ib, isc = (header.index(c) for c in COLUMNS)
    for line_no, line in enumerate(lines[1:], 2):
        f = line.split("\t")
        score = gold_score(path, line_no, f, isc, NAME, SCALE)
        yield Scored(f[ia] if len(f) > ia else None, f[ib] if len(f) > ib else None, score)
