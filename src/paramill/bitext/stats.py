"""Corpus-level bitext statistics gathered from the per-corpus clean stats."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl

from paramill.run.job import output_job
from paramill.io.jsonfiles import write_json
from paramill.io.jsonfiles import COUNT, COUNTS, TEXT, read_json_as
from paramill.provenance import Run


_TOKENS = {"type": ["number", "null"], "minimum": 0}
#: a corpus's clean stats (`paramill bitext clean --stats`), as far as `bitext stats` reads them
CLEAN_STATS = {"type": "object", "required": ["corpus", "rows_in", "kept", "rejected", "by_input_shard",
                                              "shards", "avg_tokens_cs", "avg_tokens_en"],
               "properties": {"corpus": TEXT, "rows_in": COUNT, "kept": COUNT, "rejected": COUNTS,
                              "by_input_shard": {"type": "object", "additionalProperties": COUNTS},
                              "shards": {"type": ["object", "array"]},
                              "avg_tokens_cs": _TOKENS, "avg_tokens_en": _TOKENS}}


def summarize(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals and per-corpus figures; checks that every corpus (and each of its input
    shards) adds up."""
    reasons: Counter[str] = Counter()
    corpora = {}
    weighted = {"cs": 0.0, "en": 0.0}
    for s in stats:
        if s["rows_in"] != s["kept"] + sum(s["rejected"].values()):
            raise ValueError(f"corpus {s['corpus']}: rows_in != kept + rejected")
        if sum(sum(c.values()) for c in s["by_input_shard"].values()) != s["rows_in"]:
            raise ValueError(f"corpus {s['corpus']}: per-shard outcomes do not add up to rows_in")
        reasons.update(s["rejected"])
        corpora[s["corpus"]] = {k: s[k] for k in ("rows_in", "kept", "rejected",
                                                   "avg_tokens_cs", "avg_tokens_en")}
        corpora[s["corpus"]]["shards"] = len(s["shards"])
        for side in ("cs", "en"):
            weighted[side] += (s[f"avg_tokens_{side}"] or 0) * s["kept"]
    rows_in = sum(s["rows_in"] for s in stats)
    kept = sum(s["kept"] for s in stats)
    return {
        "rows_in": rows_in,
        "kept": kept,
        "rejected": dict(sorted(reasons.items())),
        "rejected_total": sum(reasons.values()),
        "kept_share": round(kept / rows_in, 6) if rows_in else None,
        "shards": sum(len(s["shards"]) for s in stats),
        "avg_tokens_cs": round(weighted["cs"] / kept, 3) if kept else None,
        "avg_tokens_en": round(weighted["en"] / kept, 3) if kept else None,
        "corpora": corpora,
    }


def outcomes_table(stats: list[dict[str, Any]]) -> pl.DataFrame:
    """Long table ``corpus, shard, outcome, rows``: per input shard, rows kept and rows
    rejected per reason (``(unreadable lines)`` holds the lines ingest could not read)."""
    rows = [{"corpus": s["corpus"], "shard": shard, "outcome": outcome, "rows": n}
            for s in stats for shard, counts in s["by_input_shard"].items()
            for outcome, n in counts.items()]
    return pl.DataFrame(rows, schema={"corpus": pl.String, "shard": pl.String,
                                      "outcome": pl.String, "rows": pl.Int64})


def write_stats(stats_files: list[str | Path], out_json: str | Path, out_tsv: str | Path,
                rule: str = "bitext_stats") -> dict[str, Any]:
    stats = [read_json_as(p, CLEAN_STATS, "a corpus's clean stats (`paramill bitext clean --stats`)")
             for p in stats_files]
    summary = summarize(stats)
    run = Run(rule=rule, params={}, inputs=list(stats_files))
    outs = [Path(out_json), Path(out_tsv)]
    with output_job(run, *outs, rows_in=summary["rows_in"]) as job:
        write_json(job.paths[0], summary)
        outcomes_table(stats).write_csv(job.paths[1], separator="\t")
        job.rows_out = summary["kept"]
    return summary
