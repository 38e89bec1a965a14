"""Filters, held-out pairs, selection and analysis on hand-made data."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sacrebleu
import torch

from paramill import filters
from paramill.filters.analysis import (
    AnalysisSettings,
    Idf,
    analyse,
    annotation_sample,
    entropy,
    range_labels,
    repetition_rate,
    repeats,
)
from paramill.filters.base import Direction, score_directions, score_shard
from paramill.filters.bleu import bleu_counts, sentence_bleu
from paramill.filters.classifier import (
    ClassifierSettings,
    load_classifier,
    train_classifier,
)
from paramill.filters.heldout import HeldoutSettings, select_heldout
from paramill.filters.kenlm import KenlmSettings, lm_text, train_lm
from paramill.filters.overlap import ngram_overlap
from paramill.filters.release import write_release_docs
from paramill.filters.scored import iter_scored
from paramill.filters.select import SelectSettings, fold_expr, select
from paramill.io.outputs import sha256_file
from paramill.nmt.tables import CANDIDATES
from paramill.pairs.tables import PAIR_CANDIDATES
from paramill.provenance import verify


def write_candidates(path, rows):
    """rows: (pair_id, en_ref, candidate, fwd_nll) -> a candidate table."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist([
        {"pair_id": p, "candidate_id": f"{p}:beam:1", "en_ref": r, "candidate": c, "method": "beam",
         "rank": 1, "fwd_nll": nll, "bwd_nll": None, "n_tokens": len(c.split()),
         "constraint_set": None, "cluster": None} for p, r, c, nll in rows], schema=CANDIDATES)
    pq.write_table(table, path)
    return path


# -- overlap and BLEU ------------------------------------------------------------------

def test_ngram_overlap_by_hand():
    a = "the cat sat on the mat".split()
    b = "the cat lay on a mat".split()
    # unigrams shared (clipped): the, cat, on, mat = 4; both sides have 6 -> 4/6
    assert ngram_overlap(a, b, 1) == pytest.approx(4 / 6)
    # bigrams: a has 5, b has 5; shared: "the cat" -> 1/5
    assert ngram_overlap(a, b, 2) == pytest.approx(1 / 5)
    assert ngram_overlap(a, b, 3) == 0.0
    # the side with fewer n-grams is the denominator: 2 shared of b's 2 unigrams
    assert ngram_overlap(a, ["cat", "mat"], 1) == 1.0
    # clipping: "the" twice in a, once in c
    assert ngram_overlap(a, ["the", "the", "the", "dog"], 1) == pytest.approx(2 / 4)
    assert ngram_overlap(["a"], ["a"], 2) == 0.0  # no bigrams on either side


def test_bleu_counts_and_nakov_by_hand():
    hyp = "the cat sat on the mat".split()
    ref = "the cat is on the mat".split()
    correct, total = bleu_counts(hyp, ref)
    assert correct == [5, 3, 1, 0] and total == [6, 5, 4, 3]
    expected = math.exp((math.log(6 / 7) + math.log(4 / 6) + math.log(2 / 5) + math.log(1 / 4)) / 4
                        + min(0.0, 1 - 7 / 6))
    assert sentence_bleu(hyp, ref, "nakov") == pytest.approx(expected)
    assert sentence_bleu(ref, ref, "nakov") < 1.0  # smoothed brevity penalty: r+1 > c
    assert sentence_bleu([], ref) == 0.0


@pytest.mark.parametrize("method", ["exp", "add-k", "floor"])
def test_sacrebleu_methods_equal_sacrebleu(method):
    pairs = [("the cat sat on the mat", "the cat is on the mat"),
             ("a b c d e f g", "a b x d e f y z"),
             ("one", "one two three four five")]
    for hyp, ref in pairs:
        want = sacrebleu.sentence_bleu(hyp, [ref], tokenize="none", smooth_method=method).score / 100
        assert sentence_bleu(hyp.split(), ref.split(), method) == pytest.approx(want)


def test_unknown_bleu_method_is_an_error():
    with pytest.raises(ValueError, match="smoothing"):
        sentence_bleu(["a"], ["a"], "bogus")


# -- the interface and score_shard ----------------------------------------------------

ROWS = [("p1", "The cat sat on the mat.", "The cat is on the mat.", 0.3),
        ("p2", "It rains today.", "Today it is raining.", 0.5),
        ("p3", "Hello there.", "Hello there.", 0.1),
        ("p4", "A very long sentence with many words in it .", "Short one.", 1.5)]


@pytest.fixture
def shard(tmp_path):
    return write_candidates(tmp_path / "candidates" / "c" / "shard-00000.parquet", ROWS)


def test_every_filter_declares_columns_with_directions():
    for name in ("length", "cost", "overlap", "bleu"):
        filt = filters.make(name)
        assert filt.name == name and filt.columns()
        assert all(isinstance(c.direction, Direction) for c in filt.columns())
    with pytest.raises(ValueError, match="unknown filter"):
        filters.make("nope")
    with pytest.raises(ValueError, match="unknown settings"):
        filters.make("overlap", order=[1])


@pytest.mark.parametrize("threads", [1, 2])
def test_score_shard_keeps_every_row_and_records_directions(shard, tmp_path, threads):
    out = tmp_path / "scores" / "overlap" / "c" / "shard-00000.parquet"
    stats = score_shard(filters.make("overlap"), shard, out, threads=threads, batch_size=2)
    assert stats["rows"] == 4
    table = pl.read_parquet(out)
    assert table["candidate_id"].to_list() == [f"p{i}:beam:1" for i in range(1, 5)]
    assert table["overlap_1"][2] == 1.0  # identical pair
    assert table["overlap_1"][0] == pytest.approx(ngram_overlap(
        "the cat sat on the mat .".split(), "the cat is on the mat .".split(), 1))
    assert score_directions(out) == {f"overlap_{n}": Direction.RANGE for n in (1, 2, 3)}
    assert verify(out) == []


def test_length_and_cost_columns(shard, tmp_path):
    score_shard(filters.make("length"), shard, tmp_path / "l.parquet")
    score_shard(filters.make("cost"), shard, tmp_path / "c.parquet")
    lengths = pl.read_parquet(tmp_path / "l.parquet")
    assert lengths["length_ref"].to_list() == [7, 4, 3, 10]
    assert lengths["length_cand"].to_list() == [7, 5, 3, 3]
    assert pl.read_parquet(tmp_path / "c.parquet")["cost"].to_list() == pytest.approx([0.3, 0.5, 0.1, 1.5])


def test_dual_xent_needs_the_source_shard(shard, tmp_path):
    from paramill.filters.dual_xent import DualXent, dual_cross_entropy

    assert dual_cross_entropy(2.0, 3.0) == pytest.approx(1.0 + 2.5)
    filt = DualXent.__new__(DualXent)  # no models needed to check the guard
    with pytest.raises(ValueError, match="needs the bitext shard"):
        score_shard(filt, shard, tmp_path / "d.parquet")


# -- KenLM ---------------------------------------------------------------------------

LM_TEXT = ["the cat sat on the mat", "the dog sat on the rug", "a cat ate the fish",
           "the dog ate a bone", "my cat sleeps on the mat"] * 4


def test_kenlm_perplexity_equals_the_kenlm_modules_scores(tmp_path):
    import kenlm

    out = tmp_path / "lm" / "lm.binary"
    train_lm(LM_TEXT, out, KenlmSettings(order=3))
    assert verify(out) == []
    model = kenlm.Model(str(out))
    assert model.order == 3
    filt = filters.make("kenlm", model=str(out))
    sentences = ["The cat sat on the rug.", "fish bone mat"]
    frame = pl.DataFrame({"en_ref": sentences, "candidate": sentences})
    from paramill.filters.base import Batch

    got = filt.score(Batch(frame))["kenlm_ppl"]
    for sentence, ppl in zip(sentences, got):
        text = lm_text(sentence)
        log10 = sum(prob for prob, _, _ in model.full_scores(text))
        words = len(text.split()) + 1  # </s>
        assert ppl == pytest.approx(10 ** (-log10 / words))
    assert got[0] < got[1]  # the fluent sentence is more likely


def test_kenlm_needs_its_model():
    with pytest.raises(FileNotFoundError):
        filters.make("kenlm", model="/nonexistent/lm.binary")


# -- classifier -----------------------------------------------------------------------

def test_classifier_learns_a_separable_toy_set(tmp_path, monkeypatch):
    refs = [f"the {w} walked home slowly" for w in ("man", "woman", "child", "dog", "cat")] * 8
    trans = [f"a {w} go house quick quick" for w in ("man", "woman", "child", "dog", "cat")] * 8
    data = [(s, 1.0) for s in refs] + [(s, 0.0) for s in trans]
    out = tmp_path / "clf.pt"
    summary = train_classifier(data, data[::7], data[::5], out,
                               ClassifierSettings(dim=16, epochs=15, batch_size=10))
    assert summary["valid_accuracy"] == 1.0 and summary["test_accuracy"] == 1.0
    model = load_classifier(out)
    p = model.p_reference(["the bird walked home slowly", "a bird go house quick quick"])
    assert p[0] > 0.5 > p[1]
    assert verify(out) == []
    # the scoring batch is its own setting: the section's training batch_size does not reach it
    import paramill.filters.classifier as classifier_module
    from paramill.cli import main

    batches = []
    real = classifier_module.ReferenceClassifier.p_reference

    def spy(self, sentences, batch_size=512):
        batches.append(batch_size)
        return real(self, sentences, batch_size)

    shard = write_candidates(tmp_path / "c" / "shard-00000.parquet",
                             [(f"p{i}", refs[i], trans[i], 0.1) for i in range(5)])
    monkeypatch.setattr(classifier_module.ReferenceClassifier, "p_reference", spy)
    for settings, expected in (('{"batch_size": 3}', 512), ('{"score_batch_size": 7}', 7)):
        assert main(["filters", "score", "--filter", "classifier", "--candidates", str(shard),
                     "--out", str(tmp_path / "s.parquet"), "--settings", settings,
                     "--models", json.dumps({"model": str(out)})]) == 0
        assert batches.pop() == expected


def _scores(tmp_path, name, model, shard, launch):
    """``filters score`` of ``name`` with ``--launch`` (how the job runs), its column's values."""
    from paramill.cli import main

    out = tmp_path / f"{name}-{len(launch)}.parquet"
    assert main(["filters", "score", "--filter", name, "--candidates", str(shard), "--out", str(out),
                 "--models", json.dumps({"model": str(model)}), "--launch", launch]) == 0
    return pl.read_parquet(out)[name].to_numpy()


@pytest.mark.parametrize("encoder", ["word", "lstm"])
def test_a_scoring_batch_size_is_launch_only_and_changes_no_score(tmp_path, encoder, capsys):
    """The scoring batch sizes (filters.classifier.score_batch_size, parascore.batch_size,
    dual_xent.batch_size) are launch-only: lowered after a job ran out of GPU memory, they
    re-scored every shard, and the classifier's retrained the classifier. They bound memory
    only: the padded batches give each candidate its score alone within float noise."""
    from paramill.embed.model import ModelSpec, build

    refs = ["the man walked home slowly", "it rains today in the city and the man reads the paper",
            "a dog", "the child sleeps", "we went to the market on a sunny day with friends"]
    cands = ["a man go home", "rain today", "the dog barks at the cat all night long", "child",
             "market day"]
    data = [(s, 1.0) for s in refs] + [(s, 0.0) for s in cands]
    clf = tmp_path / "clf.pt"
    train_classifier(data * 4, data, data, clf,
                     ClassifierSettings(encoder=encoder, dim=8, hidden=8, epochs=2, batch_size=4))
    shard = write_candidates(tmp_path / "c" / "shard-00000.parquet",
                             [(f"p{i}", refs[i], cands[i], 0.1) for i in range(5)])
    one, all_ = ('{"filters.classifier": {"score_batch_size": %d}}' % n for n in (1, 512))
    assert np.allclose(_scores(tmp_path, "classifier", clf, shard, one),
                       _scores(tmp_path, "classifier", clf, shard, all_), atol=1e-6)
    torch.manual_seed(0)
    emb = tmp_path / "emb.pt"
    torch.save(build(ModelSpec(units="word", components=(encoder,), dim=6, hidden=6),
                     refs + cands).checkpoint(), emb)
    one, all_ = ('{"filters.parascore": {"batch_size": %d}}' % n for n in (1, 512))
    assert np.allclose(_scores(tmp_path, "parascore", emb, shard, one),
                       _scores(tmp_path, "parascore", emb, shard, all_), atol=1e-6)
    # only launch-only keys: one that changes what the job computes belongs in its settings
    from paramill.cli import main

    capsys.readouterr()
    assert main(["filters", "score", "--filter", "parascore", "--candidates", str(shard), "--out",
                 str(tmp_path / "x.parquet"), "--models", json.dumps({"model": str(emb)}),
                 "--launch", '{"filters.parascore": {"components": ["lstm"]}}']) == 2
    assert ("--launch takes only filters.parascore's launch-only keys (batch_size), not components"
            in capsys.readouterr().err) and not (tmp_path / "x.parquet").exists()
    # a scoring job out of GPU memory names the key to lower, and that it re-runs no other job
    from paramill.filters.parascore import Parascore

    def oom(self, batch):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Parascore, "score", oom)
        assert main(["filters", "score", "--filter", "parascore", "--candidates", str(shard), "--out",
                     str(tmp_path / "x.parquet"), "--models", json.dumps({"model": str(emb)})]) == 3
    assert ("out of GPU memory (CUDA out of memory. Tried to allocate 2.00 GiB). Lower the settings "
            "that size what the job holds at once (filters.advanced.parascore.batch_size (launch-only: re-runs "
            "no other job))") in capsys.readouterr().err
    assert not (tmp_path / "x.parquet").exists()
    # a card where only 2 sentences fit a batch: the batch is scored again at half the size
    # until it fits, which the rest of the shard keeps; the same scores, no failed job
    real, sizes = Parascore.score, []

    def small_card(self, batch):
        sizes.append(self.batch_size)
        if self.batch_size > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(self, batch)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Parascore, "score", small_card)
        fitted = _scores(tmp_path, "parascore", emb, shard, '{"filters.parascore": {"batch_size": 8}}')
    assert sizes == [8, 4, 2] and np.allclose(fitted, _scores(tmp_path, "parascore", emb, shard, all_), atol=1e-6)
    record = json.loads((tmp_path / f"parascore-{len(all_) - 2}.parquet.prov.json").read_text())
    assert record["out_of_gpu_memory"] == [{"at": "shard-00000.parquet row 0", "batch_size": 8, "now": 4},
                                           {"at": "shard-00000.parquet row 0", "batch_size": 4, "now": 2}]
    assert "paramill filters score: shard-00000.parquet row 0: out of GPU memory at batch_size 8" \
        in capsys.readouterr().err


def test_classifier_lstm_variant_trains(tmp_path):
    data = [("x y z", 1.0), ("z z z", 0.0)] * 10
    summary = train_classifier(data, data, data, tmp_path / "lstm.pt",
                               ClassifierSettings(encoder="lstm", dim=8, hidden=8, epochs=2))
    assert 0.0 <= summary["test_accuracy"] <= 1.0
    with pytest.raises(ValueError, match="word or lstm"):
        train_classifier(data, data, data, tmp_path / "x.pt", ClassifierSettings(encoder="gran"))


# -- held-out pairs -------------------------------------------------------------------

def test_heldout_is_seeded_sized_and_split(tmp_path):
    rows = [(f"p{i}", f"ref {i}", f"cand {i}", 0.1) for i in range(200)] + [("same", "x", "x", 0.1)]
    files = [write_candidates(tmp_path / "c" / "a" / "shard-00000.parquet", rows[:120]),
             write_candidates(tmp_path / "c" / "a" / "shard-00001.parquet", rows[120:])]
    stats = select_heldout(files, tmp_path / "h1.parquet", HeldoutSettings(size=50, seed=3))
    assert stats == {"eligible": 200, "heldout": 50, "train": 40, "valid": 5, "test": 5}
    select_heldout(files, tmp_path / "h2.parquet", HeldoutSettings(size=50, seed=3))
    one, two = pl.read_parquet(tmp_path / "h1.parquet"), pl.read_parquet(tmp_path / "h2.parquet")
    assert one.equals(two)
    assert "same" not in one["pair_id"].to_list()  # identical pairs are not eligible
    other = pl.read_parquet(select_heldout(files, tmp_path / "h3.parquet",
                                           HeldoutSettings(size=50, seed=4)) and tmp_path / "h3.parquet")
    assert set(other["pair_id"]) != set(one["pair_id"])


def test_heldout_leaves_a_small_corpus_pairs_to_release(tmp_path, capsys):
    """The default size (50,000) took every eligible pair of a 230-pair corpus, and the
    release held none; at most max_share of the eligible pairs are held out, the same
    smallest hashes, and the log says the share set the number."""
    rows = [(f"p{i}", f"ref {i}", f"cand {i}", 0.1) for i in range(230)]
    files = [write_candidates(tmp_path / "c" / "a" / "shard-00000.parquet", rows)]
    stats = select_heldout(files, tmp_path / "h.parquet", HeldoutSettings())
    assert stats["eligible"] == 230 and stats["heldout"] == 57  # int(230 * 0.25)
    assert "max_share (0.25) of the 230 eligible" in capsys.readouterr().err
    everything = select_heldout(files, tmp_path / "all.parquet", HeldoutSettings(max_share=1))
    assert everything["heldout"] == 230
    share = set(pl.read_parquet(tmp_path / "h.parquet")["pair_id"])
    assert share < set(pl.read_parquet(tmp_path / "all.parquet")["pair_id"])
    few = [write_candidates(tmp_path / "d" / "a" / "shard-00000.parquet", rows[:3])]
    with pytest.raises(ValueError, match="3 eligible pairs .* raise filters.heldout.max_share"):
        select_heldout(few, tmp_path / "h3.parquet", HeldoutSettings())


# -- selection ------------------------------------------------------------------------

@pytest.fixture
def scored(tmp_path):
    """Two shards of 50 candidates with length/overlap/cost scores."""
    rows = []
    for i in range(100):
        ref = f"sentence number {i} says words"
        cand = ref if i % 10 == 0 else f"sentence {i} tells {'many ' * (i % 5)}words"
        rows.append((f"p{i:03d}", ref, cand, i / 100))
    cands = [write_candidates(tmp_path / "candidates" / "a" / f"shard-0000{k}.parquet",
                              rows[50 * k:50 * (k + 1)]) for k in (0, 1)]
    scores = []
    for name in ("length", "overlap", "cost"):
        for c in cands:
            out = tmp_path / "scores" / name / "a" / c.name
            score_shard(filters.make(name), c, out)
            scores.append(out)
    return cands, scores


def run_select(tmp_path, scored, **settings):
    cands, scores = scored
    out = tmp_path / "sel"
    summary = select(cands, scores, out / "corpus.parquet", out / "corpus.tsv", out / "selection.json",
                     SelectSettings(**settings))
    return summary, pl.read_parquet(out / "corpus.parquet"), (out / "corpus.tsv").read_text()


def test_select_bounds_counts_and_outputs(tmp_path, scored):
    summary, corpus, tsv = run_select(tmp_path, scored, bounds={"cost": [None, 0.5],
                                                                "overlap_1": [0.2, None]})
    steps = {r["step"]: r["pairs"] for r in summary["steps"]}
    assert steps["candidates"] == 100
    assert steps["identical"] == 90
    assert steps["cost in [-inf, 0.5]"] == 45  # 0.00..0.50 minus the 5 identical ones
    assert corpus.height == summary["rows"] == steps["overlap_1 in [0.2, inf]"]
    assert (corpus["cost"] <= 0.5).all() and (corpus["overlap_1"] >= 0.2).all()
    assert (corpus["s1"] != corpus["s2"]).all()
    lines = tsv.splitlines()
    assert len(lines) == corpus.height
    assert lines[0].split("\t") == [corpus["s1"][0], corpus["s2"][0]]
    assert {"pair_id", "candidate_id", "length_ref", "overlap_3", "cost"} <= set(corpus.columns)


def test_select_folds_and_sample(tmp_path, scored):
    summary, corpus, _ = run_select(tmp_path, scored, rank_by="cost", n_folds=10, folds=[1, 2],
                                    drop_identical=False)
    # cost is lower-is-better: folds 1-2 hold the cheapest fifth
    assert corpus.height == 20 and corpus["cost"].max() < 0.2 + 1e-9
    assert set(corpus["fold"]) == {1, 2}
    summary, sample, _ = run_select(tmp_path, scored, size=30, seed=5)
    again = run_select(tmp_path, scored, size=30, seed=5)[1]
    assert sample.height == 30 and sample.equals(again)
    assert summary["steps"][-1] == {"step": "sample of 30 (seed 5)", "pairs": 30}


def test_fold_expr_directions():
    frame = pl.DataFrame({"x": [0.05, 0.55, 0.95]})
    cuts = [0.1 * i for i in range(1, 10)]
    assert frame.select(fold_expr("x", cuts, Direction.HIGHER))["literal"].to_list() == [10, 5, 1]
    assert frame.select(fold_expr("x", cuts, Direction.LOWER))["literal"].to_list() == [1, 6, 10]


def test_select_errors_name_the_setting(tmp_path, scored):
    with pytest.raises(ValueError, match="select.bounds.bleu"):
        run_select(tmp_path, scored, bounds={"bleu": [0, 1]})
    with pytest.raises(ValueError, match="select.rank_by"):
        run_select(tmp_path, scored, rank_by="parascore")
    assert not (tmp_path / "sel" / "corpus.parquet").exists()


def test_a_selection_is_the_same_whatever_its_batches(tmp_path, scored, monkeypatch):
    """Shards, score files and parts are read a batch at a time: 7 rows a batch (pairs
    repeated across batches of a shard, bounds, folds, a sample) selects what one batch a
    shard does, to the byte."""
    cands, scores = scored
    rows = [(f"b{i:03d}", f"another sentence {i} here", f"one more sentence {i} {'so ' * (i % 4)}here",
             i / 30) for i in range(30)]
    rows += [(f"x{p}", ref, cand, nll) for p, ref, cand, nll in rows[5:25]]  # 20 rows again
    shard = write_candidates(tmp_path / "candidates" / "b" / "shard-00000.parquet", rows)
    files = [shard]
    for name in ("length", "overlap", "cost"):
        files.append(tmp_path / "scores" / name / "b" / shard.name)
        score_shard(filters.make(name), shard, files[-1])
    both = ([*cands, shard], [*scores, *files[1:]])
    outs = []
    for rows in (65_536, 7):
        monkeypatch.setattr("paramill.filters.select.BATCH_ROWS", rows)
        out = tmp_path / f"sel-{rows}"
        summary = select(*both, out / "corpus.parquet", out / "corpus.tsv", out / "selection.json",
                         SelectSettings(bounds={"overlap_1": [0.05, None]}, rank_by="cost",
                                        folds=[1, 2, 3, 4, 5, 6, 7, 8], size=60, seed=3),
                         out_paranmt=out / "corpus.paranmt.txt")
        outs.append((summary["steps"], pl.read_parquet(out / "corpus.parquet"),
                     (out / "corpus.tsv").read_bytes(), (out / "corpus.paranmt.txt").read_bytes()))
    steps = {r["step"]: r["pairs"] for r in outs[0][0]}
    assert steps["candidates"] == 150 and steps["duplicates"] == steps["overlap_1 in [0.05, inf]"] - 20
    assert outs[0][1].height == 60
    assert outs[0][0] == outs[1][0] and outs[0][1].equals(outs[1][1]) and outs[0][2:] == outs[1][2:]


def test_a_score_file_of_other_rows_is_an_error_naming_both(tmp_path, scored):
    """A score file is the shard's rows in their order: another order (same rows), or
    another shard's, is named with the shard, not joined."""
    cands, scores = scored
    overlap = [s for s in scores if s.parent.parent.name == "overlap"]
    table = pq.read_table(overlap[0])
    pq.write_table(table.take(list(range(table.num_rows))[::-1]), overlap[0])
    with pytest.raises(ValueError, match=f"{overlap[0]}: not the scores of {cands[0]}.*re-run its score rule"):
        run_select(tmp_path, scored)
    assert not (tmp_path / "sel" / "corpus.parquet").exists()
    pq.write_table(table.slice(0, 40), overlap[0])
    with pytest.raises(ValueError, match=f"{overlap[0]}: not the scores of {cands[0]}"):
        run_select(tmp_path, scored)
    pq.write_table(table, overlap[0])
    again = tmp_path / "scores" / "overlap2" / "a" / overlap[0].name  # the same columns twice
    again.parent.mkdir(parents=True)
    shutil.copy(overlap[0], again)
    with pytest.raises(ValueError, match=f"{again}: column overlap_1, overlap_2, overlap_3 of "
                                         f"{cands[0]} is given by another score table"):
        run_select(tmp_path, (cands, [*scores, again]))


@pytest.fixture
def mixed(tmp_path, scored):
    """The scored bitext shards plus a pair corpus's shard: given scores, no cost."""
    cands, scores = scored
    path = tmp_path / "pairs" / "given" / "shard-00000.parquet"
    path.parent.mkdir(parents=True)
    rows = [{**{n: None for n in PAIR_CANDIDATES.names}, "pair_id": f"g-{i}",
             "candidate_id": f"g-{i}:paranmt:1", "en_ref": f"given reference {i} here",
             "candidate": f"a given paraphrase {i}", "method": "paranmt", "rank": 1,
             "given_score": i / 10} for i in range(10)]
    pq.write_table(pa.Table.from_pylist(rows, schema=PAIR_CANDIDATES), path)
    extra = []
    for name in ("length", "overlap"):  # cost needs the decoder: not run on pair corpora
        out = tmp_path / "scores" / name / "given" / path.name
        score_shard(filters.make(name), path, out)
        extra.append(out)
    return [*cands, path], [*scores, *extra]


def test_select_mixes_back_translated_and_given_pairs(tmp_path, mixed):
    summary, corpus, _ = run_select(tmp_path, mixed, bounds={"overlap_1": [0.0, 1.0]})
    assert summary["steps"][0] == {"step": "candidates", "pairs": 110}
    given = corpus.filter(pl.col("method") == "paranmt")
    assert given.height == 10 and given["cost"].null_count() == 10
    assert given["given_score"].to_list() == [i / 10 for i in range(10)]
    assert corpus.filter(pl.col("method") == "beam")["given_score"].null_count() > 0
    assert summary["score_columns"]["given_score"] == "higher"


def test_a_bound_some_corpora_cannot_have_names_them(tmp_path, mixed):
    with pytest.raises(ValueError, match=r"filters.select.bounds.cost: column cost is missing "
                                         r"for corpora given \(.*decoder"):
        run_select(tmp_path, mixed, bounds={"cost": [None, 0.5]})
    with pytest.raises(ValueError, match=r"select.rank_by: column given_score is missing for "
                                         r"corpora a "):
        run_select(tmp_path, mixed, rank_by="given_score")


@pytest.mark.parametrize("bucket_rows", [2_000_000, 8])
def test_select_keeps_a_pair_once_across_bitext_and_pair_corpora(tmp_path, scored, monkeypatch,
                                                                   bucket_rows):
    """A pair corpus repeating back-translated pairs (punctuation and spaces aside) adds none
    of them twice; the first copy (the bitext's) is the one released, in one bucket or many."""
    monkeypatch.setattr("paramill.filters.select.BUCKET_ROWS", bucket_rows)
    cands, scores = scored
    bitext = pl.concat([pl.read_parquet(c) for c in cands])
    repeated = bitext.filter(pl.col("en_ref") != pl.col("candidate")).head(6)
    path = tmp_path / "pairs" / "again" / "shard-00000.parquet"
    path.parent.mkdir(parents=True)
    rows = [{**{n: None for n in PAIR_CANDIDATES.names}, "pair_id": f"again-{i}",
             "candidate_id": f"again-{i}:paranmt:1", "en_ref": f"  {ref} ",
             "candidate": cand.replace(" ", "\u00a0", 1) if i == 0 else cand,
             "method": "paranmt", "rank": 1, "given_score": 0.5}
            for i, (ref, cand) in enumerate(repeated.select("en_ref", "candidate").iter_rows())]
    assert "\u00a0" in rows[0]["candidate"]  # the same pair once normalised
    rows += [{**rows[1], "pair_id": "again-new", "candidate_id": "again-new:paranmt:1",
              "candidate": "a paraphrase nobody made before"}]
    pq.write_table(pa.Table.from_pylist(rows, schema=PAIR_CANDIDATES), path)
    extra = []
    for name in ("length", "overlap"):
        out = tmp_path / "scores" / name / "again" / path.name
        score_shard(filters.make(name), path, out)
        extra.append(out)
    both = ([*cands, path], [*scores, *extra])
    summary, corpus, _ = run_select(tmp_path, both)
    steps = {r["step"]: r["pairs"] for r in summary["steps"]}
    assert steps["candidates"] == 107
    assert steps["max_tokens 30"] == 90 + 7
    assert steps["duplicates"] == 90 + 1
    assert corpus.filter(pl.col("method") == "paranmt")["pair_id"].to_list() == ["again-new"]
    assert set(repeated["pair_id"]) <= set(corpus["pair_id"])
    assert steps["near_duplicates"] == 90 + 1  # the numbers in every sentence keep them apart
    assert [r["step"] for r in summary["steps"]][-3:] == ["max_tokens 30", "duplicates", "near_duplicates"]
    summary, corpus, _ = run_select(tmp_path, both, dedup=False, near_duplicates=0)
    assert corpus.height == 97 and "duplicates" not in {r["step"] for r in summary["steps"]}


def test_the_paranmt_export_holds_the_chosen_score(tmp_path, mixed):
    cands, scores = mixed
    out = tmp_path / "sel"
    summary = select(cands, scores, out / "c.parquet", out / "c.tsv", out / "s.json",
                     SelectSettings(drop_identical=False, paranmt_score="overlap_1"),
                     out_paranmt=out / "c.paranmt.txt")
    lines = (out / "c.paranmt.txt").read_text().splitlines()
    corpus = pl.read_parquet(out / "c.parquet")
    assert len(lines) == corpus.height == summary["rows"]
    assert [float(x.split("\t")[2]) for x in lines] == pytest.approx(corpus["overlap_1"].to_list(),
                                                                      rel=1e-5)
    with pytest.raises(ValueError, match="paranmt_score: corpus.paranmt.txt needs a score"):
        select(scored_only(mixed), [], out / "d.parquet", out / "d.tsv", out / "d.json",
               SelectSettings(), out_paranmt=out / "d.txt")


def test_the_release_lines_are_one_a_pair_with_the_score_as_python_writes_it(tmp_path):
    """The TSV and ParaNMT lines written by polars are those a Python line a pair wrote: tabs
    and line breaks in a sentence made spaces, quotes and commas as they are, the score as
    ``.6g`` and ``nan`` where there is none."""
    from paramill.filters.select import _append_paranmt, _one_line, _write_lines

    s1 = ['a "quoted", one', "tab\there", "line\nbreak\r\n", "", "\u010d\u00e9 \u2019", "x\x0by"]
    s2 = ["b", "two\t\ttabs", "'single'", "empty left", "\U0001f600", "\\t"]
    scores = [0.1234567, None, float("nan"), 1e-7, 123456789.0, -0.5]
    frame = pl.DataFrame({"s1": s1, "s2": s2, "sc": scores}, schema={"s1": pl.String, "s2": pl.String,
                                                                   "sc": pl.Float64})
    flat = [(a.replace("\t", " ").replace("\n", " ").replace("\r", " "),
             b.replace("\t", " ").replace("\n", " ").replace("\r", " ")) for a, b in zip(s1, s2)]
    with open(tmp_path / "c.tsv", "wb") as fh:
        _write_lines(fh, frame.select(_one_line("s1"), _one_line("s2")))
        _write_lines(fh, frame.head(0).select(_one_line("s1"), _one_line("s2")))
    assert (tmp_path / "c.tsv").read_bytes() == "".join(f"{a}\t{b}\n" for a, b in flat).encode()
    lines = frame.select(_one_line("s1"), _one_line("s2"))
    _append_paranmt(tmp_path / "p.txt", lines, frame["sc"])
    _append_paranmt(tmp_path / "p.txt", lines.head(2), frame["sc"].head(2))
    values = ["nan" if v is None else f"{float(v):.6g}" for v in scores]
    expected = [f"{a}\t{b}\t{v}\n" for (a, b), v in zip(flat, values)]
    assert (tmp_path / "p.txt").read_bytes() == "".join(expected + expected[:2]).encode()
    assert values[:2] == ["0.123457", "nan"] and values[3] == "1e-07"


def test_by_method_summarises_each_method_streaming(tmp_path, mixed):
    from paramill.filters.methods import by_method
    cands, scores = mixed
    out = tmp_path / "m"
    out.mkdir()
    result = by_method(cands, scores, out / "m.tsv", out / "m.json", out / "m.png", sample=7)
    assert result["methods"]["paranmt"]["candidates"] == 10
    assert result["methods"]["beam"]["candidates"] == 100
    assert result["methods"]["paranmt"]["given_score"]["mean"] == pytest.approx(0.45)
    assert result["methods"]["paranmt"]["cost"] == {"mean": None, "std": None}
    beam = pl.concat([pl.read_parquet(c) for c in cands[:2]])
    assert result["methods"]["beam"]["cost"]["mean"] == pytest.approx(beam["fwd_nll"].mean())
    lines = (out / "m.tsv").read_text().splitlines()
    assert lines[0].startswith("method\tcandidates\t") and lines[1].startswith("beam\t100\t")
    assert (out / "m.png").stat().st_size > 5000 and (out / "m.png.prov.json").exists()


def scored_only(mixed):
    return [c for c in mixed[0] if "pairs" not in str(c)]


def test_select_excludes_heldout(tmp_path, scored):
    cands, scores = scored
    select_heldout(cands, tmp_path / "h.parquet", HeldoutSettings(size=10))
    held = set(pl.read_parquet(tmp_path / "h.parquet")["pair_id"])
    out = tmp_path / "s2"
    summary = select(cands, scores, out / "c.parquet", out / "c.tsv", out / "s.json",
                     SelectSettings(drop_identical=False), heldout=tmp_path / "h.parquet")
    corpus = pl.read_parquet(out / "c.parquet")
    assert corpus.height == 90 and not held & set(corpus["pair_id"])
    assert summary["steps"][1] == {"step": "heldout", "pairs": 90}


def test_a_selection_that_leaves_no_pair_names_the_step_and_the_setting(tmp_path, scored):
    cands, scores = scored
    out = tmp_path / "none"
    with pytest.raises(ValueError, match=r"filters.releases.tight: the selection left no pair: "
                       r"step 'cost in \[-inf, -1.0\]' took the last 100; change "
                       r"filters.releases.tight.bounds.cost"):
        select(cands, scores, out / "c.parquet", out / "c.tsv", out / "s.json",
               SelectSettings(drop_identical=False, bounds={"cost": [None, -1.0]}), name="tight")
    assert not (out / "c.tsv").exists()
    held = select_heldout(cands, tmp_path / "h.parquet", HeldoutSettings(max_share=1))
    assert held["heldout"] == 90  # every pair that differs from its reference
    with pytest.raises(ValueError, match="step 'identical' took the last 10; change "
                       "filters.select.drop_identical"):
        select(cands, scores, out / "c.parquet", out / "c.tsv", out / "s.json",
               SelectSettings(), heldout=tmp_path / "h.parquet")


def test_a_bit_flipped_in_a_score_or_heldout_table_stops_select_naming_the_file(tmp_path, scored):
    """select read the candidates, score tables and the held-out table with pl.read_parquet,
    which verifies no page checksum: a flipped bit read as another value or text, caught only
    by the inputs' sha256 records after the work, and not at all in a table without one."""
    from paramill.errors import InputError
    from tests.unit.test_bad_input import flip_in_page

    cands, scores = scored
    select_heldout(cands, tmp_path / "h.parquet", HeldoutSettings(size=10))
    for damaged, column in ((scores[0], 1), (tmp_path / "h.parquet", 0)):
        kept, record = damaged.read_bytes(), Path(f"{damaged}.prov.json")
        record.unlink(missing_ok=True)  # a table given as it is: only its pages' checksums
        flip_in_page(damaged, column=column)
        out = tmp_path / "s"
        with pytest.raises(InputError, match=rf"{damaged.name}: Parquet data cannot be read after row 0 "
                                             r"\(could not verify page integrity"):
            select(cands, scores, out / "c.parquet", out / "c.tsv", out / "s.json",
                   SelectSettings(drop_identical=False), heldout=tmp_path / "h.parquet")
        assert not out.exists() or not list(out.iterdir())
        damaged.write_bytes(kept)
    summary = select(cands, scores, tmp_path / "s" / "c.parquet", tmp_path / "s" / "c.tsv",
                     tmp_path / "s" / "s.json", SelectSettings(drop_identical=False), heldout=tmp_path / "h.parquet")
    assert summary["rows"] == 90


# -- analysis -------------------------------------------------------------------------

def test_entropy_and_repetition_by_hand():
    from collections import Counter

    assert entropy(Counter({"a": 1, "b": 1})) == pytest.approx(1.0)
    assert entropy(Counter({"a": 2, "b": 1, "c": 1})) == pytest.approx(1.5)
    # unigrams of >= 3 chars: "the" "cat" "the" "cat" "sat" -> 2 repeats of 5
    toks = "the cat the cat sat on".split()
    assert repeats(toks, 1, min_chars=3) == (2, 5)
    assert repetition_rate([toks], 1, min_chars=3) == pytest.approx(40.0)
    # trigrams: (the cat the) (cat the cat) (the cat sat) (cat sat on): none repeats
    assert repetition_rate([toks], 3) == 0.0
    assert repetition_rate(["a b c a b c".split()], 3) == pytest.approx(100 * 1 / 4)


def test_idf():
    idf = Idf(["a b", "a c", "a"])
    assert idf("a") == pytest.approx(0.0)
    assert idf("b") == pytest.approx(math.log(3))
    assert idf("unseen") == pytest.approx(math.log(3))
    assert idf.mean(["a", "b"]) == pytest.approx(math.log(3) / 2)


def test_range_labels_and_annotation_sample():
    assert range_labels([0.5]) == ["(-inf, 0.5]", "(0.5, inf]"]
    sample = pl.DataFrame({"candidate_id": [f"c{i}" for i in range(30)],
                           "en_ref": ["r"] * 30, "candidate": ["c"] * 30,
                           "parascore": [i / 30 for i in range(30)]})
    out = annotation_sample(sample, [0.5], per_range=4, seed=1)
    assert out.height == 8
    assert out.group_by("range").len().sort("range")["len"].to_list() == [4, 4]
    assert out.columns == ["range", "parascore", "s1", "s2", "candidate_id", "paraphrase", "fluency"]
    assert out.equals(annotation_sample(sample, [0.5], per_range=4, seed=1))


def test_release_docs(tmp_path, scored):
    cands, scores = scored
    out = tmp_path / "rel"
    select(cands, scores, out / "corpus.parquet", out / "corpus.tsv", out / "selection.json",
           SelectSettings(bounds={"overlap_1": [0.0, 0.9]}))
    stats = write_release_docs("default", cands, scores, out / "corpus.parquet",
                               out / "selection.json", out, AnalysisSettings(sample=60),
                               sources={"corpora": {"a": {"format": "tsv", "path": "a.tsv"}}})
    sheet = (out / "datasheet.md").read_text()
    assert "| overlap_1 | range | 0 | 0.9 |" in sheet
    assert "inherits CzEng's licence" in sheet and "| a | tsv | a.tsv |" in sheet
    assert stats["corpus"]["pairs"] == json.loads((out / "selection.json").read_text())["rows"]
    assert stats["corpus"]["avg_length_s1"] == pytest.approx(
        pl.read_parquet(out / "corpus.parquet")["s1"].map_elements(lambda s: len(s.split()),
                                                                    return_dtype=pl.Int64).mean())
    t9 = stats["references_vs_translations"]
    assert set(t9) == {"unigram_entropy", "trigram_entropy", "unigram_repetition", "trigram_repetition"}
    assert t9["unigram_repetition"]["translations"] > t9["unigram_repetition"]["references"]
    assert 40 <= stats["sample"] <= 100
    for name in ("stats.json", "annotation.tsv", "datasheet.md"):
        assert verify(out / name, recursive=False) == []


def test_release_dataset_card_loads_with_datasets_offline(tmp_path, scored, monkeypatch):
    import yaml

    from paramill.filters.release import dataset_card, size_category
    cands, scores = scored
    out = tmp_path / "rel"
    select(cands, scores, out / "corpus.parquet", out / "corpus.tsv", out / "selection.json",
           SelectSettings(bounds={"overlap_1": [0.0, 0.9]}))
    czeng = {"corpora": {"cz": {"format": "czeng1", "path": "/data/czeng16.gz"}}}
    write_release_docs("default", cands, scores, out / "corpus.parquet", out / "selection.json",
                       out, AnalysisSettings(sample=60), sources=czeng)
    text = (out / "README.md").read_text()
    assert text.startswith("---\n")
    header = yaml.safe_load(text.split("---\n")[1])
    rows = json.loads((out / "selection.json").read_text())["rows"]
    assert header["license"] == "other" and header["license_name"] == "czeng"
    assert header["language"] == ["en"] and header["size_categories"] == [size_category(rows)]
    assert header["configs"] == [{"config_name": "default",
                                  "data_files": [{"split": "train", "path": "corpus.parquet"}]}]
    digest = sha256_file(out / "corpus.parquet")
    assert f"`corpus.parquet` sha256 {digest}" in text and "`overlap_1` in [0.0, 0.9]" in text
    assert "built" not in text  # no date: a rebuild on another day gives the same bytes
    assert verify(out / "README.md", recursive=False) == []
    # the same facts give the same bytes (no clock inside)
    selection = json.loads((out / "selection.json").read_text())
    assert dataset_card("default", selection, czeng, digest) == text
    assert "license: unknown" in dataset_card("default", selection, {"pairs": {"p": {}}}, None)
    assert [size_category(n) for n in (0, 999, 1000, 9_999_999, 10**7)] == [
        "n<1K", "n<1K", "1K<n<10K", "1M<n<10M", "10M<n<100M"]
    # datasets reads it offline: the parquet builder on the folder, and the card's configs
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from datasets import load_dataset
    # (data_dir alone would read every file of the folder as Parquet, the .prov.json too)
    for args, kwargs in (((str(out),), {}),
                         (("parquet",), {"data_files": str(out / "corpus.parquet")})):
        data = load_dataset(*args, cache_dir=str(tmp_path / "cache"), **kwargs)["train"]
        assert data.num_rows == rows
        assert data[0]["s1"] == pl.read_parquet(out / "corpus.parquet")["s1"][0]


def test_analyse_ranges_and_classifier_correlation(tmp_path):
    frame = pl.DataFrame({"candidate_id": [f"c{i}" for i in range(40)], "rank": [1] * 40,
                          "en_ref": ["the a b c d e"] * 40,
                          "candidate": ["x " * (1 + i % 8) for i in range(40)],
                          "parascore": [0.1 + 0.02 * i for i in range(40)],
                          "overlap_3": [0.5] * 40,
                          "classifier": [1.0 - (i % 8) / 8 for i in range(40)]})
    corpus = tmp_path / "corpus.parquet"
    pl.DataFrame({"s1": ["a b"], "s2": ["b c"], "parascore": [0.5]}).write_parquet(corpus)
    stats, sample = analyse([frame], 40, corpus, AnalysisSettings())
    assert sample.height == 40
    batched = analyse(frame.iter_slices(7), 40, corpus, AnalysisSettings())  # as corpus_analysis reads
    assert batched[0] == stats and batched[1].equals(sample)
    ranges = {r["range"]: r for r in stats["parascore_ranges"]}
    assert sum(r["pairs"] for r in ranges.values()) == 40
    assert ranges["(0.2, 0.4]"]["trigram_overlap_mean"] == 0.5
    corr = stats["classifier_correlations"]
    assert corr["length"] == pytest.approx(-100.0)  # longer candidates, lower P(reference)
    assert corr["unigram_repetition"] is None  # "x" is shorter than 3 characters
    assert stats["corpus"]["avg_parascore"] == 0.5


def test_iter_scored_joins_every_score(tmp_path, scored):
    cands, scores = scored
    shards = list(iter_scored(cands, scores))
    assert len(shards) == 2
    assert {"length_ref", "overlap_1", "cost"} <= set(shards[0][1].columns)
    with pytest.raises(ValueError, match="no score files"):
        list(iter_scored(cands, scores[:1]))


def test_batch_scores_equal_the_pair_by_pair_reference():
    """The vectorised overlap/BLEU/length equal the per-pair functions on varied text."""
    import random

    from paramill.filters.base import Batch
    from paramill.text import tokenize

    rng = random.Random(3)
    words = ["the", "The", "cat", "sat", "on", "mat", ".", ",", "Ünïcode", "dog", "a", "it's", "3,5"]
    refs, cands = [], []
    for _ in range(300):  # lengths across every pad width and past it (the hashed path)
        ref = " ".join(rng.choice(words) for _ in range(rng.randint(0, rng.choice((12, 12, 30, 70)))))
        cand = " ".join(rng.choice(words) for _ in range(rng.randint(0, rng.choice((12, 12, 30, 70)))))
        refs.append(ref)
        cands.append(cand)
    frame = pl.DataFrame({"en_ref": refs, "candidate": cands})
    lengths = [max(len(tokenize(r)), len(tokenize(c))) for r, c in zip(refs, cands)]
    assert min(lengths) <= 8 and any(40 < n <= 64 for n in lengths) and max(lengths) > 64
    # the dense path (any thread count) and the hashed path give the same counts
    from paramill.filters.ngrams import _hashed, _side, batch_matches

    one, _, _ = batch_matches(frame["en_ref"], frame["candidate"], range(1, 5), threads=1)
    two, _, _ = batch_matches(frame["en_ref"], frame["candidate"], range(1, 5), threads=2)
    hashed = _hashed(_side(frame["en_ref"], True), _side(frame["candidate"], True), range(1, 5), len(refs))
    for n in range(1, 5):
        assert np.array_equal(one[n], hashed[n]) and np.array_equal(two[n], hashed[n])
    overlap = filters.make("overlap").score(Batch(frame))
    length = filters.make("length").score(Batch(frame))
    for method in ("nakov", "exp", "add-k"):
        bleu = filters.make("bleu", method=method).score(Batch(frame))["bleu"]
        for r, c, got in zip(refs, cands, bleu):
            assert got == pytest.approx(sentence_bleu(tokenize(c.lower()), tokenize(r.lower()), method), abs=1e-9)
    for i, (r, c) in enumerate(zip(refs, cands)):
        rt, ct = tokenize(r.lower()), tokenize(c.lower())
        assert length["length_ref"][i] == len(tokenize(r)) and length["length_cand"][i] == len(tokenize(c))
        for n in (1, 2, 3):
            assert overlap[f"overlap_{n}"][i] == pytest.approx(ngram_overlap(rt, ct, n))
    cased = filters.make("overlap", lowercase=False).score(Batch(frame))
    assert any(a != b for a, b in zip(cased["overlap_1"], overlap["overlap_1"]))


@pytest.mark.parametrize("width", [1, 7, 8, 9, 24, 25, 33, 63, 64])
def test_dense_counts_at_every_width_edge_equal_the_pair_by_pair_counts(width):
    """The bit-mask counts at each pad width's edges (both ways of building a mask, and
    the 64th bit), orders past the stored four included, against ngram_counts/matches."""
    import random

    from paramill.filters.ngrams import _equal_masks, batch_matches, matches, ngram_counts

    rng = random.Random(width)
    words = ["a", "b", "c", "the", "."]  # few words: repeated n-grams on both sides
    refs = [" ".join(rng.choice(words) for _ in range(width)) for _ in range(40)]
    cands = [" ".join(rng.choice(words) for _ in range(rng.randint(max(1, width - 3), width)))
             for _ in range(40)]
    refs[0] = cands[0] = " ".join(["a"] * width)  # every place equal: all bits set
    got, _, _ = batch_matches(pl.Series(refs), pl.Series(cands), range(1, 7), threads=2)
    for i, (r, c) in enumerate(zip(refs, cands)):
        for n in range(1, 7):
            assert got[n][i] == matches(ngram_counts(r.split(), n), ngram_counts(c.split(), n)), (i, n)
    assert got[1][0] == width and got[6][0] == max(0, width - 5)
    a = np.array([[rng.randrange(3) for _ in range(width)] for _ in range(5)], np.uint64)
    b = np.array([[rng.randrange(3) for _ in range(width)] for _ in range(5)], np.uint64)
    masks = _equal_masks(a, b)
    for p in range(5):
        for i in range(width):
            assert int(masks[p, i]) == sum(1 << j for j in range(width) if a[p, i] == b[p, j])


OUTSIDE_FILTER = '''
"""A filter from outside paramill: exclamation marks in the candidate."""
from dataclasses import dataclass

from paramill.filters.base import Column, Direction, Filter


@dataclass(frozen=True)
class Shout(Filter):
    name = "shout"
    doc = "Exclamation marks in the candidate (shout)."
    order = 99

    def columns(self):
        return [Column("shout", Direction.RANGE, "'!' in the candidate")]

    def score(self, batch):
        return {"shout": [float(c.count("!")) for c in batch.candidates]}
'''


def test_a_filter_from_another_package_joins_through_an_entry_point(tmp_path):
    """A package outside paramill declares a filter under the ``paramill.filters``
    entry-point group: the schema generator lists it and ``filters score`` runs it."""
    import subprocess
    import sys

    import yaml

    (tmp_path / "my_filters.py").write_text(OUTSIDE_FILTER)
    info = tmp_path / "my_filters-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-filters\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[paramill.filters]\nshout = my_filters\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    schema = yaml.safe_load(subprocess.run(
        [sys.executable, "-m", "paramill.cli", "config", "schema"], capture_output=True,
        text=True, env=env, check=True).stdout)
    filters = schema["properties"]["filters"]["properties"]
    assert filters["enabled"]["items"]["enum"][-1] == "shout" and "shout" in filters
    probe = ("import polars as pl; from paramill import filters; "
             "from paramill.filters.base import Batch; f = filters.make('shout'); "
             "print(type(f).__module__, f.score(Batch(pl.DataFrame("
             "{'en_ref': ['a .', 'b .'], 'candidate': ['a !!', 'b .']})))['shout'])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    assert done.stdout.split(maxsplit=1) == ["my_filters", "[2.0, 0.0]\n"], done.stderr


def test_a_release_says_how_many_paraphrases_are_distinct_and_which_repeats(tmp_path):
    """A trial's tiny models gave 362 paraphrases of 1,000 pairs, 163 distinct, one 21 times:
    the release's statistics and datasheet say so."""
    from paramill.filters.analysis import repetition
    from paramill.filters.release import datasheet

    path = tmp_path / "corpus.parquet"
    s2 = ["It rains."] * 6 + ["A cat sleeps.", "A dog barks.", "It rains.", "The sun."]
    pl.DataFrame({"s1": [f"r{i}" for i in range(10)], "s2": s2}).write_parquet(path, row_group_size=3)
    found = repetition(path)
    assert found == {"pairs": 10, "distinct": 4, "distinct_share": 0.4, "most_repeated": "It rains.",
                     "most_repeated_count": 7, "degenerate": True}
    selection = {"settings": {"bounds": {}, "max_tokens": 30, "drop_identical": True,
                              "exclude_heldout": True, "size": 0, "seed": 13},
                 "rows": 10, "steps": [], "score_columns": {}}
    sheet = datasheet("trial", selection, {"paraphrases": found, "corpus": {}}, {})
    assert 'Paraphrases: 4 distinct of 10 (40.0%); the most repeated, 7 times: "It rains.".' in sheet
    assert "**Degenerate candidates**" in sheet
    fine = {**found, "distinct": 10, "distinct_share": 1.0, "degenerate": False}
    assert "Degenerate" not in datasheet("x", selection, {"paraphrases": fine, "corpus": {}}, {})
