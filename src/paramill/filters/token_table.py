"""The token table's contract: what the ``tokens`` stage writes (:data:`TOKENS`, one row per
candidate, same order) and how filters read it back (:func:`aligned`, :func:`lengths`,
:func:`matches`). A leaf: it imports nothing from the filters, so :mod:`paramill.filters.base`
and the stage (:mod:`paramill.filters.tokens`) both import it without a cycle."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from paramill.io.arrowcols import empty_table
from paramill.io.tableread import iter_parquet_batches
from paramill.io.tableread import open_parquet

#: n-gram orders whose matches are stored: BLEU's four (overlap's default is 1-3)
ORDERS = (1, 2, 3, 4)
#: the table the stage writes
TOKENS = pa.schema(
    [pa.field("pair_id", pa.string(), nullable=False), pa.field("candidate_id", pa.string(), nullable=False),
     pa.field("length_ref", pa.int32()), pa.field("length_cand", pa.int32()),
     pa.field("tokens_ref", pa.int64()), pa.field("tokens_cand", pa.int64())]
    + [pa.field(f"match_{n}", pa.float64()) for n in ORDERS])


def aligned(frames: Iterator[pl.DataFrame], table: str | Path, candidates: str | Path,
            what: str = "the token counts", rerun: str = "the tokens rule"
            ) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]:
    """Each candidate batch with the rows of ``table`` that belong to it: a table written row
    for row with the candidates (the token stage's; a filter's scores, ``what`` it holds),
    whose row groups differ from theirs, so batches are cut to match. A table that is not the
    candidates' row for row (another shard, or stale) is an error naming both files and
    the rule to ``rerun``."""
    stream = iter_parquet_batches([table], batch_size=65536)
    buffer = pl.from_arrow(empty_table(open_parquet(table).schema_arrow))
    assert isinstance(buffer, pl.DataFrame)
    for frame in frames:
        while buffer.height < frame.height:
            batch = next(stream, None)
            if batch is None:
                break
            buffer = pl.concat([buffer, pl.from_arrow(batch)])
        part, buffer = buffer.head(frame.height), buffer.slice(frame.height)
        if part.height != frame.height or not (
                part.get_column("pair_id").equals(frame.get_column("pair_id"))
                and part.get_column("candidate_id").equals(frame.get_column("candidate_id"))):
            raise ValueError(f"{table}: not {what} of {candidates} (its rows differ; re-run {rerun})")
        yield frame, part
    if buffer.height or next(stream, None) is not None:
        raise ValueError(f"{table}: more rows than {candidates}; re-run {rerun}")


def lengths(counts: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    return counts["length_ref"].to_numpy(), counts["length_cand"].to_numpy()


def matches(counts: pl.DataFrame, max_order: int) -> tuple[dict[int, np.ndarray], np.ndarray, np.ndarray]:
    """What :func:`paramill.filters.ngrams.batch_matches` gives (lower-cased, orders
    1..``max_order`` <= 4), from the stored counts."""
    return ({n: counts[f"match_{n}"].to_numpy() for n in range(1, max_order + 1)},
            counts["tokens_ref"].to_numpy(), counts["tokens_cand"].to_numpy())
