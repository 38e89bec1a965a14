"""CzEng 2.0's tab-separated release: its columns named by the corpus's ``columns`` or a
header line, two of them ``cs`` and ``en`` (without either: Czech, then English)."""

from __future__ import annotations

from collections.abc import Iterator

from paramill.formats import BitextPair, tsv

NAME = "czeng2"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "CzEng 2.0-style TSV, columns named by `columns` or a header line"
Spec = tsv.Spec
check = tsv.check


def bitext(spec: tsv.Spec, max_line_bytes: int = 65536) -> Iterator[BitextPair]:
    return tsv.bitext(spec, max_line_bytes)
