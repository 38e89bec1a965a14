import gzip
import json

import pytest

from paramill.cli import build_parser, main


def test_help_explains_every_command(capsys):
    parser = build_parser()
    for argv in (["--help"], ["ingest", "--help"], ["clean", "--help"], ["stats", "bitext", "--help"],
                 ["provenance", "verify", "--help"], ["config", "resolve", "--help"]):
        with pytest.raises(SystemExit) as done:
            parser.parse_args(argv)
        assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Moses pair" in out and "recorded input and output still has its recorded sha256" in out


def test_ingest_bad_file_exits_2_naming_file_and_line(tmp_path, capsys):
    src = tmp_path / "c.tsv.gz"
    src.write_bytes(gzip.compress(b"".join(b"1\t1\tradek\tline %d\n" % i for i in range(20000)))[:-50])
    code = main(["ingest", "--corpus", "c", "--format", "czeng1", "--path", str(src),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{src}:" in err and "truncated or corrupt" in err
    assert not (tmp_path / "out").exists()


def test_ingest_then_clean_then_stats_from_the_command_line(tmp_path, capsys):
    cs, en = tmp_path / "a.cs", tmp_path / "a.en"
    cs.write_text("Ahoj.\nAhoj.\n\nPes.\n")
    en.write_text("Hello.\nHello.\nEmpty.\nDog.\n")
    assert main(["--rule", "ingest", "ingest", "--corpus", "a", "--format", "moses", "--cs", str(cs),
                 "--en", str(en), "--out", str(tmp_path / "in"),
                 "--settings", '{"shard_size": 2}']) == 0
    assert main(["clean", "--corpus", "a", "--ingested", str(tmp_path / "in"),
                 "--shards", str(tmp_path / "sh"), "--rejected", str(tmp_path / "r.parquet"),
                 "--keys", str(tmp_path / "k.parquet"), "--stats", str(tmp_path / "s.json"),
                 "--settings", '{"min_tokens": 1}']) == 0
    assert main(["stats", "bitext", str(tmp_path / "s.json"), "--json", str(tmp_path / "t.json"),
                 "--tsv", str(tmp_path / "t.tsv")]) == 0
    total = json.loads((tmp_path / "t.json").read_text())
    assert total["rows_in"] == 4 and total["kept"] == 2
    assert total["rejected"] == {"duplicate": 1, "empty_cs": 1}
    assert main(["provenance", "verify", str(tmp_path / "t.json")]) == 0
    assert "OK (whole chain)" in capsys.readouterr().out
    cs.write_text("changed\n")
    assert main(["provenance", "verify", str(tmp_path / "t.json")]) == 1
    assert f"{cs}: input changed" in capsys.readouterr().out


def test_config_validate_names_the_bad_key(tmp_path, capsys):
    bad = tmp_path / "c.yaml"
    bad.write_text("bitext:\n  clean:\n    max_tokens: -3\n")
    assert main(["config", "validate", str(bad)]) == 2
    assert "config key bitext.clean.max_tokens: -3 is less than the minimum of 1" in capsys.readouterr().err


def test_bad_settings_json_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as done:
        main(["ingest", "--corpus", "a", "--format", "tsv", "--path", "x", "--out", "o",
              "--settings", "{not json"])
    assert done.value.code == 2
    assert "not valid JSON" in capsys.readouterr().err
