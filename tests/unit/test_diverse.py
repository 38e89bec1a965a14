"""ParaBank 2 sampling pieces that need no model: constraints, clustering, diversity."""

import pytest

from paramill.nmt.cluster import REFERENCE, best_per_cluster, cluster_units, kmedoids
from paramill.nmt.sampling import constraint_tokens, contains
from paramill.nmt.diversity import bag_iou


def test_constraints_are_seeded_word_subsets():
    ref = "The old man reads a long book , slowly ."
    sets = constraint_tokens(ref, 5, 0.3, seed=1, pair_id="p1")
    assert len(sets) == 5
    words = {"The", "old", "man", "reads", "a", "long", "book", "slowly"}
    for s in sets:
        assert len(s) == 2 and set(s) <= words  # round(0.3 * 8) words, never punctuation
    assert sets == constraint_tokens(ref, 5, 0.3, seed=1, pair_id="p1")
    assert sets != constraint_tokens(ref, 5, 0.3, seed=2, pair_id="p1")
    assert constraint_tokens("!!", 2, 0.5, 1, "p") == [[], []]
    assert constraint_tokens("one", 1, 0.01, 1, "p") == [["one"]]  # at least one


def test_suppressions_leave_out_pieces_the_model_cannot_produce(tmp_path):
    from paramill.nmt.sampling import suppressions, target_vocabulary

    class Seg:
        def encode(self, tokens):
            return [["\u2581" + t[:2], t[2:]] if len(t) > 2 else ["\u2581" + t] for t in tokens]

    (tmp_path / "target_vocabulary.json").write_text('["<unk>", "\u2581bo", "ok", "\u2581a"]')
    vocab = target_vocabulary(tmp_path)
    assert suppressions(["book", "a", "cat"], Seg(), vocab) == [["\u2581bo", "ok"], ["\u2581a"]]
    assert len(suppressions(["book", "a", "cat"], Seg())) == 3
    assert target_vocabulary(tmp_path / "none") is None


def test_contains():
    assert contains(["▁a", "▁b", "c"], ["▁b", "c"])
    assert not contains(["▁a", "▁b", "c"], ["▁a", "c"])


def test_cluster_units_lowercase_and_drop_punctuation():
    assert cluster_units(["▁The", "▁cat", "▁,", ".", "▁", "s", "'s"]) == ["▁the", "▁cat", "s", "'s"]


ITEMS = ["the cat sat on the mat",          # 0: the reference itself
         "the cat sat on a mat",            # 1: near the reference
         "a dog ran in the park",           # 2
         "a dog ran in a park",             # 3
         "the dog ran in the park",         # 4
         "i like green tea very much",      # 5
         "i like green tea much"]           # 6


def test_kmedoids_on_a_hand_made_set():
    items = [s.split() for s in ITEMS]
    ref = ITEMS[0].split()
    result = kmedoids(items, ref, k=2)
    # the reference cluster holds the two near-copies; dogs and teas form their own clusters
    assert result.assignment[:2] == [REFERENCE, REFERENCE]
    assert len({result.assignment[i] for i in (2, 3, 4)}) == 1
    assert len({result.assignment[i] for i in (5, 6)}) == 1
    assert result.assignment[2] != result.assignment[5] and REFERENCE not in (result.assignment[2], result.assignment[5])
    assert result.converged
    # medoid of the dog cluster: "a dog ran in the park" is 1 edit from both others
    dog = result.assignment[2]
    assert result.centres[dog - 1] == 2
    # the best-scored item per non-reference cluster, best first; never the reference's
    scores = [0.1, 0.2, 0.9, 0.5, 0.7, 0.8, 0.3]
    picked = best_per_cluster(result, scores, n=5)
    assert picked == [(6, result.assignment[6]), (3, dog)]
    assert all(cluster != REFERENCE for _, cluster in picked)
    assert best_per_cluster(result, scores, n=1) == [(6, result.assignment[6])]


def test_kmedoids_furthest_first_and_degenerate_cases():
    ref = ["x"]
    assert kmedoids([], ref).assignment == []
    same = kmedoids([["x"], ["x"]], ref, k=3)  # every item equals the reference
    assert same.assignment == [REFERENCE, REFERENCE] and same.centres == []
    far = kmedoids([["a"], ["a", "b", "c", "d"], ["a", "b"]], ref, k=1)
    assert far.centres == [1]  # the item furthest from the reference starts the cluster


def test_bag_iou():
    assert bag_iou(["a", "b", "b"], ["b", "b", "c"]) == pytest.approx(2 / 4)
    assert bag_iou([], []) == 1.0


def test_bleu_on_pieces_scores_without_the_tokenised_period_warning(caplog):
    import logging

    import sacrebleu

    from paramill.nmt.diversity import _bleu

    hyps = [["▁the", "▁dog", "▁runs", "."]] * 60 + [["▁a", "▁cat", "▁sleeps", "."]] * 60
    refs = [["▁the", "▁dog", "▁ran", "."]] * 60 + [["▁a", "▁cat", "▁sleeps", "."]] * 60
    with caplog.at_level(logging.WARNING, logger="sacrebleu"):
        score = _bleu(hyps, refs)
    assert caplog.records == []
    plain = sacrebleu.corpus_bleu([" ".join(h) for h in hyps], [[" ".join(r) for r in refs]],
                                  tokenize="none").score / 100.0
    assert score == plain and 0.3 < score < 1.0
