"""CzEng 1.6/1.7's plain-text export: ``pair id \\t filter score \\t Czech \\t English``, one
pair a line."""

from __future__ import annotations

from collections.abc import Iterator

from paramill.formats.rows import BitextPair, FileSpec
from paramill.formats import tsv

NAME = "czeng1"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "CzEng 1.6/1.7 plain-text export (pair id, filter score, Czech, English)"
COLUMNS = ("pair_id", "score", "cs", "en")


Spec = FileSpec


def bitext(spec: Spec, max_line_bytes: int = 65536) -> Iterator[BitextPair]:
    return tsv.bitext(tsv.Spec(path=spec.path, columns=COLUMNS), max_line_bytes)
