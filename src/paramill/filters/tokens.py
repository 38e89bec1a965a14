"""The token stage: each candidate shard is tokenised once, for every text filter.

Length, overlap and BLEU all start from the same tokens (:data:`paramill.text.TOKEN_PATTERN`),
and tokenising (a regular expression over both sides, then hashing every token) was most of
each job's time. The ``tokens`` rule runs this once per shard and writes, row for row with
the candidate table, what those filters need:

- ``length_ref``, ``length_cand``: tokens of each side (what the length filter writes);
- ``tokens_ref``, ``tokens_cand``: tokens of each lower-cased side;
- ``match_1`` … ``match_4``: clipped n-grams the lower-cased sides share, per order
  (:func:`paramill.filters.ngrams.batch_matches`, exactly as a filter computes them).

The stage has no settings, so a changed filter setting still re-scores only that filter. A
filter reads the counts when its settings are covered (``lowercase: true`` and orders up to
:data:`ORDERS`' last, as the defaults are) and counts from the text otherwise; the scores are
the same either way (a test holds it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from paramill.filters.base import Batch
from paramill.io import TableWriter, atomic_output, iter_parquet_batches, parquet_rows
from paramill.progress import progress
from paramill.provenance import Run, prov_path

#: n-gram orders whose matches are stored: BLEU's four (overlap's default is 1-3)
ORDERS = (1, 2, 3, 4)
#: the table the stage writes
TOKENS = pa.schema(
    [pa.field("pair_id", pa.string(), nullable=False), pa.field("candidate_id", pa.string(), nullable=False),
     pa.field("length_ref", pa.int32()), pa.field("length_cand", pa.int32()),
     pa.field("tokens_ref", pa.int64()), pa.field("tokens_cand", pa.int64())]
    + [pa.field(f"match_{n}", pa.float64()) for n in ORDERS])


def count(frame: pl.DataFrame, threads: int | None = None) -> pa.Table:
    """The token counts of a batch of candidates (``pair_id``, ``candidate_id``, ``en_ref``,
    ``candidate``): what :class:`~paramill.filters.base.Batch` computes from the text."""
    batch = Batch(frame, threads)
    length_ref, length_cand = batch.lengths()
    shared, len_ref, len_cand = batch.matches(ORDERS[-1], lowercase=True)
    columns: dict[str, Any] = {
        "pair_id": frame.get_column("pair_id").to_arrow(),
        "candidate_id": frame.get_column("candidate_id").to_arrow(),
        "length_ref": pa.array(length_ref, pa.int32()), "length_cand": pa.array(length_cand, pa.int32()),
        "tokens_ref": pa.array(len_ref, pa.int64()), "tokens_cand": pa.array(len_cand, pa.int64())}
    columns.update({f"match_{n}": pa.array(shared[n], pa.float64()) for n in ORDERS})
    return pa.table(columns, schema=TOKENS)


def count_shard(candidates: str | Path, out: str | Path, threads: int = 1, batch_size: int = 20000,
                rule: str = "tokens") -> dict[str, Any]:
    """Write the token counts of every candidate of one shard to ``out`` (same rows, same
    order). Atomic, with provenance."""
    n_in = parquet_rows([candidates])
    run = Run(rule=rule, params={"orders": list(ORDERS)}, inputs=[candidates])
    start = time.perf_counter()
    rows = 0
    with atomic_output(out, prov_path(out)) as (tmp, tmp_prov):
        writer = TableWriter(tmp, TOKENS)
        bar = progress(f"tokens {Path(candidates).name}", unit="pairs", total=n_in)
        for batch in iter_parquet_batches([candidates], batch_size=batch_size,
                                          columns=["pair_id", "candidate_id", "en_ref", "candidate"]):
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            table = count(frame, threads)
            writer.write(table)
            rows += table.num_rows
            bar.update(table.num_rows)
        bar.close()
        writer.close()
        seconds = time.perf_counter() - start
        run.write({out: tmp}, {out: tmp_prov}, rows_in=n_in, rows_out=rows,
                  extra={"seconds": round(seconds, 3)})
    return {"rows": rows, "seconds": round(seconds, 3)}


def aligned(frames: Iterator[pl.DataFrame], tokens: str | Path, candidates: str | Path
            ) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]:
    """Each candidate batch with the rows of the token table that belong to it (the two
    files' row groups differ, so batches are cut to match). A token table that is not the
    candidates' row for row (another shard, or stale) is an error naming both files."""
    stream = iter_parquet_batches([tokens], batch_size=65536)
    buffer = pl.DataFrame(schema=pl.from_arrow(TOKENS.empty_table()).schema)
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
            raise ValueError(f"{tokens}: not the token counts of {candidates} (its rows differ; "
                             "re-run the tokens rule)")
        yield frame, part
    if buffer.height or next(stream, None) is not None:
        raise ValueError(f"{tokens}: more rows than {candidates}; re-run the tokens rule")


def lengths(counts: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    return counts["length_ref"].to_numpy(), counts["length_cand"].to_numpy()


def matches(counts: pl.DataFrame, max_order: int) -> tuple[dict[int, np.ndarray], np.ndarray, np.ndarray]:
    """What :func:`paramill.filters.ngrams.batch_matches` gives (lower-cased, orders
    1..``max_order`` <= 4), from the stored counts."""
    return ({n: counts[f"match_{n}"].to_numpy() for n in range(1, max_order + 1)},
            counts["tokens_ref"].to_numpy(), counts["tokens_cand"].to_numpy())
