"""A summary table of provenance records, for the report and for humans."""

from __future__ import annotations

import datetime as dt
import html
from pathlib import Path
from typing import Any

import polars as pl

from paramill.run.job import output_job
from paramill.io.jsonfiles import read_json
from paramill.provenance import Run, prov_path

COLUMNS = ["output", "rule", "started", "seconds", "rows_in", "rows_out", "inputs",
           "commit", "dirty", "slurm_job_id", "host", "config_digest"]


def recorded_outputs(folders: list[str | Path], exclude: list[str | Path] = ()) -> list[Path]:
    """Every output under ``folders`` that has a provenance record, sorted; temporaries of
    running or killed jobs (``.<name>.tmp-…``) and the ``exclude`` paths left out."""
    skip = {Path(p) for p in exclude}
    found = set()
    for folder in folders:
        for record in Path(folder).rglob("*.prov.json"):
            output = record.with_name(record.name[: -len(".prov.json")])
            if any(part.startswith(".") and ".tmp-" in part
                   for part in record.relative_to(folder).parts):
                continue
            if output not in skip:
                found.add(output)
    return sorted(found)


def summary_rows(outputs: list[str | Path]) -> list[dict[str, Any]]:
    rows = []
    for output in outputs:
        record = read_json(prov_path(output))
        started = dt.datetime.fromisoformat(record["started"])
        ended = dt.datetime.fromisoformat(record["ended"])
        rows.append({
            "output": str(output),
            "rule": record["rule"],
            "started": record["started"],
            "seconds": (ended - started).total_seconds(),
            "rows_in": record.get("rows_in"),
            "rows_out": record.get("rows_out"),
            "inputs": len(record["inputs"]),
            "commit": (record["code"].get("commit") or "")[:12],
            "dirty": record["code"].get("dirty"),
            "slurm_job_id": record.get("slurm_job_id"),
            "host": record.get("host"),
            "config_digest": (record.get("config_digest") or "")[:12],
        })
    return rows


def write_summary(outputs: list[str | Path], html_path: str | Path, tsv_path: str | Path,
                  rule: str = "provenance_summary", glance_path: str | Path | None = None,
                  results: str | Path = "results", pages: str | Path | None = None,
                  render_files: list[str | Path] = ()) -> int:
    """The provenance table (HTML, TSV) and, with ``glance_path``, the report's first page
    (what ran, on what, what came out; :mod:`paramill.report.glance`), and with ``pages``
    one HTML page of ``render_files`` (:mod:`paramill.report.pages`)."""
    run = Run(rule=rule, params={}, inputs=[prov_path(o) for o in outputs])
    rows = summary_rows(outputs)
    frame = pl.DataFrame(rows, schema={c: pl.String if c in (
        "output", "rule", "started", "commit", "slurm_job_id", "host", "config_digest")
        else (pl.Boolean if c == "dirty" else (pl.Float64 if c == "seconds" else pl.Int64))
        for c in COLUMNS})
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape('' if r[c] is None else str(r[c]))}</td>"
                                    for c in COLUMNS) + "</tr>" for r in rows)
    page = ("<!doctype html><meta charset='utf-8'><title>paramill provenance</title>"
            "<style>table{border-collapse:collapse;font:12px sans-serif}"
            "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}</style>"
            "<p>Every output's <code>.prov.json</code>; check a chain with "
            "<code>paramill provenance verify OUTPUT</code>.</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n")
    finals = ([Path(html_path), Path(tsv_path)] + ([Path(glance_path)] if glance_path else [])
              + ([Path(pages)] if pages else []))
    with output_job(run, *finals, rows_in=len(rows)) as job:
        temps = job.paths
        temps[0].write_text(page)
        frame.write_csv(temps[1], separator="\t")
        if glance_path:
            from paramill.report.glance import glance, glance_html

            temps[2].write_text(glance_html(glance(outputs, results)), encoding="utf-8")
        if pages:
            from paramill.report.pages import render

            render(list(render_files), temps[len(finals) - 1])
        job.rows_out = len(rows)
    return len(rows)
