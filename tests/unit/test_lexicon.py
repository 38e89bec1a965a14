"""Lexicon counts and PMI by hand, the Hong Kong effect, SimLex reading and scoring."""

import math

import polars as pl
import pyarrow.parquet as pq
import pytest

from paramill.errors import InputError
from paramill.lexicon.pmi import _SpillBuffer, LexiconSettings, count_and_score
from paramill.formats import simlex as simlex_format
from paramill.lexicon.simlex import evaluate
from paramill.provenance import verify

PAIRS = [("hong kong big", "hong kong large"), ("big house", "large house")]
PLAIN = LexiconSettings(min_parascore=None, stopwords=False, min_count=1, smoothing=1.0, partitions=3)


def build(tmp_path, pairs, settings=PLAIN, **extra):
    corpus = tmp_path / "corpus.parquet"
    pl.DataFrame({"s1": [a for a, _ in pairs], "s2": [b for _, b in pairs], **extra}).write_parquet(corpus)
    stats = count_and_score([corpus], tmp_path / "lex.tsv", tmp_path / "nb.tsv", tmp_path / "stats.json", settings)
    table = pl.read_csv(tmp_path / "lex.tsv", separator="\t")
    return stats, {(u, v): r for u, v, *r in table.iter_rows()}


def test_pmi_by_hand_and_the_hong_kong_effect(tmp_path):
    stats, lex = build(tmp_path, PAIRS)
    # cross pairs (u in one side, v in the other, both directions, u != v): 7+3+7+3
    assert stats["cross_total"] == 20
    assert stats["within_ref_total"] == 8 and stats["within_trans_total"] == 8
    count, cross, adjusted = lex[("big", "large")]
    assert count == 2 and cross == pytest.approx(math.log(2 * 20 / (2 * 2)), abs=1e-4)
    # big and large never share a sentence on a side where both occur: no ordinary PMI
    assert adjusted == pytest.approx(cross, abs=1e-4)
    count, cross, adjusted = lex[("hong", "kong")]
    assert count == 2 and cross == pytest.approx(math.log(10), abs=1e-4)
    # within each side hong and kong share one sentence: ordinary = log((1+1) * 8 / (1 * 1))
    assert adjusted == pytest.approx(math.log(10) - math.log(16), abs=1e-4)
    assert adjusted < cross and lex[("big", "large")][2] > adjusted  # Hong Kong drops below big/large
    assert lex[("large", "big")] == lex[("big", "large")]  # symmetric
    assert ("house", "house") not in lex
    neighbours = dict(pl.read_csv(tmp_path / "nb.tsv", separator="\t").iter_rows())
    assert neighbours["big"].split()[0] == "large"
    assert verify(tmp_path / "lex.tsv", recursive=False) == []


def test_filters_min_count_and_stop_words(tmp_path):
    pairs = PAIRS + [("the big house", "a large house")] * 3
    settings = LexiconSettings(min_parascore=0.35, stopwords=True, min_count=4, partitions=2)
    stats, lex = build(tmp_path, pairs, settings, parascore=[0.9, 0.1, 0.5, 0.5, 0.5])
    assert stats["pairs_read"] == 5 and stats["pairs_used"] == 4  # one pair below 0.35
    # big/large: 1 (first pair) + 3; big/house only 3; "the" and "a" are stop words
    assert set(lex) == {("big", "large"), ("large", "big")} and lex[("big", "large")][0] == 4
    stats, lex = build(tmp_path, [("he doesn't like it", "he does not like it")] * 2,
                       LexiconSettings(min_parascore=None, min_count=1))
    assert set(lex) == set() and stats["vocabulary_kept"] == 1  # only "like": no pair
    long = [(" ".join(["w"] * 31), "x y")]
    stats, _ = build(tmp_path, long, LexiconSettings(min_parascore=None, min_count=1))
    assert stats["pairs_used"] == 0
    # a side of one 70 KB "word" is no sentence: left out as one over max_tokens (1,000 pairs
    # of a 10 MB word were counted and paired: 276 s and 22.9 GB)
    stats, lex = build(tmp_path, [("x" * 70_000 + " big", "large")] + PAIRS, PLAIN)
    assert stats["pairs_read"] == 3 and stats["pairs_used"] == 2
    assert stats["vocabulary"] == 5 and ("big", "large") in lex
    with pytest.raises(ValueError, match="no parascore column"):
        build(tmp_path, PAIRS, LexiconSettings())


def test_simlex_reader_and_scores(tmp_path):
    simlex = tmp_path / "simlex.txt"
    simlex.write_text("word1\tword2\tPOS\tSimLex999\tconc(w1)\n"
                      "Big\tlarge\tA\t9.5\t1\nhong\tkong\tN\t1.0\t1\nbig\thouse\tN\t2.0\t1\nsea\tsky\tN\t0.5\t1\n")
    assert simlex_format.read(simlex)[0] == ("big", "large", 9.5)
    build(tmp_path, PAIRS)
    result = evaluate(tmp_path / "lex.tsv", simlex, tmp_path / "s.tsv", tmp_path / "s.json")
    by = {r["score"]: r for r in result["results"]}
    assert by["pmi_cross"]["seen"] == 3 and by["pmi_cross"]["coverage"] == 0.75
    from scipy.stats import spearmanr

    gold = [9.5, 1.0, 2.0, 0.5]  # big/large, hong/kong, big/house, sea/sky (unseen: 0)
    cross = [math.log(10), math.log(10), math.log(5), 0.0]
    adjusted = [round(x, 4) for x in (math.log(10), math.log(10 / 16), math.log(5) - math.log(8), 0.0)]
    assert by["pmi_cross"]["spearman"] == pytest.approx(100 * spearmanr(gold, cross).statistic, abs=0.01)
    assert by["pmi_adjusted"]["spearman"] == pytest.approx(100 * spearmanr(gold, adjusted).statistic, abs=0.01)
    bad = tmp_path / "bad.txt"
    bad.write_text("a\tb\tc\n")
    with pytest.raises(InputError, match="word1, word2 and SimLex999"):
        simlex_format.read(bad)
    bad.write_text("word1\tword2\tSimLex999\nx\ty\tnan-ish\n")
    with pytest.raises(InputError, match="bad.txt:2"):
        simlex_format.read(bad)

    # the lexicon handed to it: another table ended in polars' ColumnNotFoundError naming no
    # file, a score that is not a number in its parse error, a NaN score in a NaN correlation
    header = "u\tv\tcount\tpmi_cross\tpmi_adjusted\n"
    for text, problem in (("w1\tw2\tpmi\nbig\tlarge\t2\n",
                           r"lex2.tsv:1: not a lexicon from `paramill lexicon build`: its header "
                           r"has no u, v, pmi_cross, pmi_adjusted \(it has w1, w2, pmi\)"),
                          (header + "big\tlarge\t3\tx\t1\n", r"lex2.tsv: not a readable lexicon \(could not "
                                                          r"parse `x`"),
                          (header + "big\tlarge\t3\tnan\t1\n", r"lex2.tsv: the scores of 'big' / 'large' "
                                                            r"are not finite numbers"),
                          # a tab doubled: polars read the count as pmi_cross (3.0 for 0.5)
                          (header + "big\tlarge\t\t3\t0.5\t1\n", r"lex2.tsv: not a readable lexicon "
                           r"\(a line has more fields than the header's 5 \(a tab doubled\?\)\)"),
                          # a tab lost, or a score left out: its score was null, and the pair unseen
                          (header + "\nbig\tlarge\t3\t0.5\n", r"lex2.tsv:3: not a readable lexicon: "
                           r"an empty field, or fewer fields than the header's 5 \(a tab lost\?\)"),
                          (header + "odd\tone\t3\t\t1\n", r"lex2.tsv:2: not a readable lexicon: an empty")):
        (tmp_path / "lex2.tsv").write_text(text)
        with pytest.raises(InputError, match=problem):
            evaluate(tmp_path / "lex2.tsv", simlex, tmp_path / "s2.tsv", tmp_path / "s2.json")
    assert not list(tmp_path.glob("s2.*"))


def test_partitions_and_chunks_do_not_change_the_lexicon(tmp_path):
    import random

    rng = random.Random(3)
    words = [f"w{i:02d}" for i in range(40)]
    pairs = []
    for _ in range(300):
        s1 = rng.choices(words, weights=range(40, 0, -1), k=rng.randint(3, 9))
        s2 = [w if rng.random() < 0.7 else rng.choice(words) for w in s1]
        pairs.append((" ".join(s1), " ".join(s2)))
    tables = []
    # one chunk and one spill; a spill per chunk; several chunks summed into each spill
    for i, (chunk, parts, spill) in enumerate(((1000, 1, 10**6), (7, 5, 1), (50, 16, 200))):
        d = tmp_path / str(i)
        d.mkdir()
        settings = LexiconSettings(min_parascore=None, stopwords=False, min_count=3, chunk_pairs=chunk,
                                   partitions=parts, spill_rows=spill)
        build(d, pairs, settings)
        tables.append((d / "lex.tsv").read_text())
    assert tables[0] == tables[1] == tables[2]
    table = pl.read_csv(tmp_path / "1" / "lex.tsv", separator="\t")
    assert table.height > 100
    # sorted by u, then adjusted PMI from the highest, then v
    assert table.rows() == table.sort(["u", "pmi_adjusted", "v"], descending=[False, True, False]).rows()
    # symmetric: (u, v) and (v, u) both listed with the same numbers
    rows = {(u, v): rest for u, v, *rest in table.iter_rows()}
    assert all(rows[(v, u)] == rest for (u, v), rest in rows.items())
    assert all(c >= 3 for c in table["count"])


def test_token_pattern_is_configurable_and_checked(tmp_path):
    pairs = [("don't go to x-ray", "do not visit x-ray")] * 2
    plain = LexiconSettings(min_parascore=None, stopwords=False, min_count=1, partitions=2)
    _, default = build(tmp_path, pairs, plain)
    assert ("don", "not") in default and ("x", "ray") in default  # split at ' and -
    assert not any("x-ray" in pair or "don't" in pair for pair in default)
    whole = LexiconSettings(**{**plain.__dict__, "token_pattern": r"[\w'-]+|[^\w\s]"})
    _, lex = build(tmp_path, pairs, whole)
    assert ("don't", "not") in lex and ("x-ray", "visit") in lex
    assert ("don", "not") not in lex and ("x", "ray") not in lex
    (tmp_path / "bad").mkdir()
    for bad in ({"token_pattern": "(unclosed"}, {"word_pattern": "[z-a]"}):
        with pytest.raises(ValueError, match="not a valid regex"):
            build(tmp_path / "bad", pairs, LexiconSettings(**{**plain.__dict__, **bad}))
        assert not (tmp_path / "bad" / "lex.tsv").exists()
    with pytest.raises(ValueError, match="no such file"):
        build(tmp_path, pairs, LexiconSettings(**{**plain.__dict__, "stoplist": str(tmp_path / "none.txt")}))


def test_spill_buffer_sums_chunks_and_appends_to_one_file_a_partition(tmp_path):
    settings = LexiconSettings(spill_rows=5, partitions=2)
    buffer = _SpillBuffer(tmp_path, "cross", settings)
    chunk = lambda keys: pl.DataFrame({"k": keys, "n": [1] * len(keys)},  # noqa: E731
                                      schema={"k": pl.UInt64, "n": pl.UInt32})
    buffer.add(chunk([1, 2]))
    buffer.add(chunk([2, 3]))
    assert list(tmp_path.iterdir()) == [] and buffer.rows == 4
    buffer.add(chunk([3]))  # 5 rows: one spill of the three chunks, summed
    assert buffer.spills == 1 and buffer.rows == 0
    buffer.add(chunk([7, 2]))
    buffer.close()
    buffer.close()  # nothing left: no empty spill
    assert buffer.spills == 2
    # partition = (u + v) % 2 of key u << 32 | v: keys 1, 3 and 7 in p001, 2 in p000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cross-p000.parquet", "cross-p001.parquet"]
    assert pq.ParquetFile(tmp_path / "cross-p000.parquet").num_row_groups == 2  # one per spill
    p0 = pl.read_parquet(tmp_path / "cross-p000.parquet")
    p1 = pl.read_parquet(tmp_path / "cross-p001.parquet")
    assert p0.rows() == [(2, 2), (2, 1)]
    assert sorted(p1.rows()) == [(1, 1), (3, 2), (7, 1)]
