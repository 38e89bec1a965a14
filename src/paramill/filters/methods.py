"""``paramill filters by-method``: every score column per candidate ``method`` (an MT system of a
``references`` corpus, ``paranmt``, ``beam``, ``sample`` ...), before selection: how many
candidates, each column's mean and standard deviation (a table), and each column's
distribution per method (box plots on a bounded, seeded sample per method).

Streams the candidate shards one at a time; memory holds the running sums and at most
``sample`` values per method and column.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl

from paramill.filters.scored import group_scores, scored_shard, shard_key
from paramill.io.jsonfiles import write_json
from paramill.run.job import output_job
from paramill.run.progress import progress
from paramill.provenance import Run


class _Column:
    """Running count, sum and sum of squares, and a reservoir sample, of one column."""

    def __init__(self, sample: int, rng: random.Random):
        self.n, self.total, self.squares, self.seen = 0, 0.0, 0.0, 0
        self.sample: list[float] = []
        self.size, self.rng = sample, rng

    def add(self, values: list[float]) -> None:
        for v in values:
            self.n += 1
            self.total += v
            self.squares += v * v
            self.seen += 1
            if len(self.sample) < self.size:
                self.sample.append(v)
            else:
                j = self.rng.randrange(self.seen)
                if j < self.size:
                    self.sample[j] = v

    def summary(self) -> dict[str, float | None]:
        if not self.n:
            return {"mean": None, "std": None}
        mean = self.total / self.n
        var = max(0.0, self.squares / self.n - mean * mean)
        return {"mean": round(mean, 6), "std": round(math.sqrt(var), 6)}


def by_method(candidate_files: list[str | Path], score_files: list[str | Path],
              out_tsv: str | Path, out_json: str | Path, out_png: str | Path,
              sample: int = 5000, seed: int = 13, rule: str = "score_by_method") -> dict[str, Any]:
    """Write the per-method table (TSV, JSON) and box plots (PNG); returns the JSON."""
    by_key, directions = group_scores(candidate_files, score_files)
    columns = [c for c in directions if c != "label"]
    rng = random.Random(seed)
    stats: dict[str, dict[str, _Column]] = defaultdict(
        lambda: {c: _Column(sample, rng) for c in columns})
    counts: dict[str, int] = defaultdict(int)
    run = Run(rule=rule, params={"sample": sample, "seed": seed},
              inputs=[*candidate_files, *score_files])
    bar = progress("scores by method", unit="shards", total=len(candidate_files))
    for cand in candidate_files:
        frame = scored_shard(cand, by_key.get(shard_key(cand), []), ["pair_id", "candidate_id", "method"])
        for (method,), part in frame.group_by("method", maintain_order=True):
            counts[method] += part.height
            for c in columns:
                if c in part.columns:
                    values = part.get_column(c).drop_nulls().cast(pl.Float64)
                    stats[method][c].add(values.filter(values.is_finite()).to_list())
        bar.update(1)
    bar.close()
    methods = sorted(counts)
    result = {"columns": {c: directions[c].value for c in columns},
              "methods": {m: {"candidates": counts[m],
                              **{c: stats[m][c].summary() for c in columns}} for m in methods}}
    total = sum(counts.values())
    with output_job(run, out_tsv, out_json, out_png, rows_in=total, each=True) as job:
        tmp_tsv, tmp_json, tmp_png = job.paths
        with open(tmp_tsv, "w", encoding="utf-8") as fh:
            fh.write("\t".join(["method", "candidates", *[f"{c}_mean" for c in columns]]) + "\n")
            for m in methods:
                means = [result["methods"][m][c]["mean"] for c in columns]
                fh.write("\t".join([m, str(counts[m]),
                                    *["" if v is None else f"{v:.4f}" for v in means]]) + "\n")
        write_json(tmp_json, result)
        _plot(methods, columns, stats, tmp_png)
        job.rows_out = len(methods)
    return result


def _plot(methods: list[str], columns: list[str], stats, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(1, len(columns))
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    width = max(4.2, 0.55 * len(methods) + 1.5)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, 3.4 * rows), squeeze=False)
    for ax, column in zip(axes.flat, columns):
        data = [stats[m][column].sample or [math.nan] for m in methods]
        ax.boxplot(data, showfliers=False)
        ax.set_xticks(range(1, len(methods) + 1), methods, rotation=45, ha="right", fontsize=8)
        ax.set_title(column, fontsize=10)
    for ax in list(axes.flat)[len(columns):]:
        ax.axis("off")
    fig.suptitle("Score distributions per method (before selection)")
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
