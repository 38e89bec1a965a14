"""Summary of back-translation over all candidate shards (streamed, never a full read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from paramill.io.tableread import iter_parquet_batches
from paramill.io.jsonfiles import write_json
from paramill.run.job import output_job
from paramill.provenance import Run


def summarize(candidate_files: list[str | Path], batch_rows: int = 65_536) -> dict[str, Any]:
    """Counts and means over candidate tables, read a record batch at a time (page checksums
    verified) into running sums: memory does not grow with the corpus. ``sources``: those
    with a candidate, counted by their rank-1 candidate (each has one; counting distinct ids
    held every id in memory, gigabytes for a CzEng-sized corpus)."""
    sums = dict.fromkeys(("candidates", "fwd_nll", "fwd_nll_n", "best", "identical", "lower",
                          "empty", "best_fwd_nll", "best_fwd_nll_n", "ratio", "ratio_n"), 0.0)
    columns = ["rank", "en_ref", "candidate", "fwd_nll"]
    for batch in iter_parquet_batches(candidate_files, batch_rows, columns):
        rank, ref, cand, nll = (batch.column(c) for c in columns)
        sums["candidates"] += batch.num_rows
        _add_mean(sums, "fwd_nll", nll)
        best = pc.equal(rank, 1)
        ref, cand, nll = (pc.filter(c, best) for c in (ref, cand, nll))
        sums["best"] += len(ref)
        sums["identical"] += _true(pc.equal(cand, ref))
        sums["lower"] += _true(pc.equal(pc.utf8_lower(cand), pc.utf8_lower(ref)))
        sums["empty"] += _true(pc.equal(pc.utf8_trim_whitespace(cand), ""))
        _add_mean(sums, "best_fwd_nll", nll)
        _add_mean(sums, "ratio", pc.divide(pc.cast(pc.utf8_length(cand), pa.float64()),
                                           pc.cast(pc.utf8_length(ref), pa.float64())))
    sums["identical_n"] = sums["lower_n"] = sums["empty_n"] = sums["best"]
    first = {"identical_to_reference": _mean(sums, "identical"), "lowercase_identical": _mean(sums, "lower"),
             "empty": _mean(sums, "empty"), "mean_fwd_nll_best": _mean(sums, "best_fwd_nll"),
             "mean_chars_ratio": _mean(sums, "ratio")}
    return {"candidates": int(sums["candidates"]), "sources": int(sums["best"]),
            "mean_fwd_nll": _mean(sums, "fwd_nll"),
            "best": {k: None if v is None else round(v, 6) for k, v in first.items()},
            "shards": len(candidate_files)}


def _true(mask: pa.Array) -> int:
    return pc.sum(mask).as_py() or 0


def _add_mean(sums: dict[str, float], key: str, values: pa.Array) -> None:
    """Add the non-null ``values`` to the running sum and count of ``key``."""
    sums[key] += pc.sum(values).as_py() or 0.0
    sums[f"{key}_n"] += len(values) - values.null_count


def _mean(sums: dict[str, float], key: str) -> float | None:
    """The mean of ``key``'s values, None where there were none (as polars' mean)."""
    return sums[key] / sums[f"{key}_n"] if sums[f"{key}_n"] else None


def write_summary(candidate_files: list[str | Path], out: str | Path,
                  rule: str = "backtranslation_stats") -> dict[str, Any]:
    run = Run(rule=rule, params={}, inputs=list(candidate_files))
    summary = summarize(candidate_files)
    with output_job(run, out, rows_in=summary["sources"]) as job:
        write_json(job.paths[0], summary)
        job.rows_out = summary["candidates"]
    return summary
