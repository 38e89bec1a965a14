"""Plots registered in the Snakemake report (PNG, matplotlib's non-interactive backend)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from paramill.run.job import output_job  # noqa: E402
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
