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

from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from paramill.io.arrowcols import column
from paramill.filters.base import Batch
from paramill.filters.token_table import ORDERS, TOKENS
from paramill.io.tableread import iter_parquet_batches, parquet_rows
from paramill.run.job import table_job
from paramill.provenance import Run

def count(frame: pl.DataFrame, threads: int | None = None) -> pa.Table:
    """The token counts of a batch of candidates (``pair_id``, ``candidate_id``, ``en_ref``,
    ``candidate``): what :class:`~paramill.filters.base.Batch` computes from the text."""
    batch = Batch(frame, threads)
    length_ref, length_cand = batch.lengths()
    shared, len_ref, len_cand = batch.matches(ORDERS[-1], lowercase=True)
    columns: dict[str, Any] = {
        "pair_id": frame.get_column("pair_id").to_arrow(),
        "candidate_id": frame.get_column("candidate_id").to_arrow(),
        "length_ref": column(length_ref, pa.int32()), "length_cand": column(length_cand, pa.int32()),
        "tokens_ref": column(len_ref, pa.int64()), "tokens_cand": column(len_cand, pa.int64())}
    columns.update({f"match_{n}": column(shared[n], pa.float64()) for n in ORDERS})
    return pa.table(columns, schema=TOKENS)


def count_shard(candidates: str | Path, out: str | Path, threads: int = 1, batch_size: int = 20000,
                rule: str = "tokens") -> dict[str, Any]:
    """Write the token counts of every candidate of one shard to ``out`` (same rows, same
    order). Atomic, with provenance."""
    n_in = parquet_rows([candidates])
    run = Run(rule=rule, params={"orders": list(ORDERS)}, inputs=[candidates])
    with table_job(run, out, TOKENS, f"tokens {Path(candidates).name}", n_in) as job:
        for batch in iter_parquet_batches([candidates], batch_size=batch_size,
                                          columns=["pair_id", "candidate_id", "en_ref", "candidate"]):
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            job.write(count(frame, threads))
    return {"rows": job.rows, "seconds": job.seconds}


