"""A pair-only config (tests/workflow/pairs-only.yaml): ParaNMT-layout pairs and MT outputs
beside references go through filters, selection, embeddings and the lexicon with no NMT."""

import json
from pathlib import Path

import polars as pl
import pytest

from paramill.pairs.readers import PairCorpusSpec, read_pairs

from .conftest import copy_project, executed, scoring, snakemake

pytestmark = pytest.mark.slow

CONFIG = str(Path(__file__).with_name("pairs-only.yaml"))
#: the filters pairs-only.yaml enables that pair corpora can take (not cost, not dual_xent)
RUN_FILTERS = ["length", "overlap", "bleu", "parascore"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = copy_project(tmp_path_factory.mktemp("pairs"))
    # --configfile replaces the sample's config.yaml (rules/common.smk): no sample corpora
    dry = snakemake(root, "-n", "--configfile", CONFIG)
    proc = snakemake(root, "--configfile", CONFIG)
    return root, dry, proc


def test_no_translation_model_is_trained_or_used(finished):
    _, dry, proc = finished
    ran = executed(proc)
    for jobs in (executed(dry), ran):
        assert not [r for r in jobs if r.startswith(("spm_", "nmt_", "ingest", "clean", "bitext"))]
    # the paranmt corpus makes 2 shards of 1000 candidates, the MT outputs one (600)
    assert ran == {"pairs_ingest": 2, "pairs_stats": 1, "score_by_method": 1, "heldout": 1,
                   "parascore_model": 1,
                   **scoring(RUN_FILTERS, 3), "select": 1, "corpus_analysis": 1,
                   "embed_train": 1, "sts_eval": 1, "lexicon": 1, "provenance_summary": 1}


def test_rows_add_up_per_corpus_with_reasons(finished):
    root, _, _ = finished
    stats = json.loads((root / "results/pairs/stats.json").read_text())
    paranmt = stats["corpora"]["grammar-paranmt"]
    assert paranmt["rows_in"] == 2065 == paranmt["kept"] + paranmt["rejected_total"]
    assert paranmt["rejected"] == {"bad_score": 5, "column_count": 5, "duplicate": 50,
                                   "not_latin1": 5}
    mt = stats["corpora"]["grammar-mt"]
    assert mt["by_method"]["system-a"]["kept"] == 300 and mt["lines_in"] == 300


def test_corpus_carries_pairs_back_to_their_file_and_line(finished):
    root, _, _ = finished
    corpus = pl.read_parquet(root / "results/corpus/default/corpus.parquet")
    assert set(corpus["method"].unique()) == {"paranmt", "system-a", "system-b"}
    assert "given_score" in corpus.columns and "cost" not in corpus.columns
    assert corpus.filter(pl.col("method") == "paranmt")["given_score"].null_count() == 0
    row = corpus.filter(pl.col("method") == "system-a").row(0, named=True)
    line = int(row["pair_id"].rsplit("-", 1)[1])
    refs = (root / "data/sample/pairs/refs.en").read_text().splitlines()
    hyps = (root / "data/sample/pairs/hyp.system-a.en").read_text().splitlines()
    assert (refs[line - 1], hyps[line - 1]) == (row["s1"], row["s2"])
    sheet = (root / "results/corpus/default/datasheet.md").read_text()
    assert "Pair corpora" in sheet and "grammar-mt" in sheet and "back-translation" not in sheet


def test_scores_per_mt_system_side_by_side(finished):
    root, _, _ = finished
    table = pl.read_csv(root / "results/pairs/scores_by_method.tsv", separator="\t")
    assert table["method"].to_list() == ["paranmt", "system-a", "system-b"]
    assert table.filter(pl.col("method") == "system-a")["candidates"].item() == 300
    assert {"bleu_mean", "parascore_mean", "given_score_mean"} <= set(table.columns)
    assert (root / "results/pairs/scores_by_method.png").stat().st_size > 5000


def test_embeddings_sts_and_lexicon_come_out(finished):
    root, _, _ = finished
    sts = (root / "results/embed/word-trigram/sts.tsv").read_text().splitlines()
    assert len(sts) == 2 and sts[1].startswith("grammar-sts")
    lexicon = pl.read_csv(root / "results/lexicon/lexicon.tsv", separator="\t")
    assert lexicon.height > 50


def test_the_paranmt_export_reads_back_in(finished):
    root, _, _ = finished
    path = root / "results/corpus/default/corpus.paranmt.txt"
    back = list(read_pairs(PairCorpusSpec.from_dict("p", {"format": "paranmt", "path": str(path)})))
    tsv = (root / "results/corpus/default/corpus.tsv").read_text().splitlines()
    assert len(back) == len(tsv) and all(c.reason is None for c in back)
    assert [f"{c.en_ref}\t{c.candidate}" for c in back] == tsv
    summary = json.loads((root / "results/corpus/default/selection.json").read_text())
    assert summary["paranmt_score"] == "parascore"  # a cosine of the para-score embeddings
    assert all(-1 <= c.score <= 1 for c in back) and len({c.score for c in back}) > 10


def test_a_bound_on_a_column_pair_corpora_lack_names_them(finished, tmp_path):
    root, _, _ = finished
    overlay = tmp_path / "cost.yaml"
    overlay.write_text("filters: {select: {bounds: {cost: [null, 1.0]}}}\n")
    proc = snakemake(root, "--configfile", CONFIG, str(overlay),
                     check=False)
    assert proc.returncode != 0
    log = (root / "logs/filters/select.default.log").read_text()
    # cost is enabled in pairs-only.yaml but needs the decoder: no corpus here has it
    assert "select.bounds.cost: no such score column in corpora grammar-mt, grammar-paranmt" in log
    assert "decoder" in log
