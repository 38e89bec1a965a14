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


def test_bleu_from_running_sums_is_sacrebleus_corpus_bleu_on_pieces(caplog):
    """The diversity measures sum each pair's n-gram counts as the tables stream by (a corpus
    of tens of millions of candidates held them all in memory: 7.9 GB at 1M); the BLEU of
    the sums is sacrebleu's corpus BLEU of the same pairs, short and empty lines included,
    without its warning that lines ending in " ." look tokenised."""
    import logging
    import random

    import sacrebleu

    from paramill.nmt.diversity import Against, Grams

    rnd = random.Random(3)
    words = ["▁the", "▁dog", "▁runs", ".", "▁a", "▁cat", "▁sleeps", "▁ran", ","]
    hyps = [["▁the", "▁dog", "▁runs", "."]] * 60 + [["▁a", "▁cat", "▁sleeps", "."]] * 60
    refs = [["▁the", "▁dog", "▁ran", "."]] * 60 + [["▁a", "▁cat", "▁sleeps", "."]] * 60
    hyps += [rnd.choices(words, k=rnd.randint(0, 6)) for _ in range(200)] + [[], ["."]]
    refs += [rnd.choices(words, k=rnd.randint(0, 6)) for _ in range(200)] + [["."], []]
    for cut in (120, len(hyps)):
        summed = Against()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="sacrebleu"):
            for h, r in zip(hyps[:cut], refs[:cut]):
                summed.add(Grams(h), Grams(r))
            score = summed.bleu()
        assert caplog.records == []
        plain = sacrebleu.corpus_bleu([" ".join(h) for h in hyps[:cut]],
                                      [[" ".join(r) for r in refs[:cut]]], tokenize="none").score / 100.0
        assert score == plain and 0.05 < score < 1.0
        assert summed.iou / summed.n == pytest.approx(
            sum(bag_iou(h, r) for h, r in zip(hyps[:cut], refs[:cut])) / cut)


def test_diversity_streams_the_tables_and_gives_what_the_whole_corpus_gives(tmp_path):
    """Read a record batch at a time, each table summed on its own (in worker processes when
    the job has threads) and the sums added, the measures are those of the whole corpus at
    once: sacrebleu's corpus BLEU of each rank against the references, and between a
    source's own ranks. A source whose candidates run on across tables (here one over
    three, the middle table holding only its second rank; and an empty table) is one source."""
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq
    import sacrebleu
    import sentencepiece as spm

    from paramill.nmt.diversity import diversity
    from paramill.nmt.subwords import Segmenter

    rnd = random.Random(7)
    words = "the a dog cat runs sleeps ran old man reads book slowly house big small".split()
    rows = []
    for source in range(40):
        ref = " ".join(rnd.choices(words, k=rnd.randint(3, 9)))
        ranks = 3 if source == 20 else rnd.randint(1, 3)
        for rank in range(1, 1 + ranks):
            rows.append((f"s{source}", ref, " ".join(rnd.choices(words, k=rnd.randint(2, 9))), rank))
    (tmp_path / "text.txt").write_text("\n".join(r[1] + "\n" + r[2] for r in rows) + "\n")
    spm.SentencePieceTrainer.train(input=str(tmp_path / "text.txt"), model_prefix=str(tmp_path / "en"),
                                   vocab_size=40, hard_vocab_limit=False, minloglevel=2)
    cut = next(i for i, r in enumerate(rows) if r[0] == "s20")
    files = []
    for part, chunk in enumerate((rows[:cut + 1], rows[cut + 1:cut + 2], [], rows[cut + 2:])):
        files.append(tmp_path / f"shard-{part}.parquet")
        pq.write_table(pa.table({"pair_id": pa.array([r[0] for r in chunk], pa.string()),
                                 "en_ref": pa.array([r[1] for r in chunk], pa.string()),
                                 "candidate": pa.array([r[2] for r in chunk], pa.string()),
                                 "rank": pa.array([r[3] for r in chunk], pa.int64())}), files[-1])
    model = tmp_path / "en.model"
    whole = diversity(files, model)
    assert diversity(files, model, batch_rows=4) == whole
    assert diversity(files, model, batch_rows=4, workers=2) == whole
    assert whole["sources"] == 40 and whole["candidates"] == len(rows)
    seg = Segmenter(model)
    firsts = [r for r in rows if r[3] == 1]
    hyps, refs = seg.encode([r[2] for r in firsts]), seg.encode([r[1] for r in firsts])
    bleu = sacrebleu.corpus_bleu([" ".join(h) for h in hyps], [[" ".join(r) for r in refs]],
                                 tokenize="none", force=True).score / 100
    assert whole["by_rank"][0] == {"rank": 1, "n": 40, "one_minus_bleu": round(1 - bleu, 4),
                                   "bag_iou": round(sum(bag_iou(h, r) for h, r in zip(hyps, refs)) / 40, 4),
                                   "length_ratio": round(sum(len(h) / len(r) for h, r in zip(hyps, refs)) / 40, 4)}
    assert [p["ranks"] for p in whole["between_ranks"]] == ["1-2", "1-3", "2-3"]
    ranks = {}
    for r in rows:
        ranks.setdefault(r[0], {})[r[3]] = r[2]
    both = [(own[1], own[2]) for own in ranks.values() if 2 in own]
    one, two = seg.encode([b[0] for b in both]), seg.encode([b[1] for b in both])
    between = sacrebleu.corpus_bleu([" ".join(h) for h in two], [[" ".join(r) for r in one]],
                                    tokenize="none", force=True).score / 100
    assert whole["between_ranks"][0] == {"ranks": "1-2", "n": len(both), "one_minus_bleu": round(1 - between, 4),
                                         "bag_iou": round(sum(map(bag_iou, two, one)) / len(both), 4)}


def test_diversity_names_the_row_where_a_sources_candidates_are_not_adjacent(tmp_path):
    """A hand-made candidate table whose source comes back after another's would count it
    twice and split its ranks' comparisons: an error naming the table, the row and where the
    source was first, before anything is written."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import sentencepiece as spm

    from paramill.errors import InputError
    from paramill.nmt.diversity import write_diversity

    (tmp_path / "text.txt").write_text("a dog runs\nthe cat sleeps\na man reads\n" * 5)
    spm.SentencePieceTrainer.train(input=str(tmp_path / "text.txt"), model_prefix=str(tmp_path / "en"),
                                   vocab_size=20, hard_vocab_limit=False, minloglevel=2)
    table = tmp_path / "c.parquet"
    pq.write_table(pa.table({"pair_id": ["p1", "p1", "p2", "p1"], "en_ref": ["a dog runs"] * 2 + ["the cat"] + ["a dog runs"],
                             "candidate": ["a dog", "dog runs", "a cat", "the dog"], "rank": [1, 2, 1, 3]}), table)
    outs = [tmp_path / "d.tsv", tmp_path / "d.json"]
    with pytest.raises(InputError, match=r"c\.parquet: row 4: pair_id 'p1' again, after other "
                                         r"sources \(its first candidate is row 1\)"):
        write_diversity([table], tmp_path / "en.model", *outs)
    assert not any(o.exists() for o in outs) and list(tmp_path.glob("d.*")) == []


def test_the_back_translation_summary_is_streamed_with_exact_counts_and_means(tmp_path):
    """`nmt stats` over candidate tables a record batch at a time: sources counted by their
    rank-1 candidate (distinct ids, all held at once, grew 2.6x from 0.2M to 3M 1-best
    candidates), the best candidate's shares and means, nulls left out of a mean."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from paramill.nmt.stats import summarize

    rows = [("p1", 1, "A cat.", "A cat.", 1.0), ("p1", 2, "A cat.", "The cat.", 2.0),
            ("p2", 1, "Big dog", "BIG DOG", None), ("p3", 1, "Rain", "  ", 3.0),
            ("p3", 2, "Rain", "It rains", 5.0)]
    for part, chunk in enumerate((rows[:3], rows[3:])):
        pq.write_table(pa.table({k: [r[i] for r in chunk] for i, k in enumerate(
            ("pair_id", "rank", "en_ref", "candidate", "fwd_nll"))}), tmp_path / f"s{part}.parquet")
    files = [tmp_path / "s0.parquet", tmp_path / "s1.parquet"]
    summary = summarize(files, batch_rows=2)
    assert summary == {"candidates": 5, "sources": 3, "mean_fwd_nll": 11 / 4, "shards": 2, "best": {
        "identical_to_reference": round(1 / 3, 6), "lowercase_identical": round(2 / 3, 6),
        "empty": round(1 / 3, 6), "mean_fwd_nll_best": 2.0,
        "mean_chars_ratio": round((1 + 1 + 2 / 4) / 3, 6)}}
    assert summarize(files) == summary
