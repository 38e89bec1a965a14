"""A bitext corpus as configured (``bitext.corpora.<name>``) and its rows, read by its
layout's module in :mod:`paramill.formats` (``czeng1``, ``czeng2``, ``moses``, ``tsv``, or
any layout that can be read as ``bitext``).

Each row is a :class:`~paramill.formats.BitextPair`, in order, at most one line in memory;
a line that cannot become a pair (invalid UTF-8, wrong number of columns, longer than the
limit) carries a ``reason`` so it lands in the rejected table; a file that cannot be used at
all (empty, truncated or corrupt compression, Moses sides of different lengths) raises
:class:`~paramill.io.InputError` naming the file and line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from paramill.formats import reading, registry
from paramill.formats.rows import BitextPair
from paramill.config.typed import setting

USE = "bitext"


@dataclass(frozen=True)
class CorpusSpec:
    """One input corpus as configured under ``bitext.corpora.<name>``: its layout and that
    layout's own settings (``layout``: the format module's ``Spec``)."""

    name: str
    format: str = setting(doc="The corpus's layout: one of the layouts `paramill formats list --use bitext` names "
                          "(the manual's Input formats page has their keys).",
                          enum=registry.enum(USE))
    allow_empty: bool = setting(
        False, "Accept an input that yields no rows (an empty file, or a header alone) as an empty "
        "corpus; by default it is an error naming the file.", no_default=True)
    layout: Any = None

    schema_extra: ClassVar[dict[str, Any]] = registry.corpus_schema(USE)

    @classmethod
    def from_dict(cls, name: str, spec: dict[str, Any]) -> CorpusSpec:
        return registry.corpus(cls, USE, name, spec, f"bitext.corpora.{name}")

    def record(self) -> dict[str, Any]:
        """The corpus's settings as plain data (its provenance)."""
        return {"name": self.name, "format": self.format, **dataclasses.asdict(self.layout),
                **({"allow_empty": True} if self.allow_empty else {})}

    @property
    def files(self) -> list[str]:
        return registry.files(self.format, self.layout)

    @property
    def source_file(self) -> str:
        """The value of the ``source_file`` column: the file, or ``cs;en`` for Moses pairs."""
        return ";".join(self.files)


def read_corpus(spec: CorpusSpec, max_line_bytes: int = 65536) -> Iterator[BitextPair]:
    """The corpus's rows, read by its layout; an error when not one line could be read
    (:func:`paramill.formats.some_readable`)."""
    return reading.some_readable(registry.reader(USE, spec.format)(spec.layout, max_line_bytes),
                                 spec.source_file, f"a {spec.format} bitext corpus",
                                 empty=f"set bitext.corpora.{spec.name}.allow_empty: true where it may be empty",
                                 allow_empty=spec.allow_empty)
