"""Summary of back-translation over all candidate shards (a lazy scan, never a full read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from paramill.io import write_json
from paramill.job import output_job
from paramill.provenance import Run


def summarize(candidate_files: list[str | Path]) -> dict[str, Any]:
    frame = pl.scan_parquet([str(p) for p in candidate_files])
    best = frame.filter(pl.col("rank") == 1)
    totals = frame.select(candidates=pl.len(), sources=pl.col("pair_id").n_unique(),
                          mean_fwd_nll=pl.col("fwd_nll").mean()).collect().row(0, named=True)
    first = best.select(
        identical_to_reference=(pl.col("candidate") == pl.col("en_ref")).mean(),
        lowercase_identical=(pl.col("candidate").str.to_lowercase()
                             == pl.col("en_ref").str.to_lowercase()).mean(),
        empty=(pl.col("candidate").str.strip_chars() == "").mean(),
        mean_fwd_nll_best=pl.col("fwd_nll").mean(),
        mean_chars_ratio=(pl.col("candidate").str.len_chars()
                          / pl.col("en_ref").str.len_chars()).mean(),
    ).collect().row(0, named=True)
    return {**totals, "best": {k: (round(v, 6) if isinstance(v, float) else v)
                               for k, v in first.items()},
            "shards": len(candidate_files)}


def write_summary(candidate_files: list[str | Path], out: str | Path,
                  rule: str = "backtranslation_stats") -> dict[str, Any]:
    run = Run(rule=rule, params={}, inputs=list(candidate_files))
    summary = summarize(candidate_files)
    with output_job(run, out, rows_in=summary["sources"]) as job:
        write_json(job.paths[0], summary)
        job.rows_out = summary["candidates"]
    return summary
