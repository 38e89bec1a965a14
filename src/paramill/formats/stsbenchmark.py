"""The STS Benchmark's ``sts-{train,dev,test}.csv``: tab-separated, fields 5-7 the score, s1
and s2, some lines with stray extra fields; read without quoting."""

from __future__ import annotations

from collections.abc import Iterator

from paramill.formats import Bad, Scored, fields

NAME = "stsbenchmark"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = "STS Benchmark `sts-*.csv` (fields 5-7: score, s1, s2)"


def sts(path: str, max_line_bytes: int = 65536) -> Iterator[Scored | Bad]:
    for item in fields(path, max_line_bytes):
        if isinstance(item, Bad):
            yield item
            continue
        f = item[1]
        yield (Scored(f[5], f[6], f[4]) if len(f) > 6 else Scored(None, None, None))
