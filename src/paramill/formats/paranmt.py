"""ParaNMT-50M as released (Wieting and Gimpel 2018): ``reference \\t paraphrase \\t score``,
one pair a line; the score is kept as given."""

from __future__ import annotations

from collections.abc import Iterator

from paramill.text import numbers as strict
from paramill.formats.rows import Candidate, FileSpec
from paramill.formats.reading import bad_candidate, bad_score, candidates_by_line

NAME = "paranmt"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "`reference \\t paraphrase \\t score` (the ParaNMT-50M release)"


Spec = FileSpec


def pairs(spec: Spec, method: str = NAME, max_line_bytes: int = 65536, batch_rows: int = 0
          ) -> Iterator[Candidate]:
    def parse(line_no: int, columns: list[str]) -> Iterator[Candidate]:
        if len(columns) != 3:
            yield bad_candidate(line_no, columns, method, spec.path, "column_count",
                                f"expected 3 tab-separated columns, found {len(columns)}")
        elif (score := strict.number(columns[2])) is None:
            yield bad_score(line_no, columns, 3, columns[2], method, spec.path)
        else:
            yield Candidate(line_no, columns[0], columns[1], method, 1, score,
                            source_file=spec.path)

    return candidates_by_line(spec.path, method, max_line_bytes, parse)
