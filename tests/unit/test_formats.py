"""paramill.formats: one module per on-disk layout, one name, one reader for every stage."""

from __future__ import annotations

import pytest

from paramill.formats import reading, registry
from paramill.evaluate.sts import read as read_sts
from paramill.formats.rows import Bad
from paramill.formats import csvfile, twitter_url
from paramill.errors import InputError
from paramill.pairs.readers import PairCorpusSpec, read_pairs
from paramill.twitter.identify import read_labelled

LINES = ["A storm hits the town\tThe town is hit by a storm\t(5,6)\thttp://n.example/1",
         "A storm hits the town\tMy cat sleeps\t(0,6)\thttp://n.example/1",
         "Rates rise again\tThe bank raises rates\t(3,6)\thttp://n.example/2"]


def test_every_name_resolves_to_one_layout():
    assert registry.names()["twitter-url"] == "twitter-url"
    assert registry.names()["url_raw"] == registry.names()["twitter_url"] == "twitter-url"
    assert registry.layout("url_raw") is registry.layout("twitter-url") is twitter_url
    with pytest.raises(ValueError, match=r"unknown format 'twitter url'; known: .*twitter-url"):
        registry.layout("twitter url")


@pytest.mark.parametrize("kind", ["plain", "gz", "zst"])
def test_twitter_url_records_in_any_compression_with_crlf_and_bom(write_file, kind):
    data = ("\ufeff" + "\r\n".join(LINES) + "\r\n").encode()
    records = list(twitter_url.read(str(write_file("t.txt", data, kind))))
    assert [(r.line_no, r.s1, r.votes, r.total, r.url) for r in records] == [
        (1, "A storm hits the town", 5, 6, "http://n.example/1"),
        (2, "A storm hits the town", 0, 6, "http://n.example/1"),
        (3, "Rates rise again", 3, 6, "http://n.example/2")]
    assert [r.label() for r in records] == [1, 0, None]
    assert [r.label(positive=3, negative=0) for r in records] == [1, 0, 1]


def test_twitter_url_bad_lines_say_why(write_file):
    path = write_file("t.txt", [LINES[0], "only\ttwo", "a\tb\t(7,6)\tu", "a\tb\t(x,6)\tu",
                                b"a \xff\tb\t(1,6)\tu", "x" * 200, LINES[1]])
    records = list(twitter_url.read(str(path), max_line_bytes=100))
    bad = [(r.line_no, r.reason) for r in records if isinstance(r, Bad)]
    assert bad == [(2, "column_count"), (3, "bad_votes"), (4, "bad_votes"), (5, "invalid_utf8"),
                   (6, "line_too_long")]
    assert records[1].text == "only\ttwo" and "found 2" in records[1].detail
    assert records[5].text is None  # an over-long line is never held
    assert [r.line_no for r in records if not isinstance(r, Bad)] == [1, 7]


def test_the_stages_read_the_layout_alike(write_file):
    """The pair corpora, the identifier's labelled data and STS evaluation read the same
    pairs and votes from one file (each labels them by its own rule)."""
    path = write_file("t.txt", LINES)
    rows = list(read_pairs(PairCorpusSpec.from_dict(
        "t", {"format": "twitter-url", "path": str(path), "keep": "all"})))
    assert [(r.line_no, r.en_ref, r.candidate, r.label, r.reason) for r in rows] == [
        (1, "A storm hits the town", "The town is hit by a storm", 1, None),
        (2, "A storm hits the town", "My cat sleeps", 0, None),
        (3, "Rates rise again", "The bank raises rates", None, "debatable")]
    pairs, labels, dropped = read_labelled(path, "twitter-url")
    assert pairs == [(r.en_ref, r.candidate) for r in rows[:2]] and labels == [1, 0]
    assert dropped == 1
    sts = read_sts("t", 2026, "twitter-url", path)
    assert sts.s1 == [r.en_ref for r in rows] and sts.gold == [5.0, 0.0, 3.0]
    assert read_sts("t", 2026, "twitter_url", path).gold == sts.gold  # the old name


def test_sts_lines_are_strict_utf8(write_file):
    path = write_file("s.tsv", ["4.0\ta cat\ta kitten", b"3.0\ta \xff dog\ta hound"])
    with pytest.raises(InputError, match=r"s.tsv:2: invalid UTF-8"):
        read_sts("s", 2026, "tsv", path)
    path = write_file("u.txt", [LINES[0], b"a \xff\tb\t(1,6)\tu"])
    with pytest.raises(InputError, match=r"u.txt:2: invalid UTF-8"):
        read_sts("u", 2026, "twitter-url", path)
    # a line without a usable score is skipped and counted, as in every STS layout
    assert read_sts("u", 2026, "twitter-url", write_file("v.txt", [LINES[0], "a\tb"])).skipped == 1


def test_pit2015_and_toks_are_read_alike_by_the_identifier_and_sts(write_file, tmp_path):
    from paramill.formats import pit2015, toks

    data = write_file("d.data", ["1\tt\tA storm hits\tThe storm hit\t(4, 1)\tEN",
                                 "2\tt\tRates rise\tMy cat\t(0, 5)\tEN",
                                 "3\tt\tNo votes here\tnone\t"])
    rows = list(pit2015.read(str(data)))
    assert [(r.s1, r.label) for r in rows] == [("A storm hits", "(4, 1)"), ("Rates rise", "(0, 5)"),
                                               ("No votes here", "")]
    with pytest.raises(InputError, match=r"d.data:3: label must be crowd votes"):
        read_labelled(data, "pit2015")  # the identifier needs every line's label
    labelled = write_file("l.data", ["1\tt\tA storm hits\tThe storm hit\t(4, 1)\tEN",
                                     "2\tt\tRates rise\tMy cat\t(0, 5)\tEN",
                                     "3\tt\tDebated\tpair\t(2, 3)\tEN"])
    assert read_labelled(labelled, "pit2015") == (
        [("A storm hits", "The storm hit"), ("Rates rise", "My cat")], [1, 0], 1)
    sts = read_sts("p", 2015, "pit2015", data)
    assert sts.gold == [4.0, 0.0] and sts.skipped == 1
    # test.label: the label, then after white space holding a tab the expert score; a line of
    # 60,000 tabs before something that is no score is one pass (it tried every split)
    label_file = write_file("test.label", ["true\t0.8", "false \t\t 0.2", "----", "true", "true" + "\t" * 60_000 + "x"])
    with pytest.raises(InputError, match=r"test.label:5: expected true, false or ---- \(and a score\)"):
        pit2015.read_label_file(label_file)
    assert pit2015.read_label_file(write_file("ok.label", ["true\t0.8", "false \t\t 0.2", "----", "true"])) == [1, 0, None, 1]
    assert pit2015._LABEL_LINE.match("true 0.8") is None  # a score after a tab only
    short = write_file("s.data", ["1\tt\tonly three"])
    assert [r.reason for r in pit2015.read(str(short))] == ["column_count"]
    with pytest.raises(InputError, match=r"s.data:1: expected PIT-2015 fields"):
        read_labelled(short, "pit2015")
    folder = tmp_path / "toks"
    folder.mkdir()
    (folder / "a.toks").write_text("a dog runs\na cat\n")
    (folder / "b.toks").write_text("the dog is running\nmy car\n")
    (folder / "sim.txt").write_text("1\n0\n")
    assert [(r.line_no, r.a, r.sim) for r in toks.read(folder)] == [(1, "a dog runs", "1"),
                                                                      (2, "a cat", "0")]
    assert read_labelled(folder, "toks") == ([("a dog runs", "the dog is running"),
                                              ("a cat", "my car")], [1, 0], 0)
    assert read_sts("t", 2015, "toks", folder).gold == [1.0, 0.0]
    (folder / "sim.txt").write_bytes(b"1\n\xff\n")
    with pytest.raises(InputError, match=r"sim.txt:2: invalid UTF-8"):
        read_labelled(folder, "toks")
    (folder / "sim.txt").write_text("1\n")
    with pytest.raises(InputError, match="differ in length"):
        read_sts("t", 2015, "toks", folder)


# -- JSON Lines --------------------------------------------------------------------------

def test_json_lines_are_read_by_the_fields_a_corpus_names_for_every_use(write_file):
    """A pair corpus, a bitext corpus, an STS set and labelled pairs as one JSON object a
    line (`datasets`' `to_json`): the fields named by `fields` (a dot reads inside an object),
    else by their roles' names; each line that gives no row says why."""
    import json

    from paramill.bitext.readers import CorpusSpec, read_corpus

    qqp = [{"question1": "How do I learn Python?", "question2": "What is the best way to learn "
            "Python?", "is_duplicate": 1, "id": 7},
           {"question1": "Why is the sky blue?", "question2": "Why is grass green?", "is_duplicate": False},
           [1, 2], {"question1": "no pair"}, {"question1": 5, "question2": "x"},
           {"question1": "a", "question2": "b", "is_duplicate": "maybe"}]
    path = write_file("qqp.jsonl", [json.dumps(o) for o in qqp[:2]] + ["{not json"]
                      + [json.dumps(o) for o in qqp[2:]] + [""], "gz")
    rows = list(read_pairs(PairCorpusSpec.from_dict("q", {
        "format": "jsonl", "path": str(path),
        "fields": {"s1": "question1", "s2": "question2", "label": "is_duplicate"}})))
    assert [(r.line_no, r.en_ref, r.candidate, r.label, r.reason) for r in rows[:2]] == [
        (1, "How do I learn Python?", "What is the best way to learn Python?", 1, None),
        (2, "Why is the sky blue?", "Why is grass green?", 0, None)]
    assert [(r.line_no, r.reason) for r in rows[2:]] == [
        (3, "not_json"), (4, "not_object"), (5, "missing_field"), (6, "bad_field"), (7, "bad_label")]
    assert rows[4].detail == "no field question2 (s2)" and rows[4].en_ref == '{"question1": "no pair"}'
    assert rows[5].detail == "field question1 (s1) is a number, not a string"
    # the roles' own names, a score; a wrong `fields` is an error before a line is read
    plain = write_file("p.jsonl", [json.dumps({"s1": "a cat", "s2": "a kitten", "score": "0.8"}),
                                   json.dumps({"s1": "a dog", "s2": "a hound", "score": None}),
                                   json.dumps({"s1": "x", "s2": "y", "score": "high"})])
    rows = list(read_pairs(PairCorpusSpec.from_dict("p", {"format": "jsonl", "path": str(plain)})))
    assert [(r.score, r.reason) for r in rows] == [(0.8, None), (None, None), (None, "bad_score")]
    with pytest.raises(ValueError, match=r"pairs.corpora.p.fields: a pairs corpus reads s1, s2, "
                                         r"score, label, not cs"):
        PairCorpusSpec.from_dict("p", {"format": "jsonl", "path": "p", "fields": {"cs": "x"}})
    with pytest.raises(ValueError, match=r"pairs.corpora.p.fields"):
        PairCorpusSpec.from_dict("p", {"format": "jsonl", "path": "p", "fields": {"s9": "x"}})
    # fields named wrongly for the whole file: an error naming it, nothing written
    with pytest.raises(InputError, match=r"p.jsonl:1: no line could be read as a jsonl pair "
                                         r"corpus \(missing_field 3\)"):
        list(read_pairs(PairCorpusSpec.from_dict("p", {"format": "jsonl", "path": str(plain),
                                                       "fields": {"s1": "sentence1"}})))
    # WMT's bitext as `datasets` writes it: the sentences inside `translation`
    wmt = write_file("wmt.jsonl", [json.dumps({"translation": {"cs": "Dobrý den.", "en": "Good day."}}),
                                   json.dumps({"translation": {"cs": "Ahoj"}})])
    spec = CorpusSpec.from_dict("w", {"format": "jsonl", "path": str(wmt),
                                      "fields": {"cs": "translation.cs", "en": "translation.en"}})
    pairs = list(read_corpus(spec))
    assert [(p.cs, p.en, p.reason) for p in pairs] == [
        ("Dobrý den.", "Good day.", None), ('{"translation": {"cs": "Ahoj"}}', None, "missing_field")]
    # STS-B and PAWS as `datasets` names them: sentence1, sentence2, label
    sts = write_file("stsb.jsonl", [json.dumps({"sentence1": "A man plays.", "sentence2": "A man "
                                                "is playing.", "label": 4.6}),
                                    json.dumps({"sentence1": "A cat.", "sentence2": "A dog.", "label": None}),
                                    json.dumps({"s1": "x y", "s2": "y x", "score": "2.5"})])
    data = read_sts("stsb", 2017, "jsonl", sts)
    assert data.s1 == ["A man plays.", "x y"] and data.gold == [4.6, 2.5] and data.skipped == 1
    broken = write_file("b.jsonl", [json.dumps({"s1": "a", "s2": "b", "score": 1}), "[1]"])
    with pytest.raises(InputError, match=r"b.jsonl:2: an array, not a JSON object"):
        read_sts("b", 2017, "jsonl", broken)
    paws = write_file("paws.jsonl", [json.dumps({"sentence1": "a b c", "sentence2": "c b a", "label": 0}),
                                     json.dumps({"sentence1": "d e", "sentence2": "e d", "label": True}),
                                     json.dumps({"sentence1": "f", "sentence2": "g"})])
    assert read_labelled(paws, "jsonl") == ([("a b c", "c b a"), ("d e", "e d")], [0, 1], 1)
    bad = write_file("bad.jsonl", [json.dumps({"sentence1": "a", "sentence2": "b", "label": 3})])
    with pytest.raises(InputError, match=r"bad.jsonl:1: label 3 is not 0/1/true/false"):
        read_labelled(bad, "jsonl")


def test_a_parquet_pair_corpus_reads_the_columns_fields_names(tmp_path):
    """A Parquet file `datasets` wrote (sentence1, sentence2, label) is read by `fields`; a
    column named like a role that `fields` gives another column is not read for it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "paws.parquet"
    pq.write_table(pa.table({"id": [1, 2], "s1": ["old", "old"], "sentence1": ["a b c", "d e"],
                             "sentence2": ["c b a", "e d"], "label": [1, 0]}), path)
    spec = {"format": "parquet", "path": str(path), "fields": {"s1": "sentence1", "s2": "sentence2"}}
    rows = list(read_pairs(PairCorpusSpec.from_dict("p", spec)))
    assert [(r.en_ref, r.candidate, r.label) for r in rows] == [("a b c", "c b a", 1), ("d e", "e d", 0)]
    with pytest.raises(InputError, match=r"paws.parquet: fields.s2: no column text \(it has id, s1, "):
        list(read_pairs(PairCorpusSpec.from_dict("p", {**spec, "fields": {"s1": "sentence1", "s2": "text"}})))
    with pytest.raises(ValueError, match=r"pairs.corpora.p.fields: sentence1 is named for more than one role"):
        PairCorpusSpec.from_dict("p", {**spec, "fields": {"s1": "sentence1", "s2": "sentence1"}})
    # without fields, as before: s1 and s2 (no s2 here: an error naming the file)
    with pytest.raises(InputError, match=r"paws.parquet: columns .* have no s1 \(reference\) and s2"):
        list(read_pairs(PairCorpusSpec.from_dict("p", {"format": "parquet", "path": str(path)})))


def test_parquet_is_read_for_every_use_and_fields_reach_inside_struct_columns(tmp_path):
    """WMT's bitext as the Hub's Parquet holds it (a `translation` struct of cs and en), a
    pair corpus whose sentences sit in a struct, and STS-B and PAWS as `datasets` writes them
    (sentence1, sentence2, label): each read a row group at a time, a null sentence a
    `missing_field` row, a wrong name or type an error naming the file before a row is read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from paramill.bitext.readers import CorpusSpec, read_corpus

    wmt = tmp_path / "wmt.parquet"
    pq.write_table(pa.table({"translation": [{"cs": "Dobrý den.", "en": "Good day."}, {"cs": "Ahoj", "en": None},
                                             None, {"cs": "Nashle.", "en": "Bye."}]}), wmt, row_group_size=2)
    spec = CorpusSpec.from_dict("w", {"format": "parquet", "path": str(wmt),
                                      "fields": {"cs": "translation.cs", "en": "translation.en"}})
    rows = list(read_corpus(spec))
    assert [(r.line_no, r.cs, r.en, r.reason) for r in rows] == [
        (1, "Dobrý den.", "Good day.", None), (2, "Ahoj", None, "missing_field"), (3, None, None, "missing_field"),
        (4, "Nashle.", "Bye.", None)]
    assert rows[1].detail == "column translation.en is null"
    for fields, error in (({"cs": "translation.de", "en": "translation.en"},
                           r"wmt.parquet: fields.cs: no column translation.de \(translation holds fields cs, en\)"),
                          ({"cs": "translation.cs.x", "en": "translation.en"},
                           r"fields.cs: no column translation.cs.x \(translation.cs holds string, not a struct\)"),
                          ({"cs": "translation", "en": "translation.en"},
                           r"wmt.parquet: column translation holds struct<.*>, not text")):
        with pytest.raises(InputError, match=error):
            list(read_corpus(CorpusSpec.from_dict("w", {"format": "parquet", "path": str(wmt), "fields": fields})))
    with pytest.raises(InputError, match=r"wmt.parquet: columns \['translation'\] have no `cs` and `en` columns"):
        list(read_corpus(CorpusSpec.from_dict("w", {"format": "parquet", "path": str(wmt)})))
    # plain cs and en columns, and a column whose own name has a dot (pandas' json_normalize)
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"cs": ["Pes."], "en": ["A dog."], "meta.en": ["The dog."]}), plain)
    assert [(r.cs, r.en) for r in read_corpus(CorpusSpec.from_dict("p", {"format": "parquet", "path": str(plain)}))] == [
        ("Pes.", "A dog.")]
    assert [(r.cs, r.en) for r in read_corpus(CorpusSpec.from_dict(
        "p", {"format": "parquet", "path": str(plain), "fields": {"en": "meta.en"}}))] == [("Pes.", "The dog.")]
    # a pair corpus inside a struct, its score beside it
    nested = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"pair": [{"a": "A cat.", "b": "A kitten."}, {"a": "A dog.", "b": "Dogs\x00."}],
                             "sim": [0.9, 0.5]}), nested)
    got = list(read_pairs(PairCorpusSpec.from_dict("n", {"format": "parquet", "path": str(nested),
                                                         "fields": {"s1": "pair.a", "s2": "pair.b", "score": "sim"}})))
    assert [(r.en_ref, r.candidate, r.score, r.reason) for r in got] == [
        ("A cat.", "A kitten.", 0.9, None), ("A dog.", "Dogs\x00.", None, "not_text")]
    assert got[1].detail == "column pair.b: NUL at character 4: not text (a binary value, or zeros a crash left)"
    # a value longer than the line limit, as a text layout's line over it
    long = tmp_path / "long.parquet"
    pq.write_table(pa.table({"s1": ["é" * 40000, "ok"], "s2": ["x", "fine"]}), long)
    got = list(read_pairs(PairCorpusSpec.from_dict("l", {"format": "parquet", "path": str(long)})))
    assert [(r.reason, r.detail) for r in got] == [("line_too_long", "column s1: 80000 bytes, longer than 65536"),
                                                   (None, None)]
    assert got[0].en_ref == "é" * 1000  # its head, as a rejected row shows it
    # 64 MiB of one letter packs into a few KB: the value's length is counted in Arrow and
    # it never becomes a Python string (whose copies took 6.3 GB for 600 MB); a dictionary
    # column (pandas' category) alike, its long entry shared by rows
    import tracemalloc

    bomb = tmp_path / "bomb.parquet"
    pq.write_table(pa.table({"s1": ["a b", "x" * (64 << 20), "c d", None, "e f"],
                             "s2": pa.array(["y" * (64 << 20), "z", "y" * (64 << 20), "w", "g"]).dictionary_encode()}),
                   bomb, compression="zstd")
    assert bomb.stat().st_size < 100_000
    tracemalloc.start()
    try:
        got = list(read_pairs(PairCorpusSpec.from_dict("b", {"format": "parquet", "path": str(bomb)})))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(r.line_no, r.reason, r.detail) for r in got] == [
        (1, "line_too_long", "column s2: 67108864 bytes, longer than 65536"),
        (2, "line_too_long", "column s1: 67108864 bytes, longer than 65536"),
        (3, "line_too_long", "column s2: 67108864 bytes, longer than 65536"),
        (4, "missing_field", "column s1 is null"), (5, None, None)]
    assert (got[0].en_ref, got[0].candidate, got[1].en_ref) == ("a b", "y" * 1000, "x" * 1000)
    assert peak < 8 << 20, peak
    # a dictionary's entry, written once, named by every row in a few bits: any writer but
    # pyarrow's keeps no Arrow schema saying so, and Arrow decoded each row's copy (a 786-byte
    # file of a 10 MB entry in 1,000 rows: 11 GB asked for, the job failed). The entry is
    # read once, its head shared by the rows it is too long for
    repeated = tmp_path / "repeated.parquet"
    named = pa.DictionaryArray.from_arrays(pa.array([0] * 1000 + [1], pa.int32()), pa.array(["x" * (1 << 20), "ok"]))
    pq.write_table(pa.table({"s1": named, "s2": ["y"] * 1001}), repeated, compression="zstd", store_schema=False)
    assert repeated.stat().st_size < 10_000
    pool = pa.proxy_memory_pool(pa.default_memory_pool())
    default = pa.default_memory_pool()
    pa.set_memory_pool(pool)
    try:
        got = list(read_pairs(PairCorpusSpec.from_dict("r", {"format": "parquet", "path": str(repeated)})))
    finally:
        pa.set_memory_pool(default)
    assert {(r.reason, r.detail) for r in got[:-1]} == {("line_too_long", "column s1: 1048576 bytes, longer than 65536")}
    assert len(got) == 1001 and len({id(r.en_ref) for r in got[:-1]}) == 1
    assert (got[-1].en_ref, got[-1].candidate, got[-1].reason) == ("ok", "y", None)
    assert pool.max_memory() < 16 << 20, pool.max_memory()  # 1 GB decoded before
    # STS-B and PAWS as `datasets` writes them to Parquet
    stsb = tmp_path / "stsb.parquet"
    pq.write_table(pa.table({"sentence1": ["A man plays.", "A cat.", None], "sentence2": ["A man is playing.", "A dog.", "x"],
                             "label": [4.6, None, 1.0], "idx": [0, 1, 2]}), stsb)
    data = read_sts("stsb", 2017, "parquet", stsb)
    assert (data.s1, data.s2, data.gold, data.skipped) == (["A man plays."], ["A man is playing."], [4.6], 2)
    paws = tmp_path / "paws.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "sentence1": ["a b c", "d e", "f"], "sentence2": ["c b a", "e d", "g"],
                             "label": pa.array([0, 1, None], pa.int64())}), paws)
    assert read_labelled(paws, "parquet") == ([("a b c", "c b a"), ("d e", "e d")], [0, 1], 1)
    pq.write_table(pa.table({"sentence1": ["a"], "sentence2": ["b"], "label": [3]}), tmp_path / "bad.parquet")
    with pytest.raises(InputError, match=r"bad.parquet:1: column label: label '3' is not 0/1/true/false"):
        read_labelled(tmp_path / "bad.parquet", "parquet")
    pq.write_table(pa.table({"question1": ["a"], "question2": ["b"], "label": [1]}), tmp_path / "qqp.parquet")
    with pytest.raises(InputError, match=r"qqp.parquet: no column s1 or sentence1 \(it has question1, question2, label\)"):
        read_labelled(tmp_path / "qqp.parquet", "parquet")


def test_csv_is_read_with_its_quoting_for_every_use(write_file, tmp_path, monkeypatch):
    """Quora Question Pairs as Kaggle's train.csv holds it (quoted fields holding commas,
    doubled quotes and a line break), a bitext corpus with `;` between fields, and STS-B and
    PAWS with `datasets`' column names: each record read from the line it starts on; a record
    of another length, a misplaced quote, a line that is not UTF-8 and a quote never closed
    are rejected rows saying so, and reading goes on."""
    from paramill.bitext.readers import CorpusSpec, read_corpus

    qqp = write_file("train.csv", [
        '"id","qid1","qid2","question1","question2","is_duplicate"',
        '"0","1","2","What is the step by step guide to invest in share market in india?",'
        '"What is the step by step guide to invest in share market?","0"',
        '1,3,4,"Why is ""Python"" popular, really?","Why do people like Python?",1',
        '2,5,6,"How do I read',
        'two lines?","How to read a question that spans lines?",',
        '3,7,8,"too","few"',
        '4,9,10,"a"b,"c",0',
        '5,11,12,"x","y","maybe"'], "gz")
    spec = {"format": "csv", "path": str(qqp), "fields": {"s1": "question1", "s2": "question2", "label": "is_duplicate"},
            "multiline_fields": True}
    rows = list(read_pairs(PairCorpusSpec.from_dict("q", spec)))
    assert [(r.line_no, r.en_ref, r.candidate, r.label, r.reason) for r in rows[:3]] == [
        (2, "What is the step by step guide to invest in share market in india?",
         "What is the step by step guide to invest in share market?", 0, None),
        (3, 'Why is "Python" popular, really?', "Why do people like Python?", 1, None),
        (4, "How do I read\ntwo lines?", "How to read a question that spans lines?", None, None)]
    assert [(r.line_no, r.reason) for r in rows[3:]] == [(6, "column_count"), (7, "bad_quote"), (8, "bad_label")]
    assert rows[3].detail == "5 fields, the header names 6"
    assert rows[4].detail == "',' expected after '\"' (line 7)"
    assert rows[4].en_ref == '4,9,10,"a"b,"c",0'  # the record as read, in the rejected row
    assert rows[5].detail == "column is_duplicate: label 'maybe' is not 0/1/true/false"
    # by default a quoted field ends on its line: the record that runs on is rejected, and the
    # line after it read as a record of its own (rejected too: three fields, not six)
    rows = list(read_pairs(PairCorpusSpec.from_dict("q", {**spec, "multiline_fields": False})))
    assert [(r.line_no, r.reason) for r in rows[2:5]] == [(4, "bad_quote"), (5, "column_count"), (6, "column_count")]
    assert rows[2].detail == "a quote opened on line 4 is not closed on its line (multiline_fields: false)"
    assert rows[2].en_ref == '2,5,6,"How do I read'
    with pytest.raises(InputError, match=r"train.csv:1: fields.s2: no column text \(the header has id, qid1"):
        list(read_pairs(PairCorpusSpec.from_dict("q", {**spec, "fields": {"s1": "question1", "s2": "text"}})))
    with pytest.raises(InputError, match=r"train.csv: columns \['id', .*\] have no s1 \(reference\) and s2"):
        list(read_pairs(PairCorpusSpec.from_dict("q", {"format": "csv", "path": str(qqp)})))
    # a line that is not UTF-8 inside a record, and a quote never closed: the record is
    # rejected from the line it starts on, and the lines after it are read
    broken = tmp_path / "broken.csv"
    broken.write_bytes(b's1,s2,score\n"a\nb \xff",c,1\nd,e,2\n"never closed,f,3\n' + b"g h i\n" * 40
                       + b"j,k,4\nl\rm,n,5\n")
    rows = list(read_pairs(PairCorpusSpec.from_dict("b", {"format": "csv", "path": str(broken), "multiline_fields": True}),
                           max_line_bytes=100))
    assert [(r.line_no, r.reason) for r in rows[:3]] == [(2, "invalid_utf8"), (4, None), (5, "line_too_long")]
    assert rows[0].detail.startswith("line 3: ") and (rows[1].en_ref, rows[1].score) == ("d", 2.0)
    assert rows[2].detail == "line 19: a record longer than 100 bytes (a quote never closed?)"
    assert {r.reason for r in rows[3:-2]} == {"column_count"} and len(rows[3:-2]) == 26  # lines 20-45
    assert (rows[-2].line_no, rows[-2].en_ref, rows[-2].candidate) == (46, "j", "k")
    assert (rows[-1].line_no, rows[-1].reason, rows[-1].detail) == (
        47, "bad_field", "a carriage return (\\r) in a field that is not quoted (line 47)")
    # a quoted field longer than the limit (an article's body beside the pair), its lines
    # holding commas and quotes: read through to its closing quote and skipped whole, none of
    # its lines read as a record; where its quote does not close within MAX_RECORD_BYTES
    # (here 300), the lines after the limit are read as records, as for a quote never closed
    body = "".join(f'line {k}, with ""quotes"", and commas\n' for k in range(12))
    long = tmp_path / "long.csv"
    long.write_text(f's1,s2,body\na,b,"{body}end"\nc,d,short\n"e",f,"g\nh"\n')
    rows = list(read_pairs(PairCorpusSpec.from_dict("l", {"format": "csv", "path": str(long), "multiline_fields": True}),
                           max_line_bytes=100))
    assert [(r.line_no, r.reason, r.en_ref) for r in rows[1:]] == [(15, None, "c"), (16, None, "e")]
    assert (rows[0].line_no, rows[0].reason) == (2, "line_too_long")
    assert rows[0].detail == "lines 2-14: a record longer than 100 bytes, skipped whole"
    assert rows[0].en_ref.startswith('a,b,"line 0, with ""quotes"", and commas\nline 1, ')  # as read
    monkeypatch.setattr(csvfile, "MAX_RECORD_BYTES", 300)
    rows = list(read_pairs(PairCorpusSpec.from_dict("l", {"format": "csv", "path": str(long), "multiline_fields": True}),
                           max_line_bytes=100))
    assert rows[0].detail == "line 4: a record longer than 100 bytes (a quote never closed?)"
    # the field's own lines 5-13 then read as pairs (three fields each): what the skip prevents
    assert [(r.line_no, r.reason) for r in rows[1:]] == [
        *((k, None) for k in range(5, 14)), (14, "column_count"), (15, None), (16, None)]
    assert (rows[1].en_ref, rows[-2].en_ref) == ("line 3", "c")
    # a stray quote: RFC 4180 reads on to the next one, or to the end of the file, as one field
    # (the rest of the file lost in one rejected record): by default the line alone is
    # rejected and reading goes on; with multiline_fields, a quote never closed is an error
    # naming the line it opened on
    stray = tmp_path / "stray.csv"
    stray.write_text('s1,s2\na,b\n"c,d\n' + "".join(f"e{k},f{k}\n" for k in range(50)))
    rows = list(read_pairs(PairCorpusSpec.from_dict("s", {"format": "csv", "path": str(stray)})))
    assert [(r.line_no, r.reason) for r in rows[:3]] == [(2, None), (3, "bad_quote"), (4, None)]
    assert len(rows) == 52 and rows[-1].en_ref == "e49"
    with pytest.raises(InputError, match=r"stray.csv:3: a quote opened on this line is never closed: the rest "
                                         r"of the file \(lines 3-53\) would be one field"):
        list(read_pairs(PairCorpusSpec.from_dict("s", {"format": "csv", "path": str(stray), "multiline_fields": True})))
    # a field longer than csv's own limit (131,072 characters) within the line limit is read
    wide = tmp_path / "wide.csv"
    wide.write_text("s1,s2\na," + "b" * 200_000 + "\nc,d\n")
    rows = list(read_pairs(PairCorpusSpec.from_dict("w", {"format": "csv", "path": str(wide)}), max_line_bytes=1 << 20))
    assert [(r.line_no, r.reason, len(r.candidate)) for r in rows] == [(2, None, 200_000), (3, None, 1)]
    # bitext, `;` between fields
    wmt = write_file("wmt.csv", ["cs;en;domain", "Dobrý den.;Good day.;news", '"Ahoj; jak se máš?";"Hi; how are you?";chat'])
    corpus = CorpusSpec.from_dict("w", {"format": "csv", "path": str(wmt), "delimiter": ";"})
    assert [(p.cs, p.en) for p in read_corpus(corpus)] == [("Dobrý den.", "Good day."), ("Ahoj; jak se máš?", "Hi; how are you?")]
    with pytest.raises(ValueError, match=r"bitext.corpora.w.delimiter"):
        CorpusSpec.from_dict("w", {"format": "csv", "path": str(wmt), "delimiter": '"'})
    # STS-B and PAWS with datasets' names; an empty score or label is none given
    stsb = write_file("stsb.csv", ["sentence1,sentence2,label", "A man plays.,A man is playing.,4.6",
                                   "A cat.,A dog.,", '"Well, yes.",No.,1.0'])
    data = read_sts("stsb", 2017, "csv", stsb)
    assert (data.s1, data.gold, data.skipped) == (["A man plays.", "Well, yes."], [4.6, 1.0], 1)
    paws = write_file("paws.csv", ["id,sentence1,sentence2,label", "1,a b c,c b a,0", "2,d e,e d,1", "3,f,g,"])
    assert read_labelled(paws, "csv") == ([("a b c", "c b a"), ("d e", "e d")], [0, 1], 1)
    twice = write_file("twice.csv", ["s1,s2,s1", "a,b,c"])
    with pytest.raises(InputError, match=r"twice.csv:1: the header names s1 more than once"):
        read_labelled(twice, "csv")


def test_an_sts_set_or_labelled_data_names_its_columns_with_fields(write_file, tmp_path):
    """A set whose columns carry other names than `datasets`' (csv, jsonl, parquet) is read by
    `fields`, a role left out by `datasets`' names; a layout whose columns are in a fixed
    order takes none, and a role of another use is refused, before anything is read."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from paramill.evaluate.settings import StsDataset
    from paramill.twitter.identify.settings import LabelledData

    sick = write_file("sick.jsonl", [json.dumps({"text_a": "A man plays.", "text_b": "A man is playing.",
                                                 "relatedness": 4.6, "label": "entailment"}),
                                     json.dumps({"text_a": "A cat.", "text_b": "A dog.", "relatedness": 1.2})])
    data = read_sts("sick", 2014, "jsonl", sick, {"s1": "text_a", "s2": "text_b", "score": "relatedness"})
    assert (data.s1, data.gold, data.skipped) == (["A man plays.", "A cat."], [4.6, 1.2], 0)
    qqp = write_file("qqp.csv", ["id,question1,question2,is_duplicate", '1,"Why, then?",Why?,1', "2,How?,When?,0", "3,a,b,"])
    assert read_labelled(qqp, "csv", fields={"s1": "question1", "s2": "question2", "label": "is_duplicate"}) == (
        [("Why, then?", "Why?"), ("How?", "When?")], [1, 0], 1)
    with pytest.raises(InputError, match=r"qqp.csv:1: fields.label: no column dup \(the header has id, question1"):
        read_labelled(qqp, "csv", fields={"s1": "question1", "s2": "question2", "label": "dup"})
    nested = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"pair": [{"a": "x y", "b": "y x"}, {"a": "p", "b": "q"}], "sim": [3.0, 0.5]}), nested)
    data = read_sts("n", 1, "parquet", nested, {"s1": "pair.a", "s2": "pair.b", "score": "sim"})
    assert (data.s1, data.s2, data.gold) == (["x y", "p"], ["y x", "q"], [3.0, 0.5])
    # only the score named: the sentences by datasets' names
    partial = write_file("p.csv", ["sentence1,sentence2,gold", "a b,b a,2.5"])
    assert read_sts("p", 1, "csv", partial, {"score": "gold"}).gold == [2.5]
    # the config's checks, before any job runs
    entry = {"name": "s", "year": 1, "format": "csv", "path": "x.csv"}
    assert StsDataset.from_dict({**entry, "fields": {"score": "gold"}}).fields == {"score": "gold"}
    with pytest.raises(ValueError, match=r"evaluate.sts\[s\].fields: format tsv takes no fields \(its "
                                         r"columns are in a fixed order; csv, json, jsonl, parquet take them\)"):
        StsDataset.from_dict({**entry, "format": "tsv", "fields": {"score": "gold"}})
    with pytest.raises(ValueError, match=r"fields: 'label' is not one of \['s1', 's2', 'score'\]"):
        StsDataset.from_dict({**entry, "fields": {"label": "gold"}})
    with pytest.raises(ValueError, match=r"labelled data q.csv.fields: gold is named for more than one role"):
        LabelledData.from_dict({"path": "q.csv", "format": "csv", "fields": {"s1": "gold", "label": "gold"}})


def test_a_json_array_is_read_an_element_at_a_time_for_every_use(write_file, monkeypatch):
    """The whole file one JSON array (pandas' `to_json(orient="records")`: one line; or
    pretty-printed), read in chunks (here of 5 characters, so elements, strings and numbers
    run across them) for every use, by the fields JSON Lines reads; an element that is not an
    object is a rejected row numbered by its place; a file that is not one array, or whose
    array is broken, is an error naming the file, the line and the element."""
    import json

    import paramill.formats.jsonarray as jsonarray
    from paramill.bitext.readers import CorpusSpec, read_corpus

    monkeypatch.setattr(jsonarray, "CHUNK", 5)
    qqp = [{"question1": "How do I learn Python?", "question2": "What is the best way to learn Python?",
            "is_duplicate": 1, "id": 12345678901234567890},
           [1, 2], {"question1": "no pair"},
           {"question1": "Why is the sky blue?", "question2": "Why is grass green?", "is_duplicate": False}]
    path = write_file("qqp.json", [json.dumps(qqp)], "gz")
    rows = list(read_pairs(PairCorpusSpec.from_dict("q", {
        "format": "json", "path": str(path), "fields": {"s1": "question1", "s2": "question2", "label": "is_duplicate"}})))
    assert [(r.line_no, r.en_ref, r.candidate, r.label, r.reason, r.method) for r in rows] == [
        (1, "How do I learn Python?", "What is the best way to learn Python?", 1, None, "json"),
        (2, "[1, 2]", None, None, "not_object", "json"), (3, '{"question1": "no pair"}', None, None, "missing_field", "json"),
        (4, "Why is the sky blue?", "Why is grass green?", 0, None, "json")]
    assert rows[1].detail == "element 2: an array, not a JSON object"
    wmt = write_file("wmt.json", [json.dumps([{"translation": {"cs": "Dobrý den.", "en": "Good day."}},
                                             {"translation": {"cs": "Čau", "en": "Hi"}}], ensure_ascii=False, indent=2)])
    corpus = CorpusSpec.from_dict("w", {"format": "json", "path": str(wmt), "fields": {"cs": "translation.cs", "en": "translation.en"}})
    assert [(p.line_no, p.cs, p.en) for p in read_corpus(corpus)] == [(1, "Dobrý den.", "Good day."), (2, "Čau", "Hi")]
    stsb = write_file("stsb.json", [json.dumps([{"sentence1": "A man plays.", "sentence2": "A man is playing.", "label": 4.6},
                                                {"sentence1": "A cat.", "sentence2": "A dog.", "label": None}])])
    data = read_sts("stsb", 2017, "json", stsb)
    assert (data.s1, data.gold, data.skipped) == (["A man plays."], [4.6], 1)
    paws = write_file("paws.json", [json.dumps([{"a": "x y", "b": "y x", "same": 1}, {"a": "p", "b": "q", "same": 0}])])
    assert read_labelled(paws, "json", fields={"s1": "a", "s2": "b", "label": "same"}) == ([("x y", "y x"), ("p", "q")], [1, 0], 0)
    for name, text, error in (
            ("lines.json", '{"s1": "a", "s2": "b"}\n{"s1": "c", "s2": "d"}\n',
             r"lines.json:1: not a JSON array \(the file starts with '\{\"s1\": \"a\", \"s2\": \"b'\); one JSON object a line is format jsonl, "
             r"and an object holding the array \(such as \{\"data\": \[...\]\}\) is not read: write the array out \(jq .data\)"),
            ("text.json", "a,b\n1,2\n", r"text.json:1: not a JSON array \(the file starts with 'a,b\\n1,2\\n'\)$"),
            ("cut.json", '[\n {"s1": "a", "s2": "b"},\n {"s1": "c"', r"cut.json:3: element 2 is not JSON"),
            ("open.json", '[\n {"s1": "a", "s2": "b"},\n', r"open.json:3: the file ends inside the array, after element 1"),
            ("comma.json", '[{"s1": "a", "s2": "b"} {"s1": "c"}]', r"comma.json:1: expected , or \] after element 1, found '\{'"),
            ("after.json", '[{"s1": "a", "s2": "b"}]\n[]', r"after.json:2: text after the array's closing \]"),
            ("empty.json", "[ ]", r"empty.json:1: the array is empty"),
            ("blank.json", "\n\n", r"blank.json:3: file is empty \(no JSON array\)")):
        with pytest.raises(InputError, match=error):
            list(read_pairs(PairCorpusSpec.from_dict("x", {"format": "json", "path": str(write_file(name, text))})))
    # an element over the line limit (a long field beside the pair) is a rejected row, and
    # reading goes on; here, across chunks of 5 characters
    long = write_file("long.json", [json.dumps([{"s1": "a", "s2": "b", "body": "x" * 300}, {"s1": "c", "s2": "d"}])])
    got = list(read_pairs(PairCorpusSpec.from_dict("x", {"format": "json", "path": str(long)}), max_line_bytes=200))
    assert [(r.line_no, r.reason, r.detail, r.en_ref) for r in got] == [
        (1, "line_too_long", "element 1: 334 bytes, longer than 200", None), (2, None, None, "c")]
    # the limit counts UTF-8 bytes, as a JSON Lines line's: 124 characters, 214 bytes
    wide = {"s1": "a", "s2": "b", "body": "é" * 90}
    text = json.dumps(wide, ensure_ascii=False)
    assert (len(text), len(text.encode())) == (124, 214)
    for layout, body in (("json", f"[{text},\n" + '{"s1": "c", "s2": "d"}]'),
                         ("jsonl", f"{text}\n" + '{"s1": "c", "s2": "d"}\n')):
        got = list(read_pairs(PairCorpusSpec.from_dict("x", {"format": layout, "path": str(
            write_file(f"wide.{layout}", body))}), max_line_bytes=200))
        assert [(r.reason, r.en_ref) for r in got] == [("line_too_long", None), (None, "c")], layout
        if layout == "json":
            assert got[0].detail == "element 1: 214 bytes, longer than 200"
    bad = write_file("bad.json", b'[{"s1": "a", "s2": "b"},\n {"s1": "\xff", "s2": "c"}]')
    with pytest.raises(InputError, match=r"bad.json:2: invalid UTF-8 at byte offset 34"):
        list(read_pairs(PairCorpusSpec.from_dict("x", {"format": "json", "path": str(bad)})))


def test_json_escapes_that_decode_to_no_text_are_rejected_rows_in_both_json_layouts(write_file):
    """``\\u0000`` decodes to a NUL and ``\\ud83d`` without its pair to a lone surrogate: the
    line's bytes are UTF-8, the text is not (a NUL glued the words around it once cleaned; a
    surrogate failed the job at Parquet). A rejected row, ``not_text`` or ``invalid_utf8`` as
    the same in a text file's bytes, naming the field; a whole pair and a written-out
    backslash are text."""
    import json

    from paramill.formats import jsontext

    objects = [{"s1": "in the\u0000park", "s2": "x"}, {"s1": "ok", "s2": "cut \ud83d"},
               {"translation": {"en": ["a", "b \udc00"]}, "s1": "a", "s2": "b"},
               {"s1": "a whole pair \ud83d\ude00", "s2": "a written \\ud800"}]
    want = [("not_text", "field s1: a NUL character (\\u0000) at character 6: not text"),
            ("invalid_utf8", "field s2: a lone surrogate \\ud83d at character 4 (half of a UTF-16 "
                             "pair, as a post cut inside an emoji leaves): no character, not UTF-8"),
            ("invalid_utf8", "field translation.en[1]: a lone surrogate \\udc00 at character 2 (half "
                             "of a UTF-16 pair, as a post cut inside an emoji leaves): no character, not UTF-8"),
            (None, None)]
    for layout, text in (("jsonl", [json.dumps(o) for o in objects]), ("json", [json.dumps(objects)])):
        rows = list(read_pairs(PairCorpusSpec.from_dict("x", {"format": layout, "path": str(
            write_file(f"escapes.{layout}", text))})))
        prefix = [f"element {k}: " if layout == "json" else "" for k in range(1, 5)]
        assert [(r.reason, r.detail) for r in rows] == [
            (reason, p + detail if detail else None) for (reason, detail), p in zip(want, prefix)], layout
        assert (rows[3].en_ref, rows[3].candidate) == ("a whole pair \U0001f600", "a written \\ud800")
    assert jsontext.problem({"a\x00b": 1}) == ("not_text", "field a\x00b (its name): a NUL character "
                                                           "(\\u0000) at character 1: not text")
    assert jsontext.problem(["x", {"y": 1}]) is None and not jsontext.may_hold('{"s": "\\u00e9"}')


def test_a_json_object_naming_a_key_twice_is_a_rejected_row_in_both_json_layouts(write_file):
    """`{"s1": "a", "s2": "b", "s1": "c"}`: Python keeps the last value, other readers the
    first or refuse it, so the pair depended on the reader; a rejected row `duplicate_key`
    naming the key, nested objects and a key written with escapes too. A value holding `":`
    and a space before a colon are no duplicate."""
    import json

    from paramill.formats import jsontext

    lines = ['{"s1": "a", "s2": "b", "s1": "c"}',
             '{"s1": "he said \\"yes\\": fine", "s2" : "b"}',
             '{"s1": "a", "s2": "b", "meta": {"id": 1, "id": 2}}',
             '{"s1": "a", "s\\u0031": "b", "s2": "c"}',
             '{"s1": "a", "s2": "b", "ids": [{"n": 1}, {"n": 2}]}',
             '{"s1" : "a", "s2": "b", "s1": "c"}']  # its first key's colon not after its quote
    want = [("duplicate_key", "'s1'"), (None, None), ("duplicate_key", "'id'"),
            ("duplicate_key", "'s1'"), (None, None), ("duplicate_key", "'s1'")]
    for layout, text in (("jsonl", lines), ("json", ["[" + ",\n".join(lines) + "]"])):
        rows = list(read_pairs(PairCorpusSpec.from_dict("x", {"format": layout, "path": str(
            write_file(f"twice.{layout}", text))})))
        assert [(r.reason, r.detail and r.detail.split("the key ")[1].split(" ")[0]) for r in rows] == want
        assert rows[0].detail.endswith("is given twice in one object (JSON readers differ on which "
                                       "value they keep: Python's the last, others the first or none)")
        assert (rows[1].en_ref, rows[1].candidate) == ('he said "yes": fine', "b")
    assert jsontext.duplicate('"a \\": b"', 'a ": b') is None  # a string, its `":` no key
    deep = "[" * 300 + '{"a": 1, "a": 2}' + "]" * 300
    assert jsontext.duplicate(deep, json.loads(deep))[0] == "duplicate_key"


def test_formats_peek_prints_the_first_rows_as_the_pipeline_reads_them(write_file, capsys):
    """`paramill formats peek` reads a file by its config entry as the stage would: the first
    rows as JSON lines (a row that cannot be read: its reason and detail), the reasons over
    the rows scanned on stderr; a wrong entry is the pipeline's own error, exit status 2.
    `paramill formats list` names each layout and its uses."""
    import json

    from paramill.cli import main

    qqp = write_file("train.csv", ["id,question1,question2,is_duplicate", '1,"Why, then?",Why?,1',
                                   '2,"a"b,c,0', "3,How?,When?,0", "4,x,y,maybe"])
    spec = {"format": "csv", "path": str(qqp), "fields": {"s1": "question1", "s2": "question2", "label": "is_duplicate"}}
    assert main(["formats", "peek", "--use", "pairs", "--spec", json.dumps(spec), "-n", "3"]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows[0] == {"line": 2, "s1": "Why, then?", "s2": "Why?", "rank": 1, "label": 1, "method": "csv"}
    assert (rows[1]["line"], rows[1]["reason"]) == (3, "bad_quote") and rows[2]["s1"] == "How?" and len(rows) == 3
    assert "4 rows scanned: ok 2, bad_quote 1, bad_label 1" in err
    stsb = write_file("sick.jsonl", [json.dumps({"a": "A man plays.", "b": "A man is playing.", "rel": "4.5"}),
                                     json.dumps({"a": "x", "b": "y", "rel": None})])
    sts_spec = {"format": "jsonl", "path": str(stsb), "fields": {"s1": "a", "s2": "b", "score": "rel"}}
    assert main(["formats", "peek", "--use", "sts", "--spec", json.dumps(sts_spec)]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(line).get("score") for line in out.splitlines()] == [4.5, None]
    assert "2 rows scanned: ok 1, no_gold_score 1" in err
    assert main(["formats", "peek", "--use", "sts", "--spec", json.dumps({**sts_spec, "format": "tsv"})]) == 2
    assert "fields: format tsv takes no fields" in capsys.readouterr().err
    assert main(["formats", "peek", "--use", "bitext", "--spec", json.dumps(spec)]) == 2
    assert "bitext.corpora.peek.fields: a bitext corpus reads cs, en, not label, s1, s2" in capsys.readouterr().err
    assert main(["formats", "list", "--use", "labelled"]) == 0
    listed = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert sorted(listed) == ["csv", "json", "jsonl", "parquet", "pit2015", "toks", "twitter-url"]
    assert "bitext, pairs, sts, labelled" in listed["csv"]


# -- the registry: uses, specs, files, and a layout from outside the package ------------

def test_each_use_lists_the_layouts_that_read_it():
    assert list(registry.names("bitext")) == ["csv", "czeng1", "czeng2", "json", "jsonl", "moses", "parquet", "tsv"]
    assert registry.enum("pairs") == ["csv", "json", "jsonl", "parabank2", "paranmt", "parquet", "references",
                                     "tsv", "twitter-url", "url_raw", "twitter_url"]
    assert [m.NAME for m in registry.modules("sts")] == [
        "csv", "json", "jsonl", "parquet", "pit2015", "senteval", "sick", "stsbenchmark", "toks", "tsv", "twitter-url"]
    assert [m.NAME for m in registry.modules("labelled")] == ["csv", "json", "jsonl", "parquet", "pit2015", "toks", "twitter-url"]
    with pytest.raises(ValueError, match=r"unknown bitext format 'paranmt'; known: csv, czeng1, czeng2, json, "):
        registry.reader("bitext", "paranmt")  # a layout of another use


def test_a_corpus_takes_its_layouts_keys_and_says_which_it_does_not():
    from paramill.bitext.readers import CorpusSpec

    moses = CorpusSpec.from_dict("m", {"format": "moses", "cs": "a.cs", "en": "a.en"})
    assert moses.files == ["a.cs", "a.en"] and moses.source_file == "a.cs;a.en"
    assert moses.record() == {"name": "m", "format": "moses", "cs": "a.cs", "en": "a.en"}
    with pytest.raises(ValueError, match=r"bitext.corpora.m: format moses takes no header "
                                         r"\(its keys: cs, en\)"):
        CorpusSpec.from_dict("m", {"format": "moses", "cs": "a", "en": "b", "header": True})
    with pytest.raises(ValueError, match=r"bitext.corpora.m: unknown keys \['colour'\]"):
        CorpusSpec.from_dict("m", {"format": "tsv", "path": "a", "colour": 1})
    with pytest.raises(ValueError, match=r"setting bitext.corpora.t.header: 'yes' is not"):
        CorpusSpec.from_dict("t", {"format": "tsv", "path": "a", "header": "yes"})
    with pytest.raises(ValueError, match=r"pairs.corpora.u: negative_votes \(4\) must be below"):
        PairCorpusSpec.from_dict("u", {"format": "twitter-url", "path": "u", "negative_votes": 4})


def test_the_schema_lists_each_layouts_keys_with_the_layouts_that_take_them():
    from paramill import config

    corpus = config.schema()["properties"]["pairs"]["properties"]["corpora"][
        "additionalProperties"]
    assert corpus["properties"]["format"]["enum"] == registry.enum("pairs")
    assert corpus["properties"]["keep"]["description"].startswith("twitter-url: ")
    assert "default" not in corpus["properties"]["keep"]  # the layout's Spec fills it in
    needs = {tuple(c["if"]["properties"]["format"]["enum"]): c["then"]["required"]
             for c in corpus["allOf"]}
    assert needs[("references",)] == ["reference", "hypotheses"]


def test_an_sts_set_and_a_labelled_set_name_their_files(tmp_path):
    assert registry.files("senteval", "d/STS.input.news.txt") == ["d/STS.input.news.txt",
                                                                  "d/STS.gs.news.txt"]
    assert registry.files("stsbenchmark", "sts-dev.csv") == ["sts-dev.csv"]


OUTSIDE = '''
"""A layout from outside paramill: one JSON object a line, {"a": ..., "b": ...}."""
import json
from dataclasses import dataclass

from paramill.formats.rows import Candidate
from paramill.io.lines import LineStream
from paramill.formats.reading import lines, rejected
from paramill.config.typed import Settings, setting

NAME = "jsonl-pairs"
ALIASES = ()
DESCRIPTION = "one JSON object a line with `a` and `b`"


@dataclass(frozen=True)
class Spec(Settings):
    path: str = setting(doc="The file.", type="string")


def pairs(spec, method=NAME, max_line_bytes=65536, batch_rows=0):
    for item in lines(LineStream(spec.path, max_line_bytes)):
        if not isinstance(item, tuple):
            yield rejected(item, method, spec.path)
            continue
        row = json.loads(item[1])
        yield Candidate(item[0], row["a"], row["b"], method, source_file=spec.path)
'''


def test_a_layout_from_another_package_joins_through_an_entry_point(tmp_path):
    """A package outside paramill declares a format module under the ``paramill.formats``
    entry-point group: the schema takes its name and keys, and a pair corpus reads it."""
    import json
    import subprocess
    import sys

    import yaml

    (tmp_path / "my_layouts.py").write_text(OUTSIDE)
    info = tmp_path / "my_layouts-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-layouts\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[paramill.formats]\njsonl-pairs = my_layouts\n")
    data = tmp_path / "p.jsonl"
    data.write_text('{"a": "He left .", "b": "He went away ."}\n{"a": "Hi .", "b": "Hello ."}\n')
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    schema = subprocess.run([sys.executable, "-m", "paramill.cli", "config", "schema"],
                            capture_output=True, text=True, env=env, check=True).stdout
    corpus = yaml.safe_load(schema)["properties"]["pairs"]["properties"]["corpora"][
        "additionalProperties"]
    assert "jsonl-pairs" in corpus["properties"]["format"]["enum"]
    assert "jsonl-pairs" not in registry.names()  # this process has no such entry point
    done = subprocess.run(
        [sys.executable, "-m", "paramill.cli", "pairs", "ingest", "--corpus", "j", "--spec",
         json.dumps({"format": "jsonl-pairs", "path": str(data)}), "--out", str(tmp_path / "o")],
        capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "2 candidates, 2 kept" in done.stdout + done.stderr
    clash = tmp_path / "clash"
    clash.mkdir()
    (clash / "tsv_again.py").write_text(OUTSIDE.replace('"jsonl-pairs"', '"tsv"'))
    info = clash / "tsv_again-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tsv-again\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[paramill.formats]\ntsv = tsv_again\n")
    done = subprocess.run([sys.executable, "-m", "paramill.cli", "config", "schema"],
                          capture_output=True, text=True, env={**env, "PYTHONPATH": str(clash)})
    assert done.returncode != 0
    assert "format name 'tsv' is declared by both paramill.formats.tsv and tsv_again" in done.stderr


def test_every_text_input_is_read_strictly(tmp_path):
    """The stages' other text inputs (training pairs from a TSV, a lexicon stop-list, the
    corpus analysis's IDF corpus) name file and line for a line that is not UTF-8, where
    they used to read it with replacement characters."""
    from paramill.embed.data import PairSource
    from paramill.filters.analysis import read_lines
    from paramill.lexicon.pmi import LexiconSettings, _stopwords

    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"a dog\ta hound\nthe caf\xe9\tthe bar\n")
    with pytest.raises(InputError, match=r"bad.txt:2: invalid UTF-8"):
        list(PairSource.from_files([bad]))
    good = tmp_path / "good.tsv"
    good.write_text("a dog\ta hound\none column\nthe cat\tthe kitten\textra\n")
    assert [p for batch in PairSource.from_files([good]) for p in zip(*batch)] == [
        ("a dog", "a hound"), ("the cat", "the kitten")]
    with pytest.raises(InputError, match=r"bad.txt:2: invalid UTF-8"):
        list(read_lines(bad))
    with pytest.raises(InputError, match=r"bad.txt:2: invalid UTF-8"):
        _stopwords(LexiconSettings(stoplist=str(bad)))


def test_some_readable_passes_every_row_once_and_refuses_a_file_of_no_readable_line():
    rows = [Bad(1, "column_count", "expected 2", None), ("a", "b"), Bad(3, "invalid_utf8", "x", None)]
    assert list(reading.some_readable(rows, "f.tsv", "a tsv pair corpus")) == rows  # a list too
    content = [Bad(1, "not_paraphrase", "votes", None)]  # read, then judged: not an error
    assert list(reading.some_readable(iter(content), "f.tsv", "x")) == content
    unreadable = [Bad(2, "column_count", "expected 2 columns, found 4", None),
                  Bad(5, "invalid_utf8", "byte 3", None), Bad(6, "column_count", "", None)]
    with pytest.raises(InputError, match=r"^f.tsv:2: no line could be read as a tsv pair corpus "
                                         r"\(column_count 2, invalid_utf8 1\); this one: expected "
                                         r"2 columns, found 4\. Check the corpus's format"):
        list(reading.some_readable(iter(unreadable), "f.tsv", "a tsv pair corpus"))
    assert list(reading.some_readable([], "f.tsv", "x")) == []  # nothing read: the reader says
