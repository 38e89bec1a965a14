"""``paramill pairs stats``: what every pair corpus kept and rejected, per reason and method."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paramill.io.jsonfiles import write_json
from paramill.run.job import output_job
from paramill.pairs.ingest import STATS_NAME
from paramill.provenance import Run
from paramill.io.jsonfiles import COUNT, COUNTS, TEXT, read_json_as

#: a pair corpus's stats.json (`paramill pairs ingest`), as far as `pairs stats` reads it
INGEST_STATS = {"type": "object", "required": ["corpus", "format", "lines_in", "rows_in", "kept", "rejected",
                                               "rejected_total", "by_method"],
                "properties": {"corpus": TEXT, "format": TEXT, "lines_in": COUNT, "rows_in": COUNT,
                               "kept": COUNT, "rejected": COUNTS, "rejected_total": COUNT,
                               "by_method": {"type": "object", "additionalProperties": COUNTS}}}


def gather(corpus_dirs: list[str | Path]) -> dict[str, Any]:
    """The summary of the corpora's ``stats.json`` files, in the order given."""
    corpora = {}
    for directory in map(Path, corpus_dirs):
        stats = read_json_as(directory / STATS_NAME, INGEST_STATS,
                             "a pair corpus's stats (`paramill pairs ingest`)")
        corpora[stats["corpus"]] = {k: stats[k] for k in (
            "format", "lines_in", "rows_in", "kept", "rejected", "rejected_total", "by_method")}
    return {"corpora": corpora,
            "rows_in": sum(c["rows_in"] for c in corpora.values()),
            "kept": sum(c["kept"] for c in corpora.values()),
            "rejected_total": sum(c["rejected_total"] for c in corpora.values())}


def rows(summary: dict[str, Any]) -> list[tuple[str, str, str, int]]:
    """(corpus, method, outcome, candidates): outcome is ``kept`` or a rejection reason."""
    return [(corpus, method, outcome, n)
            for corpus, stats in summary["corpora"].items()
            for method, outcomes in stats["by_method"].items()
            for outcome, n in outcomes.items()]


def write_stats(corpus_dirs: list[str | Path], out_json: str | Path, out_tsv: str | Path,
                rule: str = "pairs_stats") -> dict[str, Any]:
    summary = gather(corpus_dirs)
    run = Run(rule=rule, params={}, inputs=[Path(d) / STATS_NAME for d in corpus_dirs])
    with output_job(run, out_json, out_tsv, rows_in=summary["rows_in"], each=True) as job:
        tmp_json, tmp_tsv = job.paths
        write_json(tmp_json, summary)
        with open(tmp_tsv, "w", encoding="utf-8") as fh:
            fh.write("corpus\tmethod\toutcome\tcandidates\n")
            for row in rows(summary):
                fh.write("\t".join(map(str, row)) + "\n")
        job.rows_out = summary["kept"]
    return summary
