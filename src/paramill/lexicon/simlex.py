"""SimLex-999 evaluation of a lexicon: Spearman's rho x100 of each score against the gold
similarity, an unseen pair scoring 0, both orderings (u, v) and (v, u) averaged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from paramill.formats import simlex as simlex_format
from paramill.io import write_json
from paramill.job import output_job
from paramill.provenance import Run


def evaluate(lexicon_tsv: str | Path, simlex: str | Path, out_tsv: str | Path, out_json: str | Path,
             rule: str = "lexicon_simlex") -> dict[str, Any]:
    from paramill.correlation import spearman

    run = Run(rule=rule, params={}, inputs=[lexicon_tsv, simlex])
    gold = simlex_format.read(simlex)
    wanted = {w for a, b, _ in gold for w in (a, b)}
    lex = (pl.scan_csv(lexicon_tsv, separator="\t", quote_char=None, schema_overrides={"u": pl.String, "v": pl.String})
           .filter(pl.col("u").is_in(wanted) & pl.col("v").is_in(wanted)).collect())
    scores = {(u, v): (c, a) for u, v, c, a in lex.select("u", "v", "pmi_cross", "pmi_adjusted").iter_rows()}
    rows, seen = [], 0
    results = []
    columns = {"pmi_cross": 0, "pmi_adjusted": 1}
    per_pair = []
    for a, b, g in gold:
        found = [scores.get((a, b)), scores.get((b, a))]
        if any(found):
            seen += 1
        per_pair.append((a, b, g, [sum((f[i] if f else 0.0) for f in found) / 2 for i in (0, 1)]))
    for name, i in columns.items():
        rho = spearman([g for _, _, g, _ in per_pair], [s[i] for *_, s in per_pair])
        results.append({"score": name, "spearman": round(100 * float(rho), 2) if rho == rho else None,
                        "pairs": len(gold), "seen": seen, "coverage": round(seen / len(gold), 4) if gold else 0.0})
        rows.append(results[-1])
    with output_job(run, out_tsv, out_json, rows_in=len(gold), each=True) as job:
        tsv, json_path = job.paths
        pl.DataFrame(rows).write_csv(tsv, separator="\t")
        write_json(json_path, {"simlex": str(simlex), "results": results})
        job.rows_out = len(results)
    return {"results": results}
