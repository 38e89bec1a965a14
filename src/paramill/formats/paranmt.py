"""ParaNMT-50M as released (Wieting and Gimpel 2018): ``reference \\t paraphrase \\t score``,
one pair a line; the score is kept as given."""

from __future__ import annotations

from collections.abc import Iterator

from paramill import fields as strict
from paramill.formats import Candidate, FileSpec, LineStream, bad_candidate, candidate_fields

NAME = "paranmt"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "`reference \\t paraphrase \\t score` (the ParaNMT-50M release)"


Spec = FileSpec


def pairs(spec: Spec, method: str = NAME, max_line_bytes: int = 65536, batch_rows: int = 0
          ) -> Iterator[Candidate]:
    path = spec.path
    for line_no, columns in candidate_fields(LineStream(path, max_line_bytes), method):
        if isinstance(columns, Candidate):
            yield columns
        elif len(columns) != 3:
            yield bad_candidate(line_no, columns, method, path, "column_count",
                                f"expected 3 tab-separated columns, found {len(columns)}")
        elif (score := strict.number(columns[2])) is None:
            yield bad_candidate(line_no, columns, method, path, "bad_score",
                                f"column 3: score {columns[2][:40]!r} is not a finite decimal "
                                "number")
        else:
            yield Candidate(line_no, columns[0], columns[1], method, 1, score, source_file=path)
