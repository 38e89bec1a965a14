import json
from pathlib import Path

import polars as pl

from paramill.provenance import verify
from paramill.report.plots import outcomes_plot
from paramill.report.recordtable import summary_rows, write_summary


def test_outcomes_plot_draws_one_bar_per_shard(tmp_path):
    tsv = tmp_path / "o.tsv"
    pl.DataFrame({"corpus": ["a", "a", "a", "b"], "shard": ["s0", "s0", "s1", "s0"],
                  "outcome": ["kept", "duplicate", "kept", "kept"], "rows": [5, 1, 3, 2]}
                 ).write_csv(tsv, separator="\t")
    png = tmp_path / "o.png"
    assert outcomes_plot(tsv, png) == 3
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert verify(png) == []


def test_provenance_summary_lists_each_record(tmp_path):
    out = tmp_path / "x.txt"
    out.write_text("x")
    (tmp_path / "x.txt.prov.json").write_text(json.dumps({
        "rule": "r", "started": "2026-01-01T00:00:00+00:00", "ended": "2026-01-01T00:00:07+00:00",
        "inputs": [{}, {}], "code": {"commit": "a" * 40, "dirty": False}, "rows_in": 4,
        "rows_out": 3, "slurm_job_id": "99", "host": "h", "config_digest": "f" * 64}))
    (row,) = summary_rows([out])
    assert row["seconds"] == 7 and row["inputs"] == 2 and row["slurm_job_id"] == "99"
    assert row["commit"] == "a" * 12
    n = write_summary([out], tmp_path / "p.html", tmp_path / "p.tsv")
    assert n == 1 and "<td>99</td>" in (tmp_path / "p.html").read_text()
    assert pl.read_csv(tmp_path / "p.tsv", separator="\t")["rows_out"].to_list() == [3]


def test_the_summary_collects_every_record_under_the_folders(tmp_path):
    from paramill.cli import main
    from paramill.report.recordtable import recorded_outputs

    work, results = tmp_path / "work", tmp_path / "results"
    for path in (work / "twitter/harvest/2026-10-05.parquet", work / "nmt/spm/en.model",
                 results / "lexicon/simlex.tsv", work / "shards/grammar"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x") if path.suffix else path.mkdir()
        Path(f"{path}.prov.json").write_text(json.dumps({
            "rule": "r", "started": "2026-01-01T00:00:00+00:00", "ended": "2026-01-01T00:00:01+00:00",
            "inputs": [], "code": {}}))
    # a killed job's temporary record and an output without a record are not listed
    (work / "nmt/spm/.en.model.prov.json.tmp-1-ab").write_text("{")
    (work / "nmt/spm/cs.model").write_text("no record")
    html, tsv = results / "report/provenance.html", results / "report/provenance.tsv"
    assert recorded_outputs([work, results]) == sorted([
        work / "nmt/spm/en.model", work / "shards/grammar", work / "twitter/harvest/2026-10-05.parquet",
        results / "lexicon/simlex.tsv"])
    assert main(["report", "provenance", "--under", str(work), "--under", str(results),
                 "--html", str(html), "--tsv", str(tsv)]) == 0
    assert pl.read_csv(tsv, separator="\t").height == 4
    # run again: the summary's own outputs are not listed in it
    assert main(["report", "provenance", "--under", str(work), "--under", str(results),
                 "--html", str(html), "--tsv", str(tsv)]) == 0
    assert pl.read_csv(tsv, separator="\t").height == 4
    assert main(["report", "provenance", "--html", str(html), "--tsv", str(tsv)]) == 2
