"""Plots registered in the Snakemake report (PNG, matplotlib's non-interactive backend)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from paramill.job import output_job  # noqa: E402
from paramill.provenance import Run  # noqa: E402


def outcomes_plot(tsv: str | Path, png: str | Path, rule: str = "plot_bitext_outcomes") -> int:
    """Stacked bars: rows kept and rejected per reason, per input shard of each corpus.

    Reads the ``corpus, shard, outcome, rows`` table of ``paramill bitext stats``.
    Returns the number of bars drawn.
    """
    run = Run(rule=rule, params={}, inputs=[tsv])
    table = pl.read_csv(tsv, separator="\t")
    table = table.with_columns(bar=pl.col("corpus") + " / " + pl.col("shard").str.replace(r"\.parquet$", ""))
    wide = table.pivot(on="outcome", index="bar", values="rows", aggregate_function="sum").fill_null(0)
    wide = wide.sort("bar")
    outcomes = [c for c in wide.columns if c != "bar"]
    # kept first, then reasons by total size
    outcomes.sort(key=lambda c: (c != "kept", -int(wide[c].sum())))
    bars = wide["bar"].to_list()
    fig, (ax_all, ax_rej) = plt.subplots(2, 1, figsize=(max(6, 0.5 * len(bars) + 3), 8),
                                         sharex=True)
    colours = plt.get_cmap("tab20").colors
    for ax, names, title in ((ax_all, outcomes, "all rows"),
                             (ax_rej, [o for o in outcomes if o != "kept"], "rejected rows by reason")):
        bottom = [0] * len(bars)
        for name in names:
            values = wide[name].to_list()
            ax.bar(bars, values, bottom=bottom, label=name,
                   color=colours[outcomes.index(name) % len(colours)])
            bottom = [b + v for b, v in zip(bottom, values)]
        ax.set_ylabel("rows")
        ax.set_title(title)
    ax_all.legend(fontsize=8, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax_rej.legend(fontsize=8, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax_rej.tick_params(axis="x", labelrotation=60, labelsize=8)
    fig.suptitle("Bitext ingest and cleaning outcomes per input shard")
    fig.tight_layout()
    with output_job(run, png) as job:
        (tmp,) = job.paths
        fig.savefig(tmp, format="png", dpi=110)
        job.rows_in = table.height
        job.rows_out = len(bars)
    plt.close(fig)
    return len(bars)


def score_histograms(sample: pl.DataFrame, columns: list[str], path: str | Path,
                     title: str = "") -> int:
    """One histogram per score column of ``sample`` (a random sample of scored candidates),
    written to ``path`` (PNG). Returns the number of panels. The caller writes provenance."""
    columns = [c for c in columns if c in sample.columns]
    n = max(1, len(columns))
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, name in zip(axes.flat, columns):
        values = sample.get_column(name).drop_nulls().cast(pl.Float64)
        values = values.filter(values.is_finite()).to_list()
        ax.hist(values, bins=40, color="#4878a8")
        ax.set_title(f"{name} (n={len(values)})", fontsize=10)
        ax.set_ylabel("candidates")
    for ax in list(axes.flat)[len(columns):]:
        ax.axis("off")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
    return len(columns)


def diversity_plot(result: dict, path: str | Path) -> None:
    """Bars per rank: 1 − BLEU and bag-of-pieces IoU against the reference, length ratio."""
    rows = result["by_rank"]
    ranks = [r["rank"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    for ax, key, title in zip(axes, ("one_minus_bleu", "bag_iou", "length_ratio"),
                              ("1 − BLEU vs reference", "bag-of-pieces IoU", "length ratio")):
        ax.bar([str(r) for r in ranks], [r[key] for r in rows], color="#4878a8")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("rank")
    if result.get("collective"):
        fig.suptitle(f"between a source's own paraphrases: 1 − BLEU {result['collective']['one_minus_bleu']}, "
                     f"IoU {result['collective']['bag_iou']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)


def growth_plot(rows: list[dict], path: str | Path) -> None:
    """Tweets, candidate pairs and accepted paraphrases per month (log scale)."""
    months = [r["month"] for r in rows]
    fig, ax = plt.subplots(figsize=(max(5, 0.8 * len(months) + 3), 3.5))
    for key, colour in (("tweets", "#999999"), ("pairs", "#4878a8"), ("accepted", "#d1495b")):
        ax.plot(months, [max(r[key], 0.5) for r in rows], marker="o", label=key, color=colour)
    ax.set_yscale("log")
    ax.set_ylabel("per month")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
