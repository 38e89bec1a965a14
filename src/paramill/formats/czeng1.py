"""CzEng 1.6/1.7's plain-text export: ``pair id \\t filter score \\t Czech \\t English``, one
pair a line."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from paramill.formats import BitextPair, tsv
from paramill.settings import Settings, setting

NAME = "czeng1"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "CzEng 1.6/1.7 plain-text export (pair id, filter score, Czech, English)"
COLUMNS = ("pair_id", "score", "cs", "en")


@dataclass(frozen=True)
class Spec(Settings):
    path: str = setting(doc="The file. Plain, .gz, .xz, .zst or .bz2.", type="string")


def bitext(spec: Spec, max_line_bytes: int = 65536) -> Iterator[BitextPair]:
    return tsv.bitext(tsv.Spec(path=spec.path, columns=COLUMNS), max_line_bytes)
