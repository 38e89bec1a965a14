"""The tokenised distributions (the Twitter URL corpus's, PIT-2015's and others'): a
directory with line-aligned ``a.toks``, ``b.toks`` and ``sim.txt`` (the pair's label or
score), one pair a line.

Read as the identifier's labelled data (``sim`` a 0/1 label) and as an STS set (a score).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from paramill.formats.rows import Scored
from paramill.formats.reading import text_lines
from paramill.errors import InputError, check_name

NAME = "toks"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "a directory with line-aligned `a.toks`, `b.toks` and `sim.txt`"
FILES = ("a.toks", "b.toks", "sim.txt")


@dataclass(frozen=True)
class Toks:
    line_no: int
    a: str
    b: str
    sim: str


def check_folder(path: str | Path) -> None:
    """An :class:`~paramill.errors.InputError` unless ``path`` names a folder (a file given
    for the folder that holds the three files is said as such)."""
    check_name(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise InputError(path, None, f"is a file: layout {NAME} reads a folder holding "
                         f"{', '.join(FILES)}")


def read(path: str | Path, max_line_bytes: int = 65536) -> Iterator[Toks]:
    """The pairs of the directory ``path`` in order. A line that is not UTF-8 or over-long,
    or files of different lengths, are an :class:`~paramill.io.InputError`."""
    check_folder(path)
    path = Path(path)
    a, b, sim = (text_lines(path / name, max_line_bytes) for name in FILES)
    if not len(a) == len(b) == len(sim):
        raise InputError(path, None, f"a.toks, b.toks, sim.txt differ in length "
                                     f"({len(a)}, {len(b)}, {len(sim)})")
    for i, (x, y, s) in enumerate(zip(a, b, sim), 1):
        yield Toks(i, x, y, s)


def sts(path: str, max_line_bytes: int = 65536) -> Iterator[Scored]:
    for row in read(path, max_line_bytes):
        yield Scored(row.a, row.b, row.sim)


def labelled(path: str, max_line_bytes: int = 65536
             ) -> tuple[list[tuple[str, str]], list[int], int]:
    """``sim`` must be 0 or 1 (an error naming sim.txt and the line otherwise)."""
    pairs, gold = [], []
    for row in read(path, max_line_bytes):
        for name, text in (("a.toks", row.a), ("b.toks", row.b)):
            if not text.strip():
                raise InputError(Path(path) / name, row.line_no, "the sentence is empty; a "
                                 "labelled pair needs two sentences")
        if row.sim.strip() not in ("0", "1"):
            raise InputError(Path(path) / "sim.txt", row.line_no,
                             f"label must be 0 or 1, not {row.sim!r}")
        pairs.append((row.a, row.b))
        gold.append(int(row.sim))
    return pairs, gold, 0
