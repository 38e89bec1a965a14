"""A paraphrase pair corpus as configured (``pairs.corpora.<name>``) and its candidates, read
by its layout's module in :mod:`paramill.formats` (ParaNMT-50M, ParaBank 2, TSV, Parquet, MT
outputs beside their references, the Twitter URL corpus, or any layout that can be read as
``pairs``).

Each candidate is a :class:`~paramill.formats.Candidate`, in file order, at most one line
(one row group for Parquet) in memory. A line that cannot give candidates (invalid UTF-8,
wrong number of columns, an unreadable score or vote, an over-long line) is yielded once with
a ``reason`` so it lands in the rejected table; a file that cannot be used at all (empty,
corrupt compression, hypothesis files of different lengths, a Parquet file without
``s1``/``s2``) raises :class:`~paramill.io.InputError` naming the file and line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from paramill.formats import reading, registry
from paramill.formats.rows import Candidate
from paramill.config.typed import setting

USE = "pairs"


@dataclass(frozen=True)
class PairCorpusSpec:
    """One pair corpus as configured under ``pairs.corpora.<name>``: its layout, that
    layout's own settings (``layout``: the format module's ``Spec``) and how the stage
    treats the corpus."""

    name: str
    format: str = setting(doc="The corpus's layout: one of the layouts `paramill formats list --use pairs` names "
                          "(the manual's Input formats page has their keys).",
                          enum=registry.enum(USE))
    method: str | None = setting(
        None, "The candidates' `method` (default: the format; references: the system name).",
        no_default=True, type="string", pattern="^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
    dedup: bool = setting(
        True, "Deduplicate this corpus (with pairs.clean.dedup). false keeps its exact "
        "duplicates and lets later corpora keep theirs too: e.g. to compare MT systems on every "
        "sentence, where two systems' identical outputs are otherwise one pair (the system "
        "first in name order keeps it).")
    allow_empty: bool = setting(
        False, "Accept an input that yields no rows (an empty file, or a header alone) as an empty "
        "corpus; by default it is an error naming the file.", no_default=True)
    layout: Any = None

    schema_extra: ClassVar[dict[str, Any]] = registry.corpus_schema(USE)

    @classmethod
    def from_dict(cls, name: str, spec: dict[str, Any]) -> PairCorpusSpec:
        return registry.corpus(cls, USE, name, spec, f"pairs.corpora.{name}")

    def record(self) -> dict[str, Any]:
        """The corpus's settings as plain data (its provenance)."""
        return {"name": self.name, "format": self.format, "method": self.method,
                "dedup": self.dedup, **dataclasses.asdict(self.layout),
                **({"allow_empty": True} if self.allow_empty else {})}

    @property
    def files(self) -> list[str]:
        return registry.files(self.format, self.layout)


def read_pairs(spec: PairCorpusSpec, max_line_bytes: int = 65536,
               batch_rows: int = 50000) -> Iterator[Candidate]:
    """The corpus's candidates, read by its layout (``method``: the corpus's, else the
    layout's name as configured); an error when not one line could be read
    (:func:`paramill.formats.some_readable`)."""
    rows = registry.reader(USE, spec.format)(spec.layout, spec.method or spec.format,
                                            max_line_bytes, batch_rows)
    return reading.some_readable(rows, ";".join(spec.files), f"a {spec.format} pair corpus",
                                 empty=f"set pairs.corpora.{spec.name}.allow_empty: true where it may be empty",
                                 allow_empty=spec.allow_empty)
