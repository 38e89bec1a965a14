import json

import numpy as np
import pytest

from paramill.evaluate.sts import by_year, collect, cosine, read, score
from paramill.errors import InputError


def test_score_tsv_skips_pairs_without_gold(tmp_path):
    (tmp_path / "a.tsv").write_text("4.5\tA dog runs.\tA dog is running.\n\tNo gold.\tNone.\n"
                                    "x\tBad gold.\tBad.\n1.0\tA cat.\tA car.\n")
    data = read("a", 2012, "tsv", tmp_path / "a.tsv")
    assert data.gold == [4.5, 1.0] and data.s2 == ["A dog is running.", "A car."]
    assert data.skipped == 2 and data.year == "2012"


def test_senteval_input_and_gold(tmp_path):
    (tmp_path / "STS.input.news.txt").write_text('A "quoted" one.\tB.\nC.\tD.\nE.\tF.\n')
    (tmp_path / "STS.gs.news.txt").write_text("3.2\n\n0.4\n")
    data = read("news", 2013, "senteval", tmp_path / "STS.input.news.txt")
    assert data.s1 == ['A "quoted" one.', "E."] and data.gold == [3.2, 0.4] and data.skipped == 1
    (tmp_path / "STS.gs.news.txt").write_text("3.2\n")
    with pytest.raises(InputError, match="STS.gs.news.txt: 1 scores for the 3 pairs of"):
        read("news", 2013, "senteval", tmp_path / "STS.input.news.txt")


def test_sts_benchmark_with_stray_fields_and_quotes(tmp_path):
    (tmp_path / "sts-dev.csv").write_text(
        'main-captions\tMSRvid\t2012test\t0000\t5.000\tA man "with a hat.\tA man with a hat.\n'
        "main-news\theadlines\t2015\t0001\t1.5\tX.\tY.\tstray\tfields\n"
        "broken line\n")
    data = read("stsb", "dev", "stsbenchmark", tmp_path / "sts-dev.csv")
    assert data.s1 == ['A man "with a hat.', "X."] and data.gold == [5.0, 1.5] and data.skipped == 1


def test_a_shifted_line_or_a_score_off_the_scale_is_an_error_not_a_pair(tmp_path):
    """Two tabs in a row shift every field after them: the STS Benchmark reader took the
    pair's id as its gold score and the score as its first sentence (one such line of the
    sample's dev set: Pearson 95.1 -> 7.3, n unchanged). The layouts written one way (STS-B,
    SentEval's gold, SICK) say so naming file and line; blank lines and lines of too few
    fields are still pairs without a score, skipped and counted."""
    good = "main-news\theadlines\t2015\t0001\t1.5\tX.\tY.\n"
    cases = {"main-news\t\theadlines\t2015\t0150\t1.5\tX.\tY.\n": "field 2 is empty",
             "main-news\theadlines\t2015\t0150\t\t1.5\tX.\tY.\n": "field 5 is empty",
             "main-news\theadlines\t2015\t0001\t5.2\tX.\tY.\n": "gold score 5.2 is off "
             "stsbenchmark's scale 0-5: the line's fields are shifted, or the file is not stsbenchmark",
             "main-news\theadlines\t2015\t0001\t-1\tX.\tY.\n": "gold score -1 is off"}
    for line, message in cases.items():
        (tmp_path / "sts-dev.csv").write_text(good + line)
        with pytest.raises(InputError) as err:
            read("stsb", "dev", "stsbenchmark", tmp_path / "sts-dev.csv")
        assert (err.value.path, err.value.line) == (str(tmp_path / "sts-dev.csv"), 2), line
        assert message in str(err.value)
    (tmp_path / "sts-dev.csv").write_text(good + "\n \t \n" + good.replace("1.5", "0") + "short\t1\n")
    data = read("stsb", "dev", "stsbenchmark", tmp_path / "sts-dev.csv")
    assert data.gold == [1.5, 0.0] and data.skipped == 3
    (tmp_path / "STS.input.n.txt").write_text("A.\tB.\nC.\tD.\n")
    (tmp_path / "STS.gs.n.txt").write_text("\n7\n")
    with pytest.raises(InputError, match=r"STS.gs.n.txt:2: gold score 7 is off senteval's scale 0-5"):
        read("n", 2013, "senteval", tmp_path / "STS.input.n.txt")
    (tmp_path / "SICK.txt").write_text("pair_ID\tsentence_A\tsentence_B\trelatedness_score\n"
                                       "1\tA boy runs.\tA kid runs.\t4.6\n"
                                       "2\tA boy runs.\t\tA kid runs.\t4.6\n")
    with pytest.raises(InputError, match=r"SICK.txt:3: field 3 is empty: the fields after it are shifted"):
        read("sick", "sick", "sick", tmp_path / "SICK.txt")
    (tmp_path / "SICK.txt").write_text("pair_ID\tsentence_A\tsentence_B\trelatedness_score\n"
                                       "1\tA boy runs.\tA kid runs.\t0.5\n")
    with pytest.raises(InputError, match=r"SICK.txt:2: gold score 0.5 is off sick's scale 1-5"):
        read("sick", "sick", "sick", tmp_path / "SICK.txt")


def test_the_command_says_how_many_pairs_it_skipped(tmp_path, capsys):
    """Pairs without a usable gold score were counted only in the TSV and JSON; the job's
    own line says so now, so a log shows a set that lost pairs."""
    from paramill.cli import main

    (tmp_path / "p.tsv").write_text("a man reads\ta man is reading\nthe dog runs\ta dog is running\n"
                                    "a cat sleeps\tthe cat is asleep\n")
    assert main(["embed", "train", str(tmp_path / "p.tsv"), "--out", str(tmp_path / "m.pt"),
                 "--spec", '{"components": ["word"], "units": "word", "dim": 8}',
                 "--settings", '{"epochs": 1, "batch_size": 2, "megabatch": 1}']) == 0
    (tmp_path / "STS.input.x.txt").write_text("a man reads\ta dog runs\nthe cat\ta cat\n"
                                              "a dog\tthe dog runs\nno gold\there\n")
    (tmp_path / "STS.gs.x.txt").write_text("1.0\n4.5\n3\n\n")
    sets = [{"name": n, "year": "y", "format": "senteval", "path": str(tmp_path / "STS.input.x.txt")}
            for n in ("first", "second")]
    (tmp_path / "STS.input.y.txt").write_text("a man reads\ta dog runs\nthe cat\ta cat\n")
    (tmp_path / "STS.gs.y.txt").write_text("1.0\n4.5\n")
    sets[1]["path"] = str(tmp_path / "STS.input.y.txt")
    capsys.readouterr()
    assert main(["evaluate", "sts", "--model", str(tmp_path / "m.pt"), "--datasets", json.dumps(sets),
                 "--tsv", str(tmp_path / "r.tsv"), "--json", str(tmp_path / "r.json")]) == 0
    first, second = capsys.readouterr().err.strip().splitlines()[-2:]
    assert "n=3" in first and first.endswith("(1 pair without a gold score skipped)")
    assert "n=2" in second and "skipped" not in second
    # no set at all (evaluate.sts empty): an empty table, and the line says why
    assert main(["evaluate", "sts", "--model", str(tmp_path / "m.pt"), "--datasets", "[]",
                 "--tsv", str(tmp_path / "e.tsv"), "--json", str(tmp_path / "e.json")]) == 0
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "paramill evaluate sts: no STS set given (config evaluate.sts names none): the table has no rows")
    assert (tmp_path / "e.tsv").read_text().splitlines() == ["dataset\tyear\tn\tskipped\tpearson\tspearman"]


def test_sick(tmp_path):
    (tmp_path / "SICK.txt").write_text("pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment\n"
                                       "1\tA boy runs.\tA kid runs.\t4.6\tENTAILMENT\n")
    data = read("sick", "sick", "sick", tmp_path / "SICK.txt")
    assert data.gold == [4.6] and data.s2 == ["A kid runs."]


def test_pit2015_and_twitter_url_votes(tmp_path):
    (tmp_path / "dev.data").write_text("17\tTopic\tSent one\tSent two\t(3, 2)\ttags\ttags\n"
                                       "17\tTopic\tSent three\tSent four\t(0, 5)\ttags\ttags\n")
    pit = read("pit", 2015, "pit2015", tmp_path / "dev.data")
    assert pit.gold == [3.0, 0.0] and pit.s1 == ["Sent one", "Sent three"]
    (tmp_path / "url.txt").write_text("News title \tA rephrase \t(5,6)\thttps://t.co/x\nA\tB\tbad\turl\n")
    url = read("url", 2017, "twitter_url", tmp_path / "url.txt")
    assert url.gold == [5.0] and url.s1 == ["News title"] and url.skipped == 1


def test_tokenised_directory(tmp_path):
    for name, text in (("a.toks", "a b\nc d\n"), ("b.toks", "a c\nc e\n"), ("sim.txt", "1\n0\n")):
        (tmp_path / name).write_text(text)
    data = read("toks", "x", "toks", tmp_path)
    assert data.gold == [1.0, 0.0] and data.s2 == ["a c", "c e"]


def test_a_json_lines_set_naming_a_key_twice_is_an_error_naming_the_line(tmp_path):
    """A gold set whose object gives `score` twice has no one gold score (Python read the
    last): an error naming the file and line, as a broken line of any set."""
    path = tmp_path / "sts.jsonl"
    path.write_text('{"sentence1": "a", "sentence2": "b", "score": 4.0}\n'
                    '{"sentence1": "c", "sentence2": "d", "score": 1.0, "score": 5.0}\n')
    with pytest.raises(InputError, match=r"sts.jsonl:2: the key 'score' is given twice in one object"):
        read("x", 1, "jsonl", path, {"s1": "sentence1", "s2": "sentence2", "score": "score"})


def test_unknown_format():
    with pytest.raises(ValueError, match="unknown sts format 'xml'; known: csv, json, jsonl, parquet, pit2015, senteval"):
        read("x", 1, "xml", "nowhere")


class Fixed:
    """A stand-in encoder with fixed vectors per sentence."""

    def __init__(self, table):
        self.table = table

    def encode(self, sentences):
        return np.array([self.table[s] for s in sentences], dtype=np.float32)


def test_score_and_year_means_by_hand(tmp_path):
    (tmp_path / "a.tsv").write_text("5\ta\tb\n0\ta\tc\n3\ta\td\n")
    model = Fixed({"a": [1, 0], "b": [1, 0.1], "c": [0, 1], "d": [1, 1]})
    row = score(model, read("a", 2014, "tsv", tmp_path / "a.tsv"))
    sims = cosine(np.array([[1, 0]] * 3, float), np.array([[1, 0.1], [0, 1], [1, 1]], float))
    assert row["pearson"] == pytest.approx(100 * np.corrcoef(sims, [5, 0, 3])[0, 1], abs=0.01)
    assert row["spearman"] == 100.0 and row["n"] == 3
    rows = [{"year": "2014", "n": 100, "pearson": 60.0, "spearman": 50.0},
            {"year": "2014", "n": 300, "pearson": 80.0, "spearman": 70.0},
            {"year": "2015", "n": 10, "pearson": None, "spearman": None}]
    (year,) = by_year(rows)
    assert year["pearson_mean"] == 70.0 and year["pearson_weighted"] == 75.0
    assert year["spearman_weighted"] == 65.0 and year["n"] == 400


def test_a_set_is_scored_a_chunk_at_a_time_as_it_is_whole(tmp_path, monkeypatch):
    """evaluate sts holds a cosine and a gold score a pair, not the set's text and vectors:
    the same row as the whole set read and scored at once, skipped lines counted in any chunk."""
    from paramill.evaluate import sts

    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(40)]
    table = {w: rng.normal(size=4) for w in words}
    lines = [f"{rng.uniform(0, 5):.2f}\t{rng.choice(words)}\t{rng.choice(words)}" for _ in range(50)]
    lines[7] = "no score\tw1\tw2"  # skipped, in the second chunk of 5
    lines[48] = "\tw1\tw2"  # skipped, in the last
    (tmp_path / "s.tsv").write_text("\n".join(lines) + "\n")
    model = Fixed(table)
    whole = score(model, read("s", 2014, "tsv", tmp_path / "s.tsv"))
    monkeypatch.setattr(sts, "CHUNK_PAIRS", 5)
    parts = list(sts.chunks("s", 2014, "tsv", tmp_path / "s.tsv", size=5))
    assert [len(p.gold) for p in parts] == [5] * 9 + [3] and sum(p.skipped for p in parts) == 2
    encoded = []
    monkeypatch.setattr(model, "encode", lambda sentences: encoded.append(len(sentences))
                        or Fixed.encode(model, sentences))
    chunked = sts.score_file(model, "s", 2014, "tsv", tmp_path / "s.tsv")
    assert encoded == [5] * 18 + [3, 3]  # each side of each chunk
    assert chunked == whole and whole["n"] == 48 and whole["skipped"] == 2
    assert whole["pearson"] is not None
    (tmp_path / "none.tsv").write_text("a\tb\t1\n" * 12)  # columns in another order: no pair
    with pytest.raises(InputError, match=r"none.tsv: no pair with a gold score could be read as tsv \(12 skipped\)"):
        sts.score_file(model, "n", 2014, "tsv", tmp_path / "none.tsv")


def test_collect_builds_one_table(tmp_path):
    for name, p in (("sweep-00", 60.0), ("sweep-01", 70.0)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "sts.json").write_text(json.dumps({
            "datasets": [{"dataset": "d", "year": "2012", "n": 5, "pearson": p, "spearman": p}],
            "years": [{"year": "2012", "n": 5, "pearson_mean": p, "spearman_mean": p,
                       "pearson_weighted": p}]}))
    n = collect([tmp_path / "sweep-00/sts.json", tmp_path / "sweep-01/sts.json"],
                {"sweep-00": {"megabatch": 1}, "sweep-01": {"megabatch": 4}}, tmp_path / "s.tsv")
    text = (tmp_path / "s.tsv").read_text()
    assert n == 4 and '{"megabatch": 4}' in text and "mean 2012" in text


# -- download: against a loopback server, never the internet -------------------------

def _serve(directory):
    import functools
    import http.server
    import threading

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return server


def test_download_checks_the_pinned_sha256_and_unpacks(tmp_path):
    import hashlib
    import io
    import tarfile

    from paramill.evaluate.download import ARCHIVES, Archive, download
    from paramill.provenance import verify

    site = tmp_path / "site"
    site.mkdir()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, text in (("stsbenchmark/sts-dev.csv", "main-captions\tMSRvid\t2012test\t1\t5.0\ta\tb\n"),
                           ("stsbenchmark/readme.txt", "hi\n")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    (site / "sts.tar.gz").write_bytes(buf.getvalue())
    digest = hashlib.sha256(buf.getvalue()).hexdigest()
    server = _serve(site)
    url = f"http://127.0.0.1:{server.server_port}/sts.tar.gz"
    try:
        good = {"fake": [Archive(url, digest, len(buf.getvalue()))]}
        result = download("fake", tmp_path / "out" / "fake", good)
        assert result["files"] == ["readme.txt", "sts-dev.csv"]
        assert (tmp_path / "out/fake/sts-dev.csv").read_text().startswith("main-captions")
        assert verify(tmp_path / "out/fake") == []
        bad = {"fake": [Archive(url, "0" * 64, 1)]}
        with pytest.raises(ValueError, match="refusing"):
            download("fake", tmp_path / "out" / "bad", bad)
        assert not (tmp_path / "out" / "bad").exists()
        assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["fake", "fake.prov.json"]
    finally:
        server.shutdown()
    with pytest.raises(ValueError, match="unknown STS archive"):
        download("sts2099", tmp_path / "x")
    for archives in ARCHIVES.values():
        assert all(len(a.sha256) == 64 and int(a.sha256, 16) for a in archives)


def test_unpack_refuses_paths_outside_the_target(tmp_path):
    import io
    import tarfile

    from paramill.evaluate.download import unpack

    path = tmp_path / "evil.tar"
    with tarfile.open(path, "w") as tf:
        info = tarfile.TarInfo("top/../../escape.txt")
        info.size = 1
        tf.addfile(info, io.BytesIO(b"x"))
    (tmp_path / "root").mkdir()
    with pytest.raises(ValueError, match="outside"):
        unpack(path, tmp_path / "root", strip=1)


def test_gold_scores_are_plain_decimals_others_skipped_and_counted():
    from paramill.evaluate.sts import StsData

    data = StsData("x", "2017")
    for given in ("3.5", " 4 ", "1_0", "٣", "５", "nan", "inf", ""):
        data.add("a b", "c d", given)
    assert data.gold == [3.5, 4.0] and data.skipped == 6


def test_a_set_without_one_scored_pair_is_an_error_naming_it(tmp_path):
    """Columns in another order (s1, s2, score read as score, s1, s2) skip every line: the
    evaluation stops naming the file instead of reporting a set of no pairs."""
    path = tmp_path / "sts.tsv"
    path.write_text("A man sings.\tA man is singing.\t4.8\nA dog.\tA cat.\t0.5\n")
    with pytest.raises(InputError, match=r"sts.tsv: no pair with a gold score could be read as "
                                         r"tsv \(2 skipped\); check the set's format"):
        read("x", 2012, "tsv", path)
    path.write_text("4.8\tA man sings.\tA man is singing.\n")
    assert read("x", 2012, "tsv", path).gold == [4.8]
