"""Pair corpora: each format's reader on hand-written lines (good and bad), ingest (rules,
dedup across corpora, rows adding up, provenance to the line), stats, and the CLI."""

import json
import subprocess
import sys

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paramill.errors import InputError
from paramill.pairs.ingest import PairCleanSettings, PairIngestSettings, ingest_pairs
from paramill.formats.references import systems
from paramill.pairs.readers import PairCorpusSpec, read_pairs
from paramill.pairs.stats import write_stats


def read(fmt, max_line_bytes=65536, batch_rows=50000, **spec):
    """The candidates of a pair corpus in layout ``fmt`` with settings ``spec``."""
    return read_pairs(PairCorpusSpec.from_dict("c", {"format": fmt, **spec}), max_line_bytes,
                      batch_rows)


def rows(candidates):
    return [(c.line_no, c.en_ref, c.candidate, c.method, c.rank, c.score, c.label, c.reason)
            for c in candidates]


def test_paranmt_keeps_the_given_score_and_rejects_bad_lines(write_file):
    path = write_file("p.txt.gz", ["He left.\tHe went away.\t0.83", "no tabs here",
                                   "A b.\tC d.\tmany", "A b.\tC d.\tnan", "X.\tY.\t0.5\textra"], "gz")
    got = rows(read("paranmt", path=str(path)))
    assert got[0] == (1, "He left.", "He went away.", "paranmt", 1, 0.83, None, None)
    assert [r[-1] for r in got[1:]] == ["column_count", "bad_score", "bad_score", "column_count"]
    assert list(read("paranmt", path=str(path)))[1].detail == "expected 3 tab-separated columns, found 1"


def test_parabank2_gives_one_ranked_candidate_per_paraphrase(write_file):
    path = write_file("pb.tsv.xz", ["0.71\tThe cat sat.\tA cat sat.\tThe cat was sitting.",
                                    "0.5\tonly a reference", "x\tRef.\tPara.",
                                    "0.2\tR.\t1\t2\t3\t4\t5\t6"], "xz")
    got = rows(read("parabank2", path=str(path)))
    assert got[:2] == [(1, "The cat sat.", "A cat sat.", "parabank2", 1, 0.71, None, None),
                       (1, "The cat sat.", "The cat was sitting.", "parabank2", 2, 0.71, None, None)]
    assert [r[-1] for r in got[2:]] == ["column_count", "bad_score", "column_count"]


def test_tsv_by_header_names_with_score_and_label(write_file):
    path = write_file("t.tsv", ["id\tlabel\ts2\ts1\tscore", "7\t1\tPara.\tRef.\t0.4",
                                "8\tmaybe\tP.\tR.\t0.1", "9\t0\tP2.\tR2.\t0.3"])
    got = rows(read("tsv", path=str(path), header=True, method="mine"))
    assert got[0] == (2, "Ref.", "Para.", "mine", 1, 0.4, 1, None)
    assert got[1][-1] == "bad_label" and got[2][6] == 0


def test_a_pair_corpus_header_without_header_true_is_an_error_not_a_pair(write_file):
    path = write_file("t.tsv", ["reference\tparaphrase\tscore", "Ref.\tPara.\t0.4"])
    with pytest.raises(InputError, match=r"t.tsv:1: this line holds column names \(reference, "
                                         r"paraphrase, score\), which would be read as a row"):
        list(read("tsv", path=str(path), columns=["s1", "s2", "score"]))
    assert rows(read("tsv", path=str(path), header=True))[0][:3] == (2, "Ref.", "Para.")


def test_tsv_without_a_reference_column_is_an_error(write_file):
    path = write_file("t.tsv", ["a\tb", "x\ty"])
    with pytest.raises(InputError, match=r"t.tsv:1: columns \['a', 'b'\] have no s1"):
        list(read("tsv", path=str(path), header=True))


def test_parquet_reads_s1_s2_with_row_numbers(tmp_path):
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"s1": ["a b", "c d"], "s2": ["b a", "d c"],
                             "score": [0.5, float("inf")]}), path)
    got = rows(read("parquet", path=str(path)))
    assert got[0] == (1, "a b", "b a", "parquet", 1, 0.5, None, None)
    assert got[1][-1] == "bad_score"
    # a NUL in a value is never text, as in a text line: the row is rejected, not glued
    pq.write_table(pa.table({"s1": ["a b", "c d", "e f"], "s2": ["b a", "d\x00 c", "f e"]}), path)
    got = rows(read("parquet", path=str(path)))
    assert [(r[0], r[-1]) for r in got] == [(1, None), (2, "not_text"), (3, None)]
    (bad,) = [c for c in read("parquet", path=str(path)) if c.reason]
    assert bad.detail.startswith("column s2: NUL at character 1: not text")
    pq.write_table(pa.table({"x": ["a"]}), tmp_path / "bad.parquet")
    with pytest.raises(InputError, match="have no s1"):
        list(read("parquet", path=str(tmp_path / "bad.parquet")))
    (tmp_path / "not.parquet").write_text("hello")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        list(read("parquet", path=str(tmp_path / "not.parquet")))


def test_references_pair_each_system_with_the_reference_line(write_file):
    ref = write_file("ref.en", ["One.", "Two.", "Three."])
    a = write_file("hyp.A.en", ["Uno.", "Dos.", "Tres."])
    b = write_file("hyp.B.en", [b"B1.", b"\xff bad", b"B3."])
    got = rows(read("references", reference=str(ref), hypotheses={"A": str(a), "B": str(b)}))
    assert got[:2] == [(1, "One.", "Uno.", "A", 1, None, None, None),
                       (1, "One.", "B1.", "B", 1, None, None, None)]
    assert got[3][:4] == (2, "Two.", got[3][2], "B") and got[3][-1] == "invalid_utf8"
    assert len(got) == 6


def test_references_of_different_lengths_is_an_error_naming_the_files(write_file):
    ref = write_file("ref.en", ["One.", "Two."])
    short = write_file("hyp.A.en", ["Uno."])
    with pytest.raises(InputError, match=r"hyp.A.en:.*ended after 1 lines but .*ref.en go on"):
        list(read("references", reference=str(ref), hypotheses={"A": str(short)}))


def test_a_system_that_is_the_reference_is_refused_before_any_job(write_file, tmp_path, monkeypatch):
    """A hypotheses glob that matches the reference too (``*.en``), or a system's file that
    is a copy of the reference, would pair every line with itself: refused when the config
    loads, naming the key, and by the reader, naming the file."""
    from paramill import config
    from paramill.io.yamlfiles import ConfigError

    monkeypatch.chdir(tmp_path)
    write_file("ref.en", ["One.", "Two."])
    write_file("hyp.A.en", ["Uno.", "Dos."])
    corpus = {"format": "references", "reference": "ref.en", "hypotheses": ["*.en"]}
    with pytest.raises(ConfigError, match=r"config key pairs.corpora.wmt.hypotheses: system ref is the "
                                          r"reference file ref.en \(a glob that matches it too\?\)"):
        config.resolve({"pairs": {"corpora": {"wmt": corpus}}})
    with pytest.raises(ValueError, match=r"hypotheses: system ref is the reference file"):
        list(read("references", reference="ref.en", hypotheses=["*.en"]))  # a spec made on the command line
    (tmp_path / "hyp.copy.en").write_bytes((tmp_path / "ref.en").read_bytes())
    copied = {**corpus, "hypotheses": ["hyp.*.en"]}
    with pytest.raises(ConfigError, match=r"system copy's file hyp.copy.en holds the same bytes as "
                                          r"the reference ref.en"):
        config.resolve({"pairs": {"corpora": {"wmt": copied}}})
    (tmp_path / "outputs").mkdir()
    with pytest.raises(ConfigError, match=r"system outputs's file outputs is a folder: name its files"):
        config.resolve({"pairs": {"corpora": {"wmt": {**corpus, "hypotheses": ["outputs"]}}}})
    (tmp_path / "hyp.copy.en").write_text("One.\nTwo!\n")  # same size, other bytes: a system
    assert config.resolve({"pairs": {"corpora": {"wmt": copied}}})
    assert len(list(read("references", reference="ref.en", hypotheses=["hyp.*.en"]))) == 4


def test_systems_are_named_by_what_their_file_names_do_not_share(tmp_path):
    for name in ("newstest2021.cs-en.hyp.Online-A.en", "newstest2021.cs-en.hyp.Facebook-AI.en"):
        (tmp_path / name).write_text("x\n")
    found = systems([str(tmp_path / "newstest2021.cs-en.hyp.*.en")])
    assert list(found) == ["Facebook-AI", "Online-A"]
    assert systems({"mine": "a.txt"}) == {"mine": "a.txt"}
    with pytest.raises(FileNotFoundError):
        systems([str(tmp_path / "nothing-*.en")])


def test_twitter_url_votes_label_and_reject(write_file):
    path = write_file("tw.txt", ["A b.\tC d.\t(5,6)\thttp://t.co/x", "E.\tF.\t(3,6)\tu",
                                 "G.\tH.\t(1,6)\tu", "I.\tJ.\t(7,6)\tu", "K.\tL.\t(4,6)"])
    got = rows(read("twitter-url", path=str(path)))
    assert got[0] == (1, "A b.", "C d.", "twitter-url", 1, 5 / 6, 1, None)
    assert [r[-1] for r in got[1:]] == ["debatable", "not_paraphrase", "bad_votes", "column_count"]
    kept = rows(read("twitter-url", path=str(path), keep="all"))
    assert kept[2][6] == 0 and kept[2][-1] is None


def test_twitter_url_raw_layout_crlf_and_compressed(write_file):
    """The released file's own layout: a space before each tab, votes as ``(n,6)`` or
    ``(n, 6)``, CRLF endings (the test file as republished), compressed."""
    raw = (b"Female supporters explain why . \tThese are the women who support Trump \t(5,6)"
           b"\thttps://t.co/kOopEWGVXr\r\n"
           b"Female supporters explain why . \tbut supporting the \t( 2 , 6 )\thttps://t.co/k\r\n"
           b"Female supporters explain why . \tWomen for Trump ROCK ! \t(3,6)\thttps://t.co/k\r\n")
    path = write_file("Twitter_URL_Corpus_test.txt.xz", raw, "xz")
    got = rows(read("twitter-url", path=str(path), keep="all"))
    assert got[0] == (1, "Female supporters explain why .", "These are the women who support Trump",
                      "twitter-url", 1, 5 / 6, 1, None)
    assert got[1][6] == 0 and got[1][5] == 2 / 6
    assert got[2][-1] == "debatable"


def test_spec_checks_what_each_format_needs():
    with pytest.raises(ValueError, match="pairs.corpora.w: format references needs"):
        PairCorpusSpec.from_dict("w", {"format": "references", "reference": "r.en"})
    with pytest.raises(ValueError, match="needs `path`"):
        PairCorpusSpec.from_dict("p", {"format": "paranmt"})
    with pytest.raises(ValueError, match="negative_votes"):
        PairCorpusSpec.from_dict("t", {"format": "twitter-url", "path": "x",
                                       "negative_votes": 4, "positive_votes": 4})


def _ingest(tmp_path, name, spec, prior=(), **clean):
    clean.setdefault("require_latin", True)
    return ingest_pairs(PairCorpusSpec.from_dict(name, spec), tmp_path / name,
                        PairCleanSettings(**clean), PairIngestSettings(shard_size=2),
                        prior_key_files=[tmp_path / p for p in prior])


@pytest.mark.parametrize("name,text,spec", [
    ("qqp.csv", "question1,question2,is_duplicate\n", {"format": "csv", "fields": {"s1": "question1", "s2": "question2"}}),
    ("p.tsv", "s1\ts2\n", {"format": "tsv", "header": True}),
    ("empty.txt", "", {"format": "paranmt"})])
def test_a_pair_corpus_that_yields_no_rows_is_an_error_unless_allowed(name, text, spec, tmp_path, capsys):
    """A header and no rows (or an empty file) made an empty corpus and exit 0: it is an
    error naming the file and the setting that allows it, and nothing is written."""
    from paramill.cli import main

    path = tmp_path / name
    path.write_text(text)
    spec = {**spec, "path": str(path)}
    with pytest.raises(InputError, match=rf"{name}: (yields no rows: a {spec['format']} pair corpus with "
                                         r"nothing in it \(.*\)|file is empty); give it its rows, or set "
                                         r"pairs.corpora.c.allow_empty: true"):
        _ingest(tmp_path, "c", spec)
    assert main(["pairs", "ingest", "--corpus", "c", "--spec", json.dumps(spec), "--out", str(tmp_path / "o")]) == 2
    assert "allow_empty: true" in capsys.readouterr().err and not (tmp_path / "o").exists()
    stats = _ingest(tmp_path, "c", {**spec, "allow_empty": True})
    assert stats["rows_in"] == 0 and stats["kept"] == 0


def test_a_bitext_corpus_that_yields_no_rows_is_an_error_unless_allowed(tmp_path):
    from paramill.bitext.readers import CorpusSpec, read_corpus

    for name, text, spec in (("b.tsv", "", {"format": "tsv"}),
                             ("b.csv", "cs,en\n", {"format": "csv"})):
        (tmp_path / name).write_text(text)
        given = {**spec, "path": str(tmp_path / name)}
        with pytest.raises(InputError, match=rf"{name}: .*give it its rows, or set bitext.corpora.b.allow_empty: true"):
            list(read_corpus(CorpusSpec.from_dict("b", given)))
        assert list(read_corpus(CorpusSpec.from_dict("b", {**given, "allow_empty": True}))) == []


def test_ingest_cleans_dedups_and_adds_up(write_file, tmp_path):
    path = write_file("p.txt", ["He left .\tHe went away .\t0.8", "bad",
                                "He  left .\tHe went away .\t0.7",  # a duplicate once normal
                                "Café .\tCoffee shop .\t0.6",  # latin-1: kept
                                "Tea €\tTea .\t0.6", "\tEmpty .\t0.5", "A b c\tA b c\t0.9"])
    stats = _ingest(tmp_path, "p", {"format": "paranmt", "path": str(path)})
    assert stats["rows_in"] == 7 == stats["kept"] + stats["rejected_total"]
    assert stats["rejected"] == {"column_count": 1, "duplicate": 1, "empty_ref": 1,
                                 "not_latin1": 1}
    shards = pl.read_parquet(tmp_path / "p/shard-*.parquet")
    assert shards["en_ref"].to_list() == ["He left .", "Café .", "A b c"]
    assert shards["pair_id"][0].startswith("p-") and shards["pair_id"][0].endswith("-1")
    assert shards["candidate_id"][1] == shards["pair_id"][1] + ":paranmt:1"
    assert shards["given_score"].to_list() == [0.8, 0.6, 0.9]
    assert shards["fwd_nll"].null_count() == 3  # no decoder
    rejected = pl.read_parquet(tmp_path / "p/rejected.parquet")
    dup = rejected.filter(pl.col("reason") == "duplicate").row(0, named=True)
    assert dup["line_no"] == 3 and dup["source_file"] == str(path)
    assert "earlier pair in this corpus" in dup["detail"]


def test_an_earlier_corpus_wins_duplicates(write_file, tmp_path):
    first = write_file("a.txt", ["One .\tUno .\t0.5"])
    second = write_file("b.tsv", ["One .\tUno .", "Two .\tDos ."])
    _ingest(tmp_path, "a", {"format": "paranmt", "path": str(first)})
    stats = _ingest(tmp_path, "b", {"format": "tsv", "path": str(second)}, prior=["a"])
    assert stats["kept"] == 1 and stats["rejected"] == {"duplicate": 1}
    rejected = pl.read_parquet(tmp_path / "b/rejected.parquet")
    assert "earlier pair corpus" in rejected["detail"][0]


def test_a_bad_file_leaves_nothing_behind(write_file, tmp_path):
    ref = write_file("ref.en", ["One.", "Two."])
    hyp = write_file("hyp.en", ["Uno."])
    with pytest.raises(InputError):
        _ingest(tmp_path, "m", {"format": "references", "reference": str(ref),
                                "hypotheses": {"s": str(hyp)}})
    assert not (tmp_path / "m").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".m")]


def test_no_readable_line_is_an_error_but_rejected_content_is_not(write_file, tmp_path):
    """Every line unreadable (a Twitter URL file read as two-column TSV) stops the stage with
    the file and line; a file whose every pair is read but labelled a non-paraphrase is data."""
    lines = ["A b.\tC d.\t(0,6)\thttp://t.co/x", "E f.\tG h.\t(1,6)\thttp://t.co/y"]
    path = write_file("tw.txt", lines)
    with pytest.raises(InputError, match=r"tw.txt:1: no line could be read as a tsv pair corpus "
                                         r"\(column_count 2\); this one: expected 2 tab-separated "
                                         r"columns, found 4\. Check the corpus's format"):
        _ingest(tmp_path, "t", {"format": "tsv", "path": str(path)})
    assert not (tmp_path / "t").exists()
    stats = _ingest(tmp_path, "u", {"format": "twitter-url", "path": str(path)})
    assert stats["kept"] == 0 and stats["rejected"] == {"not_paraphrase": 2}
    ref, hyp = write_file("ref.en", ["One .", "Two ."]), write_file("hyp.en", [b"\xff", b"\xfe"])
    with pytest.raises(InputError, match=r"hyp.en:1: no line could be read as a references pair "
                                         r"corpus \(invalid_utf8 2\)"):
        _ingest(tmp_path, "r", {"format": "references", "reference": str(ref),
                                "hypotheses": {"s": str(hyp)}})


def test_stats_gather_counts_per_method(write_file, tmp_path):
    ref = write_file("ref.en", ["One .", "Two ."])
    write_file("hyp.a.en", ["Uno .", "Dos ."])
    b = write_file("hyp.b.en", ["One .", "€ ."])
    _ingest(tmp_path, "m", {"format": "references", "reference": str(ref),
                            "hypotheses": [str(tmp_path / "hyp.*.en")]})
    summary = write_stats([tmp_path / "m"], tmp_path / "s.json", tmp_path / "s.tsv")
    assert summary["corpora"]["m"]["by_method"] == {"a": {"kept": 2},
                                                   "b": {"kept": 1, "not_latin1": 1}}
    assert "m\tb\tnot_latin1\t1" in (tmp_path / "s.tsv").read_text()
    assert json.loads((tmp_path / "s.json.prov.json").read_text())["rule"] == "pairs_stats"
    del b


def test_read_pairs_dispatches_on_the_format(write_file):
    path = write_file("p.tsv", ["R.\tP."])
    spec = PairCorpusSpec.from_dict("t", {"format": "tsv", "path": str(path), "method": "own"})
    assert rows(read_pairs(spec)) == [(1, "R.", "P.", "own", 1, None, None, None)]


def test_cli_ingest_reports_and_exits_2_on_a_bad_file(write_file, tmp_path):
    path = write_file("p.txt", ["A .\tB .\t0.5", "bad"])
    cmd = [sys.executable, "-m", "paramill.cli", "pairs", "ingest", "--corpus", "c", "--spec",
           json.dumps({"format": "paranmt", "path": str(path)}), "--out", str(tmp_path / "out")]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "2 candidates, 1 kept" in done.stdout + done.stderr
    empty = write_file("empty.txt", b"")
    cmd[cmd.index("--spec") + 1] = json.dumps({"format": "paranmt", "path": str(empty)})
    cmd[-1] = str(tmp_path / "out2")
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 2 and "empty.txt" in done.stderr and "empty" in done.stderr


def test_a_corpus_can_keep_its_duplicates_to_compare_systems(write_file, tmp_path):
    ref = write_file("ref.en", ["One .", "Two ."])
    a = write_file("hyp.a.en", ["Uno .", "Dos ."])
    b = write_file("hyp.b.en", ["Uno .", "Deux ."])  # the same output as system a on line 1
    spec = {"format": "references", "reference": str(ref),
            "hypotheses": {"a": str(a), "b": str(b)}}
    deduped = _ingest(tmp_path, "d", spec)
    assert deduped["by_method"]["b"] == {"kept": 1, "duplicate": 1}
    kept = _ingest(tmp_path, "k", {**spec, "dedup": False})
    assert kept["by_method"]["b"] == {"kept": 2} and kept["kept"] == 4
    assert pl.read_parquet(tmp_path / "k/keys.parquet").height == 0


# -- strict parsing: labels, scores, votes, headers, specs (trust, round 2) --------------

def test_parquet_labels_are_parsed_strictly(tmp_path):
    path = tmp_path / "l.parquet"
    labels = ["1", "0", "no", "false", "TRUE", "2", "-1", None]
    pq.write_table(pa.table({"s1": [f"r{i}" for i in range(8)], "s2": [f"c{i}" for i in range(8)],
                             "label": labels}), path)
    got = list(read("parquet", path=str(path)))
    assert [(c.label, c.reason) for c in got] == [
        (1, None), (0, None), (None, "bad_label"), (0, None), (1, None), (None, "bad_label"),
        (None, "bad_label"), (None, None)]
    assert got[2].detail == "column label: label 'no' is not 0/1/true/false"
    ints = tmp_path / "i.parquet"
    pq.write_table(pa.table({"s1": ["a", "b", "c"], "s2": ["x", "y", "z"], "label": [1, 2, -1]}), ints)
    assert [c.reason for c in read("parquet", path=str(ints))] == [None, "bad_label", "bad_label"]
    flags = tmp_path / "b.parquet"
    pq.write_table(pa.table({"s1": ["a", "b"], "s2": ["x", "y"], "label": [True, False]}), flags)
    assert [c.label for c in read("parquet", path=str(flags))] == [1, 0]
    floats = tmp_path / "f.parquet"  # pandas makes a label column with gaps float64
    pq.write_table(pa.table({"s1": ["a", "b", "c", "d"], "s2": ["w", "x", "y", "z"],
                             "label": [1.0, 0.0, 0.5, None]}), floats)
    assert [(c.label, c.reason) for c in read("parquet", path=str(floats))] == [
        (1, None), (0, None), (None, "bad_label"), (None, None)]


def test_parquet_text_and_score_columns_are_checked(tmp_path):
    numbers = tmp_path / "n.parquet"
    pq.write_table(pa.table({"s1": [1, 2], "s2": ["x", "y"]}), numbers)
    with pytest.raises(InputError, match=r"n.parquet: column s1 holds int64, not text"):
        list(read("parquet", path=str(numbers)))
    raw = tmp_path / "b.parquet"
    pq.write_table(pa.table({"s1": ["a"], "s2": pa.array([b"x"])}), raw)
    with pytest.raises(InputError, match=r"b.parquet: column s2 holds binary, not text"):
        list(read("parquet", path=str(raw)))
    categories = tmp_path / "c.parquet"  # pandas' category, polars' Categorical: text
    pq.write_table(pa.table({"s1": pa.array(["a b", "c d"]).dictionary_encode(),
                             "s2": pa.array(["b a", "d c"], pa.large_string())}), categories)
    assert [(c.en_ref, c.candidate) for c in read("parquet", path=str(categories))] == [
        ("a b", "b a"), ("c d", "d c")]
    scores = tmp_path / "s.parquet"
    pq.write_table(pa.table({"s1": ["a", "b", "c", "d"], "s2": ["w", "x", "y", "z"],
                             "score": ["0.5", "high", "1_0", "nan"]}), scores)
    got = list(read("parquet", path=str(scores)))
    assert [(c.score, c.reason) for c in got] == [(0.5, None), (None, "bad_score"),
                                                  (None, "bad_score"), (None, "bad_score")]
    assert got[1].detail == "column score: score 'high' is not a finite number"


@pytest.mark.parametrize("score", ["1_0", "١٢", "５", "nan", "inf", "0x1p3", "1.2.3", ""])
def test_scores_are_plain_ascii_decimals(write_file, score):
    path = write_file("p.txt", [f"A b.\tC d.\t{score}", "A b.\tC d.\t-1.5e-2"])
    got = rows(read("paranmt", path=str(path)))
    assert got[0][-1] == "bad_score" and got[1][5] == -0.015


@pytest.mark.parametrize("votes,reason", [("(0, 0)", "bad_votes"), ("(7, 6)", "bad_votes"),
                                          ("(٣, 6)", "bad_votes"), ("(3,6)", "debatable"),
                                          ("( 5 , 6 )", None)])
def test_twitter_url_votes_are_checked_not_divided_by_zero(write_file, votes, reason):
    path = write_file("u.tsv", [f"one two three\tfour five six\t{votes}\thttp://x",
                                "seven\teight\t(1,6)\thttp://x"])  # a file with one readable line
    got, _ = list(read("twitter-url", path=str(path), keep="all"))
    assert got.reason == reason
    if reason is None:
        assert got.score == 5 / 6 and got.label == 1


def test_a_header_naming_a_column_twice_is_refused_as_bitext_and_as_pairs(write_file):
    from paramill.bitext.readers import CorpusSpec, read_corpus

    bitext = write_file("b.tsv", ["cs\ten\ten", "Ahoj.\tHello.\tHi."])
    with pytest.raises(InputError, match=r"b.tsv:1: columns .* name en more than once"):
        list(read_corpus(CorpusSpec.from_dict("b", {"format": "tsv", "path": str(bitext),
                                                    "header": True})))
    pairs = write_file("p.tsv", ["s1\ts2\tx\tx", "a\tb\tc\td"])
    with pytest.raises(InputError, match=r"p.tsv:1: columns .* name x more than once"):
        list(read("tsv", path=str(pairs), header=True))


@pytest.mark.parametrize("spec,message", [
    ("[1, 2]", "pairs.corpora.c: a corpus is an object of keys, not a list"),
    ('{"format": "tsv", "path": "x", "colour": 1}', "pairs.corpora.c: unknown keys ['colour']"),
    ('{"format": "twitter-url", "path": "x", "positive_votes": "4"}',
     "setting pairs.corpora.c.positive_votes: '4' is not of type 'integer'"),
    ('{"format": "tsv", "path": "x", "header": "false"}',
     "setting pairs.corpora.c.header: 'false' is not of type 'boolean'"),
])
def test_a_bad_spec_is_one_error_naming_the_key(tmp_path, capfd, spec, message):
    from paramill.cli import main

    code = main(["pairs", "ingest", "--corpus", "c", "--spec", spec, "--out", str(tmp_path / "o")])
    err = capfd.readouterr().err
    assert code == 2 and f"paramill pairs ingest: error: {message}" in err, err
    assert "Traceback" not in err and not (tmp_path / "o").exists()


def test_a_prior_keys_file_without_a_key_column_is_refused(write_file, tmp_path):
    path = write_file("p.txt", ["He left.\tHe went away.\t0.83"])
    bad = tmp_path / "keys.parquet"
    pq.write_table(pa.table({"hash": pa.array([1], pa.uint64())}), bad)
    spec = PairCorpusSpec.from_dict("c", {"format": "paranmt", "path": str(path)})
    with pytest.raises(InputError, match=r"keys.parquet: a key file needs a `key` column"):
        ingest_pairs(spec, tmp_path / "o", PairCleanSettings(), PairIngestSettings(), [bad])
    signed = tmp_path / "signed.parquet"
    pq.write_table(pa.table({"key": pa.array([1], pa.int64())}), signed)
    with pytest.raises(InputError, match=r"column key holds int64, not uint64"):
        ingest_pairs(spec, tmp_path / "o", PairCleanSettings(), PairIngestSettings(), [signed])
    assert not (tmp_path / "o").exists()


def test_bucket_and_batch_rows_bound_memory_without_changing_what_is_written(write_file, tmp_path):
    """``pairs.clean.bucket_rows`` and ``pairs.ingest.batch_rows`` are launch-only (x-launch:
    the rules pass them outside their params): many hash buckets and small batches keep the
    same pairs, in the same order, and reject the same duplicates as one bucket."""
    lines = [f"Sentence {i % 700} .\tPhrase {i % 700} .\t0.5" for i in range(2500)]
    path = write_file("p.txt", lines)
    written = []
    for bucket_rows, batch_rows in ((1_000_000, 50000), (1000, 7)):
        out = tmp_path / f"{bucket_rows}-{batch_rows}"
        stats = ingest_pairs(PairCorpusSpec.from_dict("p", {"format": "paranmt", "path": str(path)}),
                             out, PairCleanSettings(bucket_rows=bucket_rows),
                             PairIngestSettings(shard_size=300, batch_rows=batch_rows))
        written.append((stats["kept"], stats["rejected"], pl.read_parquet(out / "shard-*.parquet"),
                        pl.read_parquet(out / "rejected.parquet").drop("detail")))
    (kept, rejected, shards, dropped), other = written
    assert kept == 700 and rejected == {"duplicate": 1800}
    assert other[:2] == (kept, rejected) and other[2].equals(shards)
    assert other[3].sort("line_no").equals(dropped.sort("line_no"))
