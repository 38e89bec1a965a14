import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paramill.io import (ShardWriter, atomic_output, compression_of, open_compressed,
                         parquet_rows, sha256_file)

LINES = ["první řádek", "second line", "třetí"]


@pytest.mark.parametrize("kind,expected", [("plain", "plain"), ("gz", "gzip"), ("xz", "xz"),
                                           ("zst", "zstd"), ("bz2", "bz2")])
def test_open_compressed_reads_every_format_by_magic(write_file, kind, expected):
    # the name says nothing: detection must use the magic bytes
    path = write_file(f"data-{kind}.txt", LINES, kind)
    assert compression_of(path) == expected
    with open_compressed(path) as fh:
        assert fh.read().decode().splitlines() == LINES


def test_sha256_matches_known_digest(tmp_path):
    path = tmp_path / "x"
    path.write_bytes(b"abc")
    assert sha256_file(path) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_atomic_output_renames_on_success(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    with atomic_output(target) as (tmp,):
        tmp.write_text("done")
        assert not target.exists()
    assert target.read_text() == "done"
    assert os.listdir(target.parent) == ["out.txt"]


def test_atomic_output_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    target_dir = tmp_path / "shards"
    with pytest.raises(RuntimeError):
        with atomic_output(target, target_dir) as (tmp, tmp_dir):
            tmp.write_text("half")
            tmp_dir.mkdir()
            (tmp_dir / "a").write_text("x")
            raise RuntimeError("killed")
    assert os.listdir(tmp_path) == []


def test_atomic_output_replaces_an_old_directory(tmp_path):
    target = tmp_path / "d"
    target.mkdir()
    (target / "stale").write_text("old")
    with atomic_output(target) as (tmp,):
        tmp.mkdir()
        (tmp / "fresh").write_text("new")
    assert os.listdir(target) == ["fresh"]


def test_shard_writer_splits_rows_into_shards(tmp_path):
    schema = pa.schema([pa.field("n", pa.int64())])
    writer = ShardWriter(tmp_path / "s", schema, shard_size=4)
    writer.write(pa.table({"n": list(range(6))}))
    writer.write(pa.table({"n": list(range(6, 11))}))
    paths = writer.close()
    assert [p.name for p in paths] == ["shard-00000.parquet", "shard-00001.parquet",
                                       "shard-00002.parquet"]
    assert [parquet_rows([p]) for p in paths] == [4, 4, 3]
    assert pq.read_table(paths[1])["n"].to_pylist() == [4, 5, 6, 7]
