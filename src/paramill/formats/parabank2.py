"""ParaBank 2 as released (Hu et al. 2019): ``score \\t reference \\t paraphrase_1 ...
paraphrase_k`` (k <= 5, best first): one candidate a paraphrase, ranked 1..k, each carrying
the line's score."""

from __future__ import annotations

from collections.abc import Iterator

from paramill.text import numbers as strict
from paramill.formats.rows import Candidate, FileSpec
from paramill.formats.reading import bad_candidate, bad_score, candidates_by_line

NAME = "parabank2"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = ("`score \\t reference \\t paraphrase ...` (up to five, ranked; the ParaBank 2 "
               "release)")
#: ParaBank 2 lists at most this many paraphrases after the reference
MAX_PARAPHRASES = 5


Spec = FileSpec


def pairs(spec: Spec, method: str = NAME, max_line_bytes: int = 65536, batch_rows: int = 0
          ) -> Iterator[Candidate]:
    def parse(line_no: int, columns: list[str]) -> Iterator[Candidate]:
        paraphrases = [p for p in columns[2:] if p != ""]
        if len(columns) < 3 or not paraphrases or len(columns) > 2 + MAX_PARAPHRASES:
            yield bad_candidate(line_no, columns, method, spec.path, "column_count",
                                f"expected a score, a reference and 1 to {MAX_PARAPHRASES} "
                                f"paraphrases, found {len(columns)} columns")
        elif (score := strict.number(columns[0])) is None:
            yield bad_score(line_no, columns, 1, columns[0], method, spec.path)
        else:
            for rank, paraphrase in enumerate(paraphrases, 1):
                yield Candidate(line_no, columns[1], paraphrase, method, rank, score,
                                source_file=spec.path)

    return candidates_by_line(spec.path, method, max_line_bytes, parse)
