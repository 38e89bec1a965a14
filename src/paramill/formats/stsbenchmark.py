"""The STS Benchmark's ``sts-{train,dev,test}.csv``: tab-separated, fields 5-7 the score, s1
and s2, some lines with stray extra fields; read without quoting. Scores are 0-5, and no field
up to the score is empty: a line otherwise is an error (:func:`paramill.fields.gold_score`)."""

from __future__ import annotations

from collections.abc import Iterator

from paramill.text.numbers import gold_score
from paramill.formats.rows import Bad, Scored
from paramill.formats.reading import fields

NAME = "stsbenchmark"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "STS Benchmark `sts-*.csv` (fields 5-7: score, s1, s2)"
SCALE = (0.0, 5.0)


def sts(path: str, max_line_bytes: int = 65536) -> Iterator[Scored | Bad]:
    for item in fields(path, max_line_bytes):
        if isinstance(item, Bad):
            yield item
            continue
        line_no, f = item
        score = gold_score(path, line_no, f, 4, NAME, SCALE)
        yield (Scored(f[5], f[6], score) if len(f) > 6 else Scored(None, None, None))
