"""CzEng 2.0's tab-separated release: its columns named by the corpus's ``columns`` or a
header line, two of them ``cs`` and ``en`` (without either: Czech, then English)."""

from __future__ import annotations

from paramill.formats import tsv

NAME = "czeng2"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "CzEng 2.0-style TSV, columns named by `columns` or a header line"
Spec = tsv.Spec
check = tsv.check
bitext = tsv.bitext
