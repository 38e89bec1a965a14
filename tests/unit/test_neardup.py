"""Near-duplicate pairs (paramill.text.neardup) and their step in selection."""

import numpy as np
import polars as pl
import pytest

from paramill.filters.select import SelectSettings, select
from paramill.text.dedup import DUP_HERE, KEEP
from paramill.text import neardup
from paramill.text.neardup import (NEAR, NUM_PERM, NearDuplicates, bands_for, jaccard, jaccards,
                                   shingle_hashes, signatures)

from .test_filters import write_candidates

DEFAULT = SelectSettings().near_duplicates  # 0.7


def near_marks(pairs, tmp_path, threshold=DEFAULT, ngram=2, marks=None, batch=None, **kw):
    near = NearDuplicates(tmp_path / "near", threshold, ngram, **kw)
    batch = batch or len(pairs)
    for i in range(0, len(pairs), batch):
        chunk = pairs[i:i + batch]
        near.add(pl.Series([a for a, _ in chunk]), pl.Series([b for _, b in chunk]))
    marks = np.zeros(len(pairs), dtype=np.uint8) if marks is None else marks
    found = near.mark(marks)
    assert found == int((marks == NEAR).sum())
    assert not list((tmp_path / "near").iterdir())  # nothing left on disk
    return marks.tolist()


def shingles(pair, ngram=2):
    h, _ = shingle_hashes(pl.Series([pair[0]]), pl.Series([pair[1]]), ngram)
    return np.unique(h >> np.uint64(32)).astype(np.uint32)


A = ("The storm knocked out power to thousands of homes across southern Florida on Tuesday.",
     "Thousands of homes in southern Florida lost power when the storm hit on Tuesday.")
#: A with one word changed
A1 = ("The storm knocked out power to thousands of homes across northern Florida on Tuesday.", A[1])
#: different sentences of the same words
A_MIXED = ("On Tuesday the homes of southern Florida knocked out thousands across the storm to power.",
           "When the storm lost power in southern Florida on Tuesday, homes of thousands hit.")
B = ("The central bank raised interest rates by half a point.",
     "Interest rates went up by half a point at the central bank.")


def test_a_pair_differing_in_one_word_is_caught_at_the_default_threshold(tmp_path):
    assert DEFAULT == 0.7
    assert jaccard(shingles(A), shingles(A1)) >= DEFAULT
    assert near_marks([A, B, A1], tmp_path) == [KEEP, KEEP, NEAR]


def test_different_sentences_of_shared_words_are_not(tmp_path):
    assert jaccard(shingles(A), shingles(A_MIXED)) < 0.3
    assert near_marks([A, A_MIXED], tmp_path) == [KEEP, KEEP]
    # short ones too: the same five words, another sentence
    dog = ("The dog bit the man.", "A dog bit a man.")
    man = ("The man bit the dog.", "A man bit a dog.")
    assert near_marks([dog, man], tmp_path) == [KEEP, KEEP]


def test_the_sentences_order_does_not_matter_and_case_and_punctuation_do_not(tmp_path):
    swapped = (A[1], A[0])
    shouting = (A[0].upper().replace(".", " !"), A[1])
    assert near_marks([A, swapped, shouting], tmp_path) == [KEEP, NEAR, NEAR]
    assert jaccard(shingles(A), shingles(swapped)) == 1.0


def test_only_a_kept_pair_is_an_original(tmp_path):
    """A ~ B ~ C with A and C apart: B goes (near A), C stays (B was not kept); a pair that
    exact dedup took is no one's original either."""
    words = "one two three four five six seven eight nine ten eleven twelve".split()
    a = " ".join(words)
    b = " ".join(words[:9] + ["x", "y", "z"])  # a's first nine words, c's last three
    c = " ".join(words[:6] + ["p", "q", "r", "x", "y", "z"])
    ja, jc = shingles((a, a)), shingles((c, c))
    jb = shingles((b, b))
    threshold = 0.5
    assert jaccard(ja, jb) >= threshold and jaccard(jb, jc) >= threshold > jaccard(ja, jc)
    assert near_marks([(a, a), (b, b), (c, c)], tmp_path, threshold) == [KEEP, NEAR, KEEP]
    marks = np.array([DUP_HERE, KEEP, KEEP], dtype=np.uint8)
    assert near_marks([(a, a), (b, b), (c, c)], tmp_path, threshold, marks=marks) == \
        [DUP_HERE, KEEP, NEAR]


def test_the_marks_do_not_depend_on_batches_buckets_or_threads(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(300)]
    pairs = []
    for i in range(400):
        if i > 10 and rng.random() < 0.3:  # an earlier pair with one word changed
            left, right = pairs[int(rng.integers(0, i))]
            toks = left.split()
            toks[int(rng.integers(0, len(toks)))] = vocab[int(rng.integers(0, 300))]
            pairs.append((" ".join(toks), right))
        else:
            pairs.append((" ".join(rng.choice(vocab, 12)), " ".join(rng.choice(vocab, 12))))
    one = near_marks(pairs, tmp_path)
    assert 60 < one.count(NEAR) < 130
    assert near_marks(pairs, tmp_path, batch=37, bucket_rows=50, threads=2) == one
    monkeypatch.setattr(neardup, "LINK_BATCH", 7)  # the candidates checked a few at a time
    assert near_marks(pairs, tmp_path, batch=100, threads=3) == one
    # no pair is marked that is not that close to a kept pair before it; LSH misses few
    sets = [shingles(p) for p in pairs]
    close = []
    for i, mark in enumerate(one):
        best = max((jaccard(sets[i], sets[j]) for j in range(i) if one[j] == KEEP), default=0)
        assert mark == KEEP or best >= DEFAULT, i
        close.append(best >= DEFAULT)
    assert one.count(NEAR) >= 0.98 * sum(close)


def test_shingle_hashes_are_fixed_values():
    """The marks must not change with a library's version: the hashes are ours."""
    h, rows = shingle_hashes(pl.Series(["Hello, World!"]), pl.Series([None]), 2)
    assert rows.tolist() == [0, 0, 0, 0]  # ^ hello, hello world, world $ ; and the empty side's
    again, _ = shingle_hashes(pl.Series(["hello   world"]), pl.Series([""]), 2)
    assert h.tolist() == again.tolist()
    assert len(set(h.tolist())) == 4


def test_the_similarities_checked_at_once_are_each_pairs_own():
    rng = np.random.default_rng(1)
    first = [rng.integers(0, 50, rng.integers(1, 30)).astype(np.uint32) for _ in range(200)]
    second = [rng.integers(0, 50, rng.integers(1, 30)).astype(np.uint32) for _ in range(200)]
    second[0] = first[0][::-1].copy()  # the same set
    second[1] = first[1] + np.uint32(2 ** 31)  # none shared
    second[2] = np.full(3, 2 ** 32 - 1, dtype=np.uint32)  # the largest value, repeated
    got = jaccards(first, second)
    assert got[0] == 1.0 and got[1] == 0.0
    assert got.tolist() == [jaccard(a, b) for a, b in zip(first, second)]
    assert len(jaccards([], [])) == 0


@pytest.mark.parametrize("threads", [1, 3])
def test_a_signature_holds_each_permutations_minimum_top_bits(threads):
    rng = np.random.default_rng(2)
    rows = np.sort(np.r_[np.arange(5), rng.integers(0, 5, 40)])
    hashes = rng.integers(0, 2 ** 63, len(rows), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    sig = signatures(hashes, rows, 5, threads)
    for k in (0, 1, NUM_PERM - 1):
        values = [(int(h) * int(neardup._A[k]) + int(neardup._B[k])) % 2 ** 64 >> 32 for h in hashes]
        for r in range(5):
            assert sig[r, k] == min(v for v, at in zip(values, rows) if at == r)


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.8, 0.9])
def test_the_bands_catch_a_pair_at_the_threshold(threshold):
    bands, rows = bands_for(threshold)
    assert bands * rows <= NUM_PERM
    assert 1 - (1 - threshold ** rows) ** bands >= 0.99


def test_selection_drops_near_duplicates_across_corpora_with_their_own_step(tmp_path):
    first = write_candidates(tmp_path / "candidates" / "a" / "shard-00000.parquet",
                             [("a0", *A, 0.1), ("a1", *B, 0.1)])
    second = write_candidates(tmp_path / "candidates" / "b" / "shard-00000.parquet",
                              [("b0", *A1, 0.1), ("b1", *A_MIXED, 0.1)])
    out = tmp_path / "sel"
    summary = select([first, second], [], out / "c.parquet", out / "c.tsv", out / "s.json",
                     SelectSettings())
    steps = {r["step"]: r["pairs"] for r in summary["steps"]}
    assert steps["duplicates"] == 4 and steps["near_duplicates"] == 3
    assert pl.read_parquet(out / "c.parquet")["pair_id"].to_list() == ["a0", "a1", "b1"]
    summary = select([first, second], [], out / "c.parquet", out / "c.tsv", out / "s.json",
                     SelectSettings(near_duplicates=0))
    assert "near_duplicates" not in {r["step"] for r in summary["steps"]}
    assert summary["rows"] == 4
