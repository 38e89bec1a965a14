import hashlib

import polars as pl
import pytest

from paramill.bitext.clean import CleanSettings, apply_rules, clean
from paramill.text.dedup import pair_keys
from paramill.bitext.ingest import IngestSettings, ingest
from paramill.bitext.readers import CorpusSpec
from paramill.io.jsonfiles import read_json


def reasons(rows, **settings):
    frame = pl.DataFrame({"cs": [r[0] for r in rows], "en": [r[1] for r in rows]})
    return apply_rules(frame, CleanSettings(**settings))["reason"].to_list()


def test_each_rule_names_its_reason():
    rows = [
        ("Muž čte knihu.", "The man reads a book."),
        ("   ", "Hello."),
        ("Ahoj.", "\u00a0"),
        ("Hello there.", "Hello there."),
        ("Muž čte.", "The man reads for 5 \u20ac."),
        ("Мужчина читает.", "The man reads."),
        ("Ano.", "Yes."),
        ("Ano, ano.", "Yes, indeed, my dear friend, I will come along."),
        ("The old man reads the paper every morning.", "The old man reads a paper each morning."),
    ]
    assert reasons(rows, min_tokens=2) == [None, "empty_cs", "empty_en", "identical",
                                           "not_latin1_en", "not_latin2_cs", None, "length_ratio",
                                           "not_czech"]
    assert reasons([("a b c", "a b c d")], max_tokens=3, min_czech=0) == ["too_long"]
    assert reasons([("Ano", "Yes")], min_tokens=2) == ["too_short"]


def test_rules_can_be_switched_off():
    rows = [("Hello there.", "Hello there."), ("Muž.", "Pay 5 \u20ac.")]
    assert reasons(rows, drop_identical=False, require_latin=False) == [None, None]
    english = [("The old man reads the paper every morning.", "The old man reads a paper.")]
    assert reasons(english) == ["not_czech"]
    assert reasons(english, min_czech=0) == [None]


def test_rules_normalise_text_and_keep_the_raw_form():
    frame = apply_rules(pl.DataFrame({"cs": ["\u201eAhoj\u201c"], "en": ["\u201cHi\u201d"]}),
                        CleanSettings())
    assert frame["cs"][0] == '"Ahoj"' and frame["cs_raw"][0] == "\u201eAhoj\u201c"


def test_rules_count_the_tokens_of_the_normalised_text_once_for_checks_and_averages(tmp_path):
    """The token counts the rules read are columns of their own, of the normalised sides;
    clean's average token counts are theirs over the kept rows."""
    from paramill import text

    rows = [("\u201eMu\u017e\u201c \u010dte\u2026", "The\u00a0man \u2013 reads."),
            ("a\x07b  c", "x\u200by z"), ("Ano.", "Yes, indeed, my dear friend, I will come.")]
    frame = apply_rules(pl.DataFrame({"cs": [r[0] for r in rows], "en": [r[1] for r in rows]}),
                        CleanSettings())
    for side in ("cs", "en"):
        assert frame[f"{side}_tokens"].to_list() == [
            len(text.tokenize(text.normalize(r[side == "en"]))) for r in rows]
    assert frame["cs_tokens"].to_list() == [7, 2, 2] and frame["reason"][2] == "length_ratio"
    stats, kept, _, _ = run_clean(tmp_path, "t", rows)
    assert stats["kept"] == 2
    assert stats["avg_tokens_cs"] == 4.5 and stats["avg_tokens_en"] == 3.5


def test_pair_keys_are_stable_and_distinguish_sides():
    keys = pair_keys(["a", "a", "a\tb"], ["b\tc", "b\tc", ""])
    assert keys[0] == keys[1]
    expected = int.from_bytes(hashlib.blake2b(b"x\ty", digest_size=8).digest(), "little")
    assert int(pair_keys(["x"], ["y"])[0]) == expected
    assert len(set(pair_keys(["a", "b"], ["b", "a"]).tolist())) == 2


def test_pair_keys_are_the_digests_of_each_pair_formatted_in_python():
    """The keys made in bulk (polars' joined text, one buffer of digests) are those of each
    pair's ``f"{a}\t{b}"`` in UTF-8, for lists and Series alike: keys written before stay
    valid (an earlier corpus's key file, a resumed run)."""
    import random

    import numpy as np

    rng = random.Random(3)
    alphabet = ["a", "Z", " ", "\t", "\u00e9", "\u010d", "\u2019", "\U0001f600", "\u4e2d", "0"]
    left = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(3000)]
    right = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(3000)]
    left[5], right[7] = None, None
    expected = np.array([int.from_bytes(hashlib.blake2b(f"{a}\t{b}".encode(), digest_size=8)
                                        .digest(), "little") for a, b in zip(left, right)],
                        dtype=np.uint64)
    for keys in (pair_keys(left, right), pair_keys(pl.Series(left), pl.Series(right))):
        assert keys.dtype == np.uint64 and keys.flags.writeable
        assert np.array_equal(keys, expected)
    assert pair_keys([], []).shape == (0,)


def run_clean(tmp_path, name, lines, prior=(), batch_rows=4, shard_size=3, threads=1, **settings):
    tmp_path.mkdir(parents=True, exist_ok=True)
    src = tmp_path / f"{name}.tsv"
    src.write_text("".join(f"{cs}\t{en}\n" for cs, en in lines))
    spec = CorpusSpec.from_dict(name, {"format": "tsv", "path": str(src)})
    ingest(spec, tmp_path / "ingest" / name, IngestSettings(shard_size=shard_size))
    out = tmp_path / "clean"
    stats = clean(name, tmp_path / "ingest" / name, out / f"{name}-shards",
                  out / f"{name}.rejected.parquet", out / f"{name}.keys.parquet",
                  out / f"{name}.stats.json", prior_key_files=list(prior),
                  settings=CleanSettings(**settings), shard_size=shard_size, batch_rows=batch_rows,
                  threads=threads)
    kept = pl.scan_parquet(out / f"{name}-shards" / "*.parquet").collect() if stats["kept"] else None
    rejected = pl.read_parquet(out / f"{name}.rejected.parquet")
    return stats, kept, rejected, out / f"{name}.keys.parquet"


LINES = [("Muž čte.", "The man reads."), ("Žena píše.", "The woman writes."),
         ("Muž čte.", "The man reads."),  # exact duplicate
         ("\u201eMuž\u201c čte.", "\u201cThe man\u201d reads."),
         ("\u201eMuž\u201c  čte.", '"The man" reads.'),  # duplicate after normalisation
         ("", "Nothing."), ("Pes.", "The dog."), ("Žena píše.", "The woman writes.")]


def test_clean_keeps_first_occurrences_and_adds_up(tmp_path):
    stats, kept, rejected, _ = run_clean(tmp_path, "a", LINES)
    assert kept["line_no"].to_list() == [1, 2, 4, 7]
    assert kept["cs"][2] == '"Muž" čte.'
    assert stats["rejected"] == {"duplicate": 3, "empty_cs": 1}
    assert stats["rows_in"] == 8 == stats["kept"] + stats["rejected_total"]
    dup = rejected.filter(pl.col("reason") == "duplicate").sort("line_no")
    assert dup["line_no"].to_list() == [3, 5, 8]
    assert dup["cs"][1] == '"Muž" čte.'  # duplicates show the normalised text that matched
    empty = rejected.filter(pl.col("reason") == "empty_cs")
    assert empty["en"].to_list() == ["Nothing."]
    assert set(stats["shards"].values()) <= {3, 1} and sum(stats["shards"].values()) == 4
    # outcomes per input shard (ingest wrote 3 lines a shard)
    assert stats["by_input_shard"] == {
        "shard-00000.parquet": {"duplicate": 1, "kept": 2},
        "shard-00001.parquet": {"duplicate": 1, "empty_cs": 1, "kept": 1},
        "shard-00002.parquet": {"duplicate": 1, "kept": 1},
    }


def test_earlier_corpora_win_duplicates(tmp_path):
    _, _, _, keys_a = run_clean(tmp_path, "a", LINES)
    stats, kept, rejected, _ = run_clean(
        tmp_path, "b", [("Pes.", "The dog."), ("Kočka.", "The cat."), ("Kočka.", "The cat.")],
        prior=[keys_a])
    assert kept["cs"].to_list() == ["Kočka."]
    assert sorted(rejected["detail"].to_list()) == [
        "duplicate of a pair in an earlier corpus", "duplicate of an earlier pair in this corpus"]


def test_many_buckets_give_the_same_result_as_one(tmp_path):
    lines = [(f"Věta {i % 700}.", f"Sentence {i % 700}.") for i in range(2500)]
    one = run_clean(tmp_path / "one", "x", lines, batch_rows=300, shard_size=400, bucket_rows=1_000_000)
    many = run_clean(tmp_path / "many", "x", lines, batch_rows=300, shard_size=400, bucket_rows=1000)  # 4 buckets
    assert one[0]["kept"] == many[0]["kept"] == 700
    assert one[1].drop("source_file").equals(many[1].drop("source_file"))
    keys_one = pl.read_parquet(one[3])["key"]
    keys_many = pl.read_parquet(many[3])["key"]
    assert keys_many.is_sorted() and keys_one.sort().equals(keys_many)


def test_worker_processes_give_what_one_process_gives(tmp_path):
    lines = LINES * 3 + [("The weather is nice today in Prague.", "The weather is nice today.")]
    one = run_clean(tmp_path / "one", "x", lines, min_czech=0.5)
    two = run_clean(tmp_path / "two", "x", lines, min_czech=0.5, threads=2)  # 7 batches of 4
    assert one[0]["rejected"] == two[0]["rejected"] and one[0]["rejected"]["not_czech"] == 1
    assert one[0]["by_input_shard"] == two[0]["by_input_shard"]
    assert one[1].drop("source_file").equals(two[1].drop("source_file"))
    assert one[2].drop("source_file").equals(two[2].drop("source_file"))
    assert pl.read_parquet(one[3]).equals(pl.read_parquet(two[3]))


def test_dedup_can_be_switched_off(tmp_path):
    stats, kept, _, keys = run_clean(tmp_path, "a", LINES, dedup=False)
    assert stats["kept"] == 7 and "duplicate" not in stats["rejected"]
    assert pl.read_parquet(keys).height == 0


def test_clean_writes_stats_and_provenance(tmp_path):
    stats, *_ = run_clean(tmp_path, "a", LINES)
    assert read_json(tmp_path / "clean" / "a.stats.json") == stats
    record = read_json(tmp_path / "clean" / "a.stats.json.prov.json")
    assert record["rule"] == "clean" and record["rows_in"] == 8 and record["rows_out"] == 4
    assert record["params"]["max_tokens"] == 100


def test_unknown_setting_is_refused():
    with pytest.raises(ValueError, match="unknown CleanSettings keys"):
        CleanSettings.from_dict({"max_tokenz": 3})
