"""Real snakemake on the shipped sample: ingest -> clean -> shards -> stats."""

import json

import polars as pl
import pytest

from paramill.provenance import verify

from .conftest import executed, snakemake

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def finished(project):
    proc = snakemake(project)
    return project, proc


def test_default_dag_runs_every_stage_once(finished):
    _, proc = finished
    assert executed(proc) == {"ingest": 2, "clean": 2, "bitext_stats": 1, "plot_bitext_outcomes": 1,
                              "provenance_summary": 1}


def test_stats_add_up_and_match_the_shards(finished):
    project, _ = finished
    stats = json.loads((project / "results/bitext/stats.json").read_text())
    assert stats["rows_in"] == stats["kept"] + stats["rejected_total"]
    assert stats["kept"] >= 3000
    for reason in ("duplicate", "empty_cs", "empty_en", "identical", "length_ratio",
                   "not_latin1_en", "not_latin2_cs", "too_long", "column_count",
                   "invalid_utf8", "line_too_long"):
        assert stats["rejected"].get(reason, 0) > 0, reason
    shards = pl.scan_parquet(project / "work/shards/*/shard-*.parquet").collect()
    assert shards.height == stats["kept"]
    assert shards["pair_id"].n_unique() == shards.height
    assert shards.select(pl.struct("cs", "en").n_unique()).item() == shards.height
    rejected = pl.scan_parquet(project / "work/clean/*.rejected.parquet").collect()
    assert rejected.height == stats["rejected_total"]
    # every input line is accounted for exactly once
    lines = shards.select("corpus", "line_no").vstack(rejected.select("corpus", "line_no"))
    assert lines.height == lines.unique().height == stats["rows_in"]


def test_outputs_carry_verifiable_provenance(finished):
    project, _ = finished
    import os

    cwd = os.getcwd()
    os.chdir(project)
    try:
        assert verify("results/bitext/stats.json") == []
        assert verify("work/shards/grammar") == []
    finally:
        os.chdir(cwd)
    record = json.loads((project / "results/bitext/stats.json.prov.json").read_text())
    assert record["rule"] == "bitext_stats" and len(record["config_digest"]) == 64


def test_rerun_does_nothing(finished):
    project, _ = finished
    proc = snakemake(project)
    assert executed(proc) == {}
    assert "Nothing to be done" in proc.stderr + proc.stdout


def test_bad_config_fails_before_any_job(project, tmp_path):
    proc = snakemake(project, "--config", "bitext={'clean': {'max_tokens': 'many'}}",
                     "--directory", str(project), check=False)
    assert proc.returncode != 0
    assert "config key bitext.clean.max_tokens: 'many' is not of type 'integer'" in proc.stderr
    assert executed(proc) == {}
