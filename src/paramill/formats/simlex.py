"""SimLex-999 (Hill et al. 2015) as released: a header line naming ``word1``, ``word2`` and
``SimLex999`` among its tab-separated columns, then one word pair a line. Read by the
lexicon's SimLex evaluation; any bad line is an error naming file and line."""

from __future__ import annotations

from pathlib import Path

from paramill.text.numbers import number
from paramill.formats.rows import Bad
from paramill.formats.reading import fields
from paramill.errors import InputError

NAME = "simlex"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "SimLex-999's TSV (header: word1, word2, POS, SimLex999, ...)"
COLUMNS = ("word1", "word2", "SimLex999")


def read(path: str | Path, max_line_bytes: int = 65536) -> list[tuple[str, str, float]]:
    """(word1, word2, score) of every pair, the words lower-cased; blank lines skipped."""
    rows: list[tuple[str, str, float]] = []
    columns: tuple[int, ...] = ()
    for item in fields(str(path), max_line_bytes):
        if isinstance(item, Bad):
            raise InputError(path, item.line_no, item.detail)
        line_no, f = item
        if line_no == 1:
            if missing := [c for c in COLUMNS if c not in f]:
                raise InputError(path, 1, f"header must name word1, word2 and SimLex999 (no "
                                          f"{', '.join(missing)}), not {f[:4]}")
            columns = tuple(f.index(c) for c in COLUMNS)
            continue
        if not "".join(f).strip():
            continue
        score = number(f[columns[2]]) if len(f) > max(columns) else None
        if score is None:
            raise InputError(path, line_no, "expected word1, word2 and a SimLex999 score: "
                                            f"{chr(9).join(f)[:80]!r}")
        rows.append((f[columns[0]].lower(), f[columns[1]].lower(), score))
    return rows
