"""The Twitter branch's growth: tweets, candidate pairs and accepted paraphrases per month,
as a plot (the table is written by ``paramill twitter growth``)."""

from __future__ import annotations

from pathlib import Path


def growth_plot(rows: list[dict], path: str | Path) -> None:
    """Tweets, candidate pairs and accepted paraphrases per month (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
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
