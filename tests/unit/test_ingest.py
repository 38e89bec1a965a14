import os

import polars as pl
import pytest

from paramill.bitext.ingest import IngestSettings, ingest
from paramill.bitext.readers import CorpusSpec
from paramill.errors import InputError
from paramill.io.jsonfiles import read_json
from paramill.io.outputs import sha256_file
from paramill.provenance import prov_path


def moses(write_file, n=25, kind="gz"):
    cs = write_file("m.cs.gz", [f"Věta číslo {i}." for i in range(n)], kind)
    en = write_file("m.en.gz", [f"Sentence number {i}." for i in range(n)], kind)
    return CorpusSpec.from_dict("m", {"format": "moses", "cs": str(cs), "en": str(en)})


def test_ingest_writes_shards_of_the_configured_size(write_file, tmp_path):
    out = tmp_path / "ingest" / "m"
    stats = ingest(moses(write_file), out, IngestSettings(shard_size=10, batch_rows=7))
    assert stats["rows_in"] == 25 and stats["rows_out"] == 25 and stats["rejected"] == {}
    assert stats["shards"] == ["shard-00000.parquet", "shard-00001.parquet", "shard-00002.parquet"]
    frame = pl.scan_parquet(out / "shard-*.parquet").collect()
    assert frame.height == 25
    assert frame["line_no"].to_list() == list(range(1, 26))
    first = frame.row(0, named=True)
    assert first["cs"] == "Věta číslo 0." and first["en"] == "Sentence number 0."
    assert first["corpus"] == "m" and first["source_file"].endswith("m.cs.gz;" + str(tmp_path / "m.en.gz"))
    assert first["pair_id"].startswith("m-") and first["pair_id"].endswith("-1")
    assert frame["pair_id"].n_unique() == 25
    assert prov_path(out).exists()


def test_same_input_gives_same_ids_and_bytes(write_file, tmp_path):
    spec = moses(write_file)
    ingest(spec, tmp_path / "a", IngestSettings(shard_size=10))
    ingest(spec, tmp_path / "b", IngestSettings(shard_size=10))
    for name in sorted(os.listdir(tmp_path / "a")):
        if name.endswith(".parquet"):
            assert sha256_file(tmp_path / "a" / name) == sha256_file(tmp_path / "b" / name), name


def test_changed_source_bytes_change_the_pair_ids(write_file, tmp_path):
    a = ingest(moses(write_file, n=3), tmp_path / "a")
    b = ingest(moses(write_file, n=4), tmp_path / "b")
    ids_a = pl.read_parquet(tmp_path / "a" / "shard-00000.parquet")["pair_id"][0]
    ids_b = pl.read_parquet(tmp_path / "b" / "shard-00000.parquet")["pair_id"][0]
    assert ids_a != ids_b and a["source_files"] != b["source_files"]


def test_rejected_lines_are_counted_and_kept_with_reason(write_file, tmp_path):
    path = write_file("c.tsv", [b"1\t1\ta\tb", b"2\t1\tbroken", b"3\t1\t\xff\tb", b"4\t1\tc\td"])
    spec = CorpusSpec.from_dict("c", {"format": "czeng1", "path": str(path)})
    stats = ingest(spec, tmp_path / "out")
    assert stats["rows_in"] == 4 and stats["rows_out"] == 2
    assert stats["rejected"] == {"column_count": 1, "invalid_utf8": 1}
    rejected = pl.read_parquet(tmp_path / "out" / "rejected.parquet")
    assert rejected.select("line_no", "reason").rows() == [(2, "column_count"), (3, "invalid_utf8")]
    assert read_json(tmp_path / "out" / "stats.json") == stats


@pytest.mark.parametrize("case", ["truncated", "mismatch", "empty"])
def test_unusable_input_leaves_no_output_at_all(write_file, tmp_path, case):
    if case == "truncated":
        full = write_file("t.gz", [f"1\t1\tradek {i}\tline {i}" for i in range(20000)], "gz")
        full.write_bytes(full.read_bytes()[:-100])
        spec = CorpusSpec.from_dict("t", {"format": "czeng1", "path": str(full)})
    elif case == "mismatch":
        cs = write_file("x.cs", ["a", "b"])
        en = write_file("x.en", ["a"])
        spec = CorpusSpec.from_dict("x", {"format": "moses", "cs": str(cs), "en": str(en)})
    else:
        spec = CorpusSpec.from_dict("e", {"format": "tsv", "path": str(write_file("e.tsv", b""))})
    out = tmp_path / "work" / "out"
    with pytest.raises(InputError):
        ingest(spec, out, IngestSettings(shard_size=100, batch_rows=100))
    assert os.listdir(tmp_path / "work") == []


def test_a_corpus_of_which_no_line_can_be_read_is_an_error_not_an_empty_corpus(write_file, tmp_path):
    """A wrong ``format`` (a four-column CzEng 1.x file read as two-column TSV) rejects every
    line: the stage stops with the file, the first line and the reasons, and writes nothing.
    One readable line is enough for the rest to be data: they go to the rejected table."""
    path = write_file("c.tsv", ["1\t1\tVěta.\tA sentence.", "2\t1\tDalší.\tAnother.", b"\xff"])
    spec = CorpusSpec.from_dict("c", {"format": "tsv", "path": str(path)})
    with pytest.raises(InputError) as caught:
        ingest(spec, tmp_path / "out")
    assert str(caught.value).startswith(f"{path}:1: no line could be read as a tsv bitext corpus "
                                        "(column_count 2, invalid_utf8 1); this one: expected 2")
    assert "Check the corpus's format, columns and header" in str(caught.value)
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out*"))
    stats = ingest(CorpusSpec.from_dict("c", {"format": "czeng1", "path": str(path)}), tmp_path / "ok")
    assert stats["rows_out"] == 2 and stats["rejected"] == {"invalid_utf8": 1}


def test_batch_rows_bounds_memory_without_changing_what_is_written(write_file, tmp_path):
    """``batch_rows`` is launch-only (x-launch: the rules pass it outside their params): the
    shards and the rejected rows hold the same rows, in the same order, whatever its value."""
    cs = write_file("b.cs.gz", [f"Věta {i}." if i % 9 else "x" * 80 for i in range(60)], "gz")
    en = write_file("b.en.gz", [f"Sentence {i}." for i in range(60)], "gz")
    spec = CorpusSpec.from_dict("b", {"format": "moses", "cs": str(cs), "en": str(en)})
    written = []
    for batch_rows in (1, 7, 50000):
        out = tmp_path / str(batch_rows)
        stats = ingest(spec, out, IngestSettings(shard_size=10, batch_rows=batch_rows,
                                                 max_line_bytes=64))
        written.append((stats["rows_out"], stats["rejected"], stats["shards"],
                        pl.read_parquet(out / "shard-*.parquet"),
                        pl.read_parquet(out / "rejected.parquet")))
    first = written[0]
    assert first[0] == 53 and first[1] == {"line_too_long": 7} and len(first[2]) == 6
    for other in written[1:]:
        assert other[:3] == first[:3]
        assert other[3].equals(first[3]) and other[4].equals(first[4])
