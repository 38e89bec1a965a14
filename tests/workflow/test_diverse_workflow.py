"""ParaBank 2's sample-score-cluster branch through real snakemake on the sample."""

import json

import polars as pl
import pytest

from .conftest import TINY_NMT, copy_project, executed, snakemake

pytestmark = pytest.mark.slow


def test_sampling_gives_up_to_five_clustered_paraphrases_per_source(tmp_path):
    from pathlib import Path

    project = copy_project(tmp_path / "diverse")
    overlay = str(Path(__file__).with_name("sample.yaml"))
    proc = snakemake(project, "results/nmt/diversity.tsv", *TINY_NMT, overlay)
    ran = executed(proc)
    assert ran["back_translate"] == 4 and ran["diversity_stats"] == 1 and ran["nmt_train"] == 2
    cands = pl.scan_parquet(project / "work/candidates/*/shard-*.parquet").collect()
    shards = pl.scan_parquet(project / "work/shards/*/shard-*.parquet").collect()
    per_source = cands.group_by("pair_id").len()["len"]
    assert per_source.max() <= 5 and per_source.mean() > 2
    assert cands["pair_id"].n_unique() > 0.8 * shards.height
    assert cands["method"].unique().to_list() == ["sample"]
    assert cands.select(pl.col("bwd_nll").is_null().sum()).item() == 0
    assert ((cands["fwd_nll"] + cands["bwd_nll"]) <= 8.0).all()
    assert (cands["cluster"] > 0).all() and cands["constraint_set"].is_between(0, 1).all()
    diversity = json.loads((project / "results/nmt/diversity.json").read_text())
    assert [r["rank"] for r in diversity["by_rank"]] == [1, 2, 3, 4, 5]
    assert all(0 <= r["one_minus_bleu"] <= 1 for r in diversity["by_rank"])
    assert diversity["collective"]["bag_iou"] < 1.0
    record = json.loads((project / "work/candidates/grammar/shard-00000.parquet.prov.json").read_text())
    assert record["sampling"]["sampled"] == record["sampling"]["sources"] * 2 * 6
    assert (project / "results/nmt/diversity.png").stat().st_size > 1000
