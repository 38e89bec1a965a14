"""The report's first page: what ran, on what, and what came out — read from the
provenance records of every output (and the headline figures of the result files)."""

from __future__ import annotations

import datetime as dt
import html
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from paramill.io.jsonfiles import read_json
from paramill.provenance import prov_path

MAX_INPUTS = 40


def _headline(path: Path) -> str | None:
    """One line of the figures a result file holds, for the files that have some; None when
    it has none or they are missing (a summary line never stops the report)."""
    try:
        return _figures(path.name, json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None


def _figures(name: str, data: dict[str, Any]) -> str | None:
    if name == "selection.json":  # and what each step dropped (the reasons, in order)
        steps = data.get("steps", [])
        dropped = [f"{b['step']} {a['pairs'] - b['pairs']:,}" for a, b in zip(steps, steps[1:])
                   if a["pairs"] > b["pairs"]]
        return f"{data['rows']:,} pairs released" + (f"; dropped by {', '.join(dropped)}" if dropped else "")
    if name == "sts.json":
        return "STS Pearson ×100: " + ", ".join(f"{d['dataset']} {d['pearson']}" for d in data["datasets"])
    if name == "simlex.json":
        scored = [r for r in data["results"] if r.get("spearman") is not None]
        if not scored:
            return "SimLex-999: no pair of the lexicon's words to score"
        best = max(scored, key=lambda r: r["spearman"])
        return f"SimLex-999 Spearman ×100 {best['spearman']} ({best['score']}, coverage {best['coverage']})"
    if name == "paraid.json":
        from paramill.twitter.identify.featurise import MODELS

        cv = data["evaluations"][0]
        models = [m for m in MODELS if m in cv]
        thr = data.get("threshold", {})
        return ("identifier max F1 (" + cv["data"] + "): "
                + ", ".join(f"{m} {cv[m]['f1']}" for m in models)
                + (f"; accepts at p ≥ {thr['used']} ({thr['model']}, precision {thr['precision']} "
                   f"on held-out folds)" if thr else ""))
    if name == "backtranslation.json":
        best = data.get("best", {})
        return f"{data.get('sources', '?'):,} sources back-translated" + (
            f"; best candidate identical to its reference {best['identical_to_reference']:.1%}"
            if "identical_to_reference" in best else "")
    return None


def glance(outputs: list[str | Path], results: str | Path) -> dict[str, Any]:
    """What ran (rules, jobs, time, code), on what (inputs no step produced) and what came
    out (the outputs under ``results`` with their rows and headline figures)."""
    records = {Path(o): read_json(prov_path(o)) for o in outputs}
    produced = {str(o) for o in records}
    for o, r in records.items():
        produced.update(e["path"] for e in r.get("outputs", []))
    rules: dict[str, dict[str, Any]] = defaultdict(lambda: {"jobs": 0, "seconds": 0.0})
    starts, ends, commits, hosts = [], [], set(), set()
    raw: dict[str, dict[str, Any]] = {}
    for output, record in records.items():
        start, end = (dt.datetime.fromisoformat(record[k]) for k in ("started", "ended"))
        starts.append(start)
        ends.append(end)
        rule = rules[record["rule"]]
        rule["seconds"] += (end - start).total_seconds()
        rule["jobs"] += 1
        code = record.get("code", {})
        commits.add((code.get("commit") or "unknown")[:12] + (" (modified)" if code.get("dirty") else ""))
        hosts.add(record.get("host") or "?")
        for entry in record.get("inputs", []):
            if entry["path"] not in produced and not entry["path"].endswith(".prov.json"):
                raw.setdefault(entry["path"], entry)
    results = Path(results)
    came_out = []
    for output, record in sorted(records.items()):
        if results not in output.parents:
            continue
        came_out.append({"output": str(output), "rule": record["rule"],
                         "rows": record.get("rows_out"),
                         "figures": _headline(output) if output.suffix == ".json" else None})
    return {"rules": dict(sorted(rules.items())), "jobs": sum(r["jobs"] for r in rules.values()),
            "first_start": min(starts).isoformat() if starts else None,
            "last_end": max(ends).isoformat() if ends else None,
            "commits": sorted(commits), "hosts": sorted(hosts),
            "inputs": [raw[p] for p in sorted(raw)], "outputs": came_out}


def glance_html(summary: dict[str, Any]) -> str:
    esc = html.escape

    def table(rows: list[list[Any]], head: list[str]) -> str:
        return ("<table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"
                + "".join("<tr>" + "".join(f"<td>{esc('' if c is None else str(c))}</td>" for c in row)
                          + "</tr>" for row in rows) + "</tbody></table>")

    inputs = summary["inputs"]
    shown = inputs[:MAX_INPUTS]
    parts = [
        "<!doctype html><meta charset='utf-8'><title>paramill: at a glance</title>",
        "<style>body{font:14px sans-serif;margin:1em}table{border-collapse:collapse;margin:.5em 0}"
        "td,th{border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top}"
        "h2{margin-top:1.2em}</style>",
        "<h1>paramill: at a glance</h1>",
        f"<p>{summary['jobs']} jobs of {len(summary['rules'])} rules, from {esc(str(summary['first_start']))} "
        f"to {esc(str(summary['last_end']))}; code {esc(', '.join(summary['commits']))}; hosts "
        f"{esc(', '.join(summary['hosts']))}. Every output's record is in the Provenance section.</p>",
        "<h2>What came out</h2>",
        table([[o["output"], o["rule"], o["rows"], o["figures"]] for o in summary["outputs"]],
              ["output", "made by", "rows", "figures"]),
        "<h2>On what</h2><p>Inputs no step of this run produced (data and models given in the "
        "config), with their SHA-256:</p>",
        table([[e["path"], f"{e['bytes']:,}", e["sha256"][:16]] for e in shown], ["input", "bytes", "sha256"]),
        (f"<p>… and {len(inputs) - len(shown)} more.</p>" if len(inputs) > len(shown) else ""),
        "<h2>What ran</h2>",
        table([[name, r["jobs"], round(r["seconds"], 1)] for name, r in summary["rules"].items()],
              ["rule", "jobs", "seconds (sum)"]),
    ]
    return "\n".join(parts) + "\n"
