"""Hostile-but-ordinary inputs: cut and corrupt compressed files, files that are not files,
byte order marks, CRLF line limits and control characters that separate words.

The property every codec must hold: a stream that ends before its end-of-stream marker,
or is corrupt, raises InputError naming the file; it never yields *different* data
quietly (a corrupt byte in a field no check covers, such as gzip's mtime, may leave the
data as it was, which is fine).
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import re
from pathlib import Path

import pytest
import zstandard

from paramill.bitext.readers import CorpusSpec, read_corpus
from paramill.io.lines import LineStream
from paramill.errors import InputError
from paramill.io.compressed import open_compressed
from paramill.io.jsonfiles import read_json
from paramill.text import normalize, normalize_expr

#: ~20 KB of text: several blocks/frames' worth for every codec at its defaults
DATA = b"".join(b"%d\tV\xc3\xbdzkum %d ukazuje.\tResearch %d shows it.\n" % (i, i * 7, i * 13)
                for i in range(600))


def _zstd(data: bytes) -> bytes:
    # as the zstd command line writes it: content checksum on
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


CODECS = {
    "gz": lambda d: gzip.compress(d, mtime=0),
    "xz": lzma.compress,
    "bz2": bz2.compress,
    "zst": _zstd,
}


def _offsets(size: int) -> list[int]:
    """Every offset near the start (headers) and the end (footers), a stride in between."""
    edge = set(range(0, min(size, 80))) | set(range(max(0, size - 80), size))
    return sorted(edge | set(range(80, size, 97)))


def _read_all(path) -> bytes:
    with open_compressed(path) as fh:
        return fh.read()


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_every_truncation_of_every_codec_is_an_error_naming_the_file(tmp_path, codec):
    packed = CODECS[codec](DATA)
    path = tmp_path / f"corpus.tsv.{codec}"
    assert len(_offsets(len(packed))) > 100
    for cut in _offsets(len(packed)):
        path.write_bytes(packed[:cut])
        with pytest.raises(InputError) as info:
            _read_all(path)
        assert str(path) in str(info.value), (cut, info.value)
        # the line readers name the line where the stream broke (or the empty file)
        with pytest.raises(InputError, match=str(path)):
            list(LineStream(str(path), 65536))
    path.write_bytes(packed)
    assert _read_all(path) == DATA


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_a_corrupt_byte_is_an_error_or_changes_nothing(tmp_path, codec):
    packed = CODECS[codec](DATA)
    path = tmp_path / f"corpus.{codec}"
    errors = 0
    for at in _offsets(len(packed)):
        bad = bytearray(packed)
        bad[at] ^= 0x5A
        path.write_bytes(bytes(bad))
        try:
            got = _read_all(path)
        except InputError as exc:
            assert str(path) in str(exc)
            errors += 1
            continue
        assert got == DATA, f"byte {at} changed the data without an error"
    assert errors > len(_offsets(len(packed))) * 0.8


def test_zstd_reads_every_frame_and_a_cut_second_frame_is_an_error(tmp_path):
    first, second = DATA[:7000], DATA[7000:]
    packed = _zstd(first) + _zstd(second)
    path = tmp_path / "two-frames.zst"
    path.write_bytes(packed)
    assert _read_all(path) == DATA
    path.write_bytes(packed[:-3])
    with pytest.raises(InputError, match="zstd data is truncated"):
        _read_all(path)


def _zstd_streamed(data: bytes) -> bytes:
    """As a streaming writer writes it: no content size, a window descriptor, several blocks."""
    packer = zstandard.ZstdCompressor(write_checksum=False, write_content_size=False).compressobj()
    return b"".join(packer.compress(data[i:i + 3000]) for i in range(0, len(data), 3000)) + packer.flush()


def test_zstd_frames_of_every_header_and_skippable_frames_are_read_and_any_cut_is_an_error(tmp_path):
    """Frames are followed from their headers (content size or not, a window descriptor or
    not, a checksum or not, skippable frames between): the whole file reads as its data, and
    a cut anywhere, inside a skippable frame too, is an error."""
    skippable = b"\x5a\x2a\x4d\x18" + (5).to_bytes(4, "little") + b"notes"
    packed = _zstd(DATA[:5000]) + skippable + _zstd_streamed(DATA[5000:]) + skippable
    path = tmp_path / "frames.zst"
    path.write_bytes(packed)
    assert _read_all(path) == DATA
    for cut in _offsets(len(packed)):
        if cut in (len(_zstd(DATA[:5000])), len(_zstd(DATA[:5000])) + len(skippable),
                   len(packed) - len(skippable)):
            continue  # between frames: a shorter file, not a cut one
        path.write_bytes(packed[:cut])
        with pytest.raises(InputError, match=r"frames\.zst: (zstd data is truncated|named \.zst but)"):
            _read_all(path)


def _read_counting(path) -> tuple[int, int]:
    """The bytes ``path`` decompresses to, read 64 KiB at a time, and the peak of Python's
    allocations (liblzma's go through them too) while reading."""
    import tracemalloc

    total = 0
    tracemalloc.start()
    try:
        with open_compressed(path) as fh:
            while chunk := fh.read(1 << 16):
                total += len(chunk)
        return total, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_zstd_bomb_is_read_in_bounded_memory(tmp_path):
    """64 MiB of zeros packs into 2 KB of zstd; the decompressor handed the whole 64 MiB over
    in one piece (a 64 KiB chunk of such a file could hold 2 GB): it is read a buffer at a
    time, memory bounded by the reads whatever the ratio."""
    path = tmp_path / "zeros.zst"
    path.write_bytes(zstandard.ZstdCompressor(level=19).compress(bytes(64 << 20)))
    assert path.stat().st_size < 4096
    total, peak = _read_counting(path)
    assert total == 64 << 20 and peak < 4 << 20, peak


def _xz_with_dictionary(data: bytes, bits: int) -> bytes:
    """``data`` as xz whose block header asks for the LZMA2 dictionary ``bits`` encodes (30:
    128 MiB, 31: 192 MiB, 39: 3 GiB), the header's CRC32 made good: what an encoder with that
    dictionary writes, without the gigabytes of memory such an encoder takes."""
    import zlib

    packed = bytearray(lzma.compress(data, filters=[{"id": lzma.FILTER_LZMA2, "dict_size": 1 << 20}]))
    size = (packed[12] + 1) * 4  # the block header, after the 12-byte stream header
    header = packed[12:12 + size]
    at = header.index(b"\x21\x01") + 2  # filter LZMA2, one byte of properties
    assert header[at] == 16  # 1 MiB
    header[at] = bits
    header[-4:] = zlib.crc32(bytes(header[:-4])).to_bytes(4, "little")
    packed[12:12 + size] = header
    return bytes(packed)


def test_an_xz_stream_asking_for_a_dictionary_over_128_mib_is_refused_saying_how_to_read_it(tmp_path):
    """liblzma has no memory cap unless given one, and fills the dictionary a header asks for
    (up to 1.5 GiB from `xz --lzma2=dict=1536MiB`, 4 GiB in the format) as the output grows.
    The cap is zstd's: 128 MiB reads, more is an error naming the dictionary."""
    path = tmp_path / "big.tsv.xz"
    path.write_bytes(_xz_with_dictionary(DATA, 30))
    assert _read_all(path) == DATA
    for bits, size in ((31, "192 MiB"), (39, "3 GiB"), (40, "4 GiB")):
        path.write_bytes(_xz_with_dictionary(DATA, bits))
        with pytest.raises(InputError, match=rf"big.tsv.xz: an xz stream whose dictionary \({size}\) is "
                                             r"larger than the 128 MiB a reader holds: recompress it"):
            list(LineStream(str(path), 65536))
    path.write_bytes(lzma.compress(DATA) + _xz_with_dictionary(DATA, 39))  # the second asks
    with pytest.raises(InputError, match=r"big.tsv.xz: an xz stream whose dictionary is larger"):
        _read_all(path)


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_streams_one_after_another_are_read_and_anything_after_them_but_padding_is_an_error(tmp_path, codec):
    """Concatenated streams (`cat a.xz b.xz`; pbzip2 and lbzip2 write a bz2 stream per block)
    read as one, with zero bytes after any of them, as `xz` and `gzip` read them (`lzma.open`
    failed a padded file; `zstd` refuses the zeros, and so do we). Other bytes after a stream
    are an error: `lzma.open` and `bz2.open` stopped quietly there, so a second stream whose
    header was corrupt was dropped with all it held. A cut inside the second is an error."""
    first, second = CODECS[codec](DATA[:7000]), CODECS[codec](DATA[7000:])
    path = tmp_path / f"two.{codec}"
    for padding in (b"", b"\0" * 4, b"\0" * 100_000):
        path.write_bytes(first + padding + second + padding)
        if padding and codec == "zst":
            with pytest.raises(InputError, match="zstd data is truncated or corrupt"):
                _read_all(path)
        else:
            assert _read_all(path) == DATA
    corrupt = first + bytes([second[0] ^ 0x5A]) + second[1:]
    for packed in (first + second + b"not " + codec.encode(), first + second + b"\0" * 8 + b"x",
                   corrupt, first + second[:-20]):
        path.write_bytes(packed)
        with pytest.raises(InputError, match=rf"two.{codec}: \w+ data is truncated or corrupt"):
            _read_all(path)
    opener = {"xz": lzma.open, "bz2": bz2.open}.get(codec)
    if opener:  # what the standard library made of the corrupt second stream
        path.write_bytes(corrupt)
        assert opener(path).read() == DATA[:7000]


def test_an_xz_bomb_is_read_in_memory_bounded_by_its_dictionary(tmp_path):
    """64 MiB of zeros packs into 10 KB of xz; read a buffer at a time, memory bounded by the
    dictionary (8 MiB at `xz -6`, liblzma's allocations go through Python's), not the output."""
    path = tmp_path / "zeros.xz"
    path.write_bytes(lzma.compress(bytes(64 << 20), preset=6))
    assert path.stat().st_size < 16384
    total, peak = _read_counting(path)
    assert total == 64 << 20 and peak < 12 << 20, peak


def test_a_zstd_frame_with_a_long_window_is_refused_saying_how_to_read_it(tmp_path):
    """`zstd --long=31` frames ask for a 2 GiB window; zstd itself refuses them over 128 MiB
    without --long=31. Refused too, saying so (it read as "truncated or corrupt")."""
    params = zstandard.ZstdCompressionParameters(window_log=31, enable_ldm=True, compression_level=3,
                                                 write_content_size=False)
    packer = zstandard.ZstdCompressor(compression_params=params).compressobj()
    path = tmp_path / "long.tsv.zst"
    path.write_bytes(packer.compress(DATA) + packer.flush())
    with pytest.raises(InputError, match=r"long.tsv.zst: a zstd frame whose window is larger than "
                                         r"the 128 MiB a reader holds \(2 GiB, written with zstd --long\): "
                                         r"recompress it without --long"):
        list(LineStream(str(path), 65536))


def test_the_line_where_a_stream_broke_is_named(tmp_path):
    packed = gzip.compress(DATA, mtime=0)
    path = tmp_path / "c.gz"
    path.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(InputError, match=r"c\.gz:\d+: gzip data is truncated") as info:
        list(LineStream(str(path), 65536))
    assert info.value.line > 1


def test_a_compressed_name_without_its_magic_is_refused(tmp_path):
    path = tmp_path / "cut.zst"
    path.write_bytes(_zstd(DATA)[:2])  # cut inside the 4-byte magic
    with pytest.raises(InputError, match=r"cut\.zst: named \.zst but is not zstd data"):
        _read_all(path)


def test_files_that_are_not_regular_files_are_one_clear_error(tmp_path):
    (tmp_path / "dir.tsv").mkdir()
    loop = tmp_path / "loop.tsv"
    loop.symlink_to(loop)
    fifo = tmp_path / "fifo.tsv"
    os.mkfifo(fifo)
    cases = {tmp_path / "dir.tsv": "is a directory", loop: "cannot be read",
             fifo: "not a regular file", "/dev/zero": "not a regular file",
             tmp_path / "missing.tsv": "file not found"}
    for path, message in cases.items():
        with pytest.raises(InputError, match=message):
            list(LineStream(str(path), 100))


def test_a_file_whose_name_is_not_utf8_is_refused_before_any_work(tmp_path, capsys):
    """A Latin-1 `café.tsv` (byte 0xe9) from an old file system: Python holds the byte as a
    lone surrogate, and the job failed after its work writing the name into a table
    (`surrogates not allowed`, no file named). An input or an output so named is an error
    naming it, with the byte, before anything is written."""
    import json

    bad = os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9.tsv")
    Path(bad).write_bytes(b"a cat sat\tthe cat sat down\nthe dog ran\ta dog is running\n")
    shown = str(tmp_path) + "/caf\\xe9.tsv"
    with pytest.raises(InputError, match=re.escape(f"{shown}: its name is not UTF-8 (the byte \\xe9)")):
        list(LineStream(bad, 100))
    from paramill.io.outputs import check_writable

    with pytest.raises(InputError, match=r"out\\xe9/x\.parquet: its name is not UTF-8"):
        check_writable(os.fsdecode(os.fsencode(str(tmp_path)) + b"/out\xe9/x.parquet"))
    from paramill.cli import main

    out = tmp_path / "out"
    assert main(["pairs", "ingest", "--corpus", "c", "--out", str(out),
                 "--spec", json.dumps({"format": "tsv", "path": bad})]) == 2
    assert "its name is not UTF-8 (the byte \\xe9)" in capsys.readouterr().err
    assert not out.exists()
    good = tmp_path / "caf\u00e9.tsv"  # the same name in UTF-8 reads
    good.write_text("a\tb\n")
    assert len(list(LineStream(str(good), 100))) == 1


@pytest.mark.parametrize("path,said", [("", "(an empty path): no file is named"),
                                       ("data/a\0b.tsv", "data/a\\0b.tsv: its name holds a NUL byte")])
def test_a_path_that_names_no_file_is_an_input_error_at_every_door(path, said, tmp_path, monkeypatch):
    """An empty path and one holding a NUL byte (Python's os calls raise ValueError for them,
    and Path("") is ".") are an InputError naming the path wherever a path comes in: every
    layout of every use, the line and Parquet readers, the output checks."""
    from paramill.evaluate import sts
    from paramill.formats import registry
    from paramill.io.outputs import atomic_output, check_writable
    from paramill.io.tableread import open_parquet
    from paramill.pairs.readers import PairCorpusSpec, read_pairs
    from paramill.twitter.identify import read_labelled

    monkeypatch.chdir(tmp_path)
    doors = [lambda: list(LineStream(path, 100)), lambda: open_parquet(path),
             lambda: check_writable(path), lambda: atomic_output(path).__enter__()]
    doors += [lambda f=f: sts.read("s", 2012, f, path) for f in registry.names("sts")]
    doors += [lambda f=f: read_labelled(path, f) for f in registry.names("labelled")]
    doors += [lambda f=f: list(read_corpus(CorpusSpec.from_dict("c", {"format": f, "path": path})))
              for f in registry.names("bitext") if f != "moses"]
    doors += [lambda: list(read_corpus(CorpusSpec.from_dict("c", {"format": "moses", "cs": path, "en": path})))]
    doors += [lambda f=f: list(read_pairs(PairCorpusSpec.from_dict("c", {"format": f, "path": path})))
              for f in registry.names("pairs") if f != "references"]
    doors += [lambda: list(read_pairs(PairCorpusSpec.from_dict(
        "c", {"format": "references", "reference": path, "hypotheses": [path]})))]
    for door in doors:
        with pytest.raises(InputError) as caught:
            door()
        assert said in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_an_unreadable_file_is_refused_for_a_user_without_override(tmp_path):
    """As an unprivileged user (where we are root, who reads any file, a forked child drops
    to nobody after everything the read needs is imported: the clone may sit under a home
    folder that nobody cannot enter)."""
    import shutil
    import tempfile

    from paramill.errors import InputError
    from paramill.io.lines import LineStream

    where = Path(tempfile.mkdtemp(dir="/tmp"))  # pytest's own folders are not open to others
    try:
        os.chmod(where, 0o755)
        (where / "open.tsv").write_text("a\tb\n")
        path = where / "secret.tsv"
        path.write_text("a\tb\n")
        path.chmod(0)
        list(LineStream(str(where / "open.tsv"), 100))  # loads every module a read uses
        if os.geteuid() != 0:
            with pytest.raises(InputError, match="secret.tsv: permission denied"):
                list(LineStream(str(path), 100))
            return
        pid = os.fork()
        if pid == 0:  # the child: nobody, then the read
            code = 4
            try:
                os.setgroups([])
                os.setresgid(65534, 65534, 65534)
                os.setresuid(65534, 65534, 65534)
                try:
                    list(LineStream(str(path), 100))
                    code = 1  # read a file it may not read
                except InputError as exc:
                    code = 0 if "secret.tsv: permission denied" in str(exc) else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, os.waitstatus_to_exitcode(status)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def tsv_rows(path, max_line_bytes=65536, **spec):
    """The rows of a bitext corpus in the tsv layout."""
    return read_corpus(CorpusSpec.from_dict("c", {"format": "tsv", "path": str(path), **spec}),
                       max_line_bytes)


def test_a_bom_before_a_tsv_header_is_not_part_of_the_first_name(tmp_path):
    path = tmp_path / "h.tsv"
    path.write_bytes(b"\xef\xbb\xbfcs\ten\nAhoj.\tHello.\n")
    assert [(r.cs, r.en) for r in tsv_rows(path, header=True)] == [("Ahoj.", "Hello.")]
    plain = tmp_path / "p.tsv"
    plain.write_bytes(b"\xef\xbb\xbfAhoj.\tHello.\n")
    assert [(r.cs, r.en) for r in tsv_rows(plain)] == [("Ahoj.", "Hello.")]


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"])
def test_max_line_bytes_counts_the_content_whatever_the_line_ending(tmp_path, ending):
    limit = 40
    exact, over = b"x" * (limit - 3) + b"\tyz", b"x" * (limit - 2) + b"\tyz"
    path = tmp_path / "l.tsv"
    path.write_bytes(exact + ending + over + ending + b"a\tb" + ending)
    rows = list(tsv_rows(path, limit))
    assert [(r.line_no, r.reason) for r in rows] == [(1, None), (2, "line_too_long"), (3, None)]
    assert rows[0].en == "yz" and rows[2].en == "b"


SEPARATORS = ["\t", "\n", "\x0b", "\x0c", "\r", "\x1c", "\x1d", "\x1e", "\x1f", "\x85",
              "\u2028", "\u2029"]


@pytest.mark.parametrize("sep", SEPARATORS, ids=[f"U+{ord(s):04X}" for s in SEPARATORS])
def test_separating_control_characters_become_a_space_in_both_normalisers(sep):
    import polars as pl

    text = f"The{sep}dog\x00 barks{sep}{sep}loudly\x07."
    expected = "The dog barks loudly."
    assert normalize(text) == expected
    assert pl.select(normalize_expr(pl.lit(text))).item() == expected


def test_a_guarded_parquet_read_keeps_a_batchs_text_to_its_bound(tmp_path, monkeypatch):
    """A file paramill did not write (`guard`): a dictionary entry written once and named by
    every row decodes to a copy a row, and zstd packs a page of one letter into bytes, so a
    small file decoded to gigabytes a batch (embed train and lexicon build asked for 11 GB
    on a 786-byte file). A batch holds no more rows than its text's bound allows: by the
    longest dictionary entry, and by the pages the values are in."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from paramill.io import tableread as tables

    monkeypatch.setattr(tables, "GUARD_BATCH_BYTES", 8 << 20)
    entry = "x" * (1 << 20)
    coded, plain = tmp_path / "coded.parquet", tmp_path / "plain.parquet"
    named = pa.DictionaryArray.from_arrays(pa.array([0] * 1000, pa.int32()), pa.array([entry]))
    pq.write_table(pa.table({"s1": named, "s2": ["y"] * 1000}), coded, compression="zstd",
                   store_schema=False)
    pq.write_table(pa.table({"s1": [entry] * 100, "s2": ["y"] * 100}), plain, compression="zstd",
                   use_dictionary=False)
    assert coded.stat().st_size < 10_000 and plain.stat().st_size < 100_000
    sizes = [b.num_rows for b in tables.iter_parquet_batches([coded], 65536, guard=True)]
    assert sum(sizes) == 1000 and max(sizes) == 4, sizes  # s1's share, 4 MiB, of 1 MiB values
    # one page of 100 MiB (pyarrow ends a page after 1,024 values): any row of it could
    # hold all of it, so a batch holds one
    assert [b.num_rows for b in tables.iter_parquet_batches([plain], 65536, guard=True)] == [1] * 100
    assert [b.num_rows for b in tables.iter_parquet_batches([plain], 65536)] == [100]  # unguarded
    assert [b.num_rows for b in tables.iter_parquet_batches([coded], 65536, ["s2"], guard=True)] == [1000]
    ordinary = tmp_path / "ordinary.parquet"
    pq.write_table(pa.table({"s1": ["a b c"] * 5000, "s2": [f"d {i}" for i in range(5000)]}), ordinary)
    assert [b.num_rows for b in tables.iter_parquet_batches([ordinary], 4096, guard=True)] == [4096, 904]
    # many row groups: read together where their bound is the same (one a row group read
    # 5,000 one-row batches), each probed column's file opened once (opened anew for each
    # group, its footer parsed every time: 20,000 groups took minutes)
    groups = tmp_path / "groups.parquet"
    pq.write_table(pa.table({"s1": ["a b c"] * 5000, "s2": [f"d {i % 7}" for i in range(5000)]}), groups,
                   row_group_size=1)
    assert [b.num_rows for b in tables.iter_parquet_batches([groups], 65536, guard=True)] == [5000]
    opened, real = [], pq.ParquetFile
    monkeypatch.setattr(tables.pq, "ParquetFile", lambda *a, **k: opened.append(k.get("read_dictionary")) or real(*a, **k))
    monkeypatch.setattr(tables, "GUARD_BATCH_BYTES", 64)  # every group's dictionary looked into
    sizes = [b.num_rows for b in tables.iter_parquet_batches([groups], 65536, guard=True)]
    assert sum(sizes) == 5000 and opened[:2] == [None, ["s1"]] and len(opened) <= 3


def test_a_guarded_parquet_read_bounds_a_batch_by_the_pages_it_touches(tmp_path, monkeypatch):
    """DELTA_BYTE_ARRAY writes each value as a prefix of the last one's and its own end: one
    value written once is every row's (a 485-byte file decoded to 1.7 GB), and no footer
    says how long its values are. A column's values may also all sit in its first rows,
    where a share of its size assumed them spread (a batch decoded all of them). The pages'
    headers bound each batch: every batch's text stays within the bound."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from paramill.io import tableread as tables

    monkeypatch.setattr(tables, "GUARD_BATCH_BYTES", 8 << 20)
    entry = "x" * (1 << 20)
    prefixed, gathered, listed = (tmp_path / f"{n}.parquet" for n in ("prefixed", "gathered", "listed"))
    pq.write_table(pa.table({"s1": [entry] * 200, "s2": ["y"] * 200}), prefixed, compression="zstd",
                   use_dictionary=False, column_encoding={"s1": "DELTA_BYTE_ARRAY", "s2": "PLAIN"},
                   data_page_size=64 << 20)
    pq.write_table(pa.table({"s1": [entry] * 40 + [""] * 20000, "s2": ["y"] * 20040}), gathered,
                   compression="zstd", use_dictionary=False, write_batch_size=1, row_group_size=1 << 20)
    pq.write_table(pa.table({"s1": [[entry]] * 50}), listed, compression="zstd", use_dictionary=False,
                   column_encoding={"s1": "DELTA_BYTE_ARRAY"}, data_page_size=64 << 20)
    assert prefixed.stat().st_size < 10_000 and gathered.stat().st_size < 100_000

    def text(batch) -> int:
        return int(pc.sum(pc.binary_length(pc.list_flatten(batch.column(0)) if batch.schema.field(0).type
                                            != pa.string() else batch.column(0))).as_py() or 0)

    for path, rows in ((prefixed, 200), (gathered, 20040), (listed, 50)):
        batches = list(tables.iter_parquet_batches([path], 65536, ["s1"], guard=True))
        assert sum(b.num_rows for b in batches) == rows
        assert max(text(b) for b in batches) <= 8 << 20, path.name
        assert max(text(b) for b in tables.iter_parquet_batches([path], 65536, ["s1"])) > 32 << 20
    # the pages are looked into only where a batch could decode past the bound: an ordinary
    # column under it reads in whole batches, and its headers are never read
    monkeypatch.setattr("paramill.io.pagescan.data_pages", lambda *a: pytest.fail("pages read"))
    assert [b.num_rows for b in tables.iter_parquet_batches([gathered], 65536, ["s2"], guard=True)] == [20040]
    monkeypatch.undo()
    # a header that cannot be read names the file, group and column (Arrow's named neither)
    data = bytearray(prefixed.read_bytes())
    data[pq.ParquetFile(prefixed).metadata.row_group(0).column(0).data_page_offset] = 0x1D
    prefixed.write_bytes(data)
    monkeypatch.setattr(tables, "GUARD_BATCH_BYTES", 8 << 20)
    with pytest.raises(InputError, match=r"prefixed.parquet: Parquet page header cannot be read "
                                         r"\(row group 1, column s1: a field of unknown type 13\)"):
        list(tables.iter_parquet_batches([prefixed], 65536, guard=True))


def test_a_parquet_input_that_is_not_parquet_or_is_corrupt_names_the_file(tmp_path, capsys):
    """Every Parquet a user hands a command (embed train pairs, a lexicon corpus, a pairs
    corpus) opens through paramill.tables: a file that is not Parquet, cut before its
    footer, or with a corrupt page is an error naming it; pyarrow's and polars' own errors
    named no file (lexicon build ended in a polars traceback)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from paramill.cli import main
    from paramill.io.tableread import iter_parquet_batches, open_parquet, parquet_rows

    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"s1": ["a b c", "d e f"] * 50, "s2": ["a b d", "d e g"] * 50}),
                   good, compression="none")
    data = good.read_bytes()
    (tmp_path / "text.parquet").write_bytes(b"s1\ts2\na\tb\n")
    (tmp_path / "cut.parquet").write_bytes(data[:len(data) // 2])
    for name in ("text.parquet", "cut.parquet"):
        with pytest.raises(InputError, match=rf"{name}: not a readable Parquet file \(Parquet magic"):
            open_parquet(tmp_path / name)
        with pytest.raises(InputError, match=rf"{name}: not a readable Parquet file"):
            parquet_rows([tmp_path / name])
    with pytest.raises(InputError, match=r"missing.parquet: file not found"):
        list(iter_parquet_batches([tmp_path / "missing.parquet"]))
    broken = bytearray(data)
    broken[4:40] = bytes(b ^ 0xFF for b in broken[4:40])  # the first page's header
    (tmp_path / "page.parquet").write_bytes(bytes(broken))
    with pytest.raises(InputError, match=r"page.parquet: Parquet data cannot be read after row 0"):
        list(iter_parquet_batches([tmp_path / "page.parquet"]))
    assert sum(b.num_rows for b in iter_parquet_batches([good])) == 100
    for name in ("text.parquet", "cut.parquet", "page.parquet"):
        path = str(tmp_path / name)
        assert main(["lexicon", "build", path, "--tsv", str(tmp_path / "l.tsv"), "--neighbours",
                     str(tmp_path / "n.tsv"), "--stats", str(tmp_path / "s.json"),
                     "--settings", '{"min_parascore": null}']) == 2
        assert f"paramill lexicon build: error: {path}: " in capsys.readouterr().err
        assert main(["embed", "train", path, "--out", str(tmp_path / "m.pt")]) == 2
        assert f"paramill embed train: error: {path}: " in capsys.readouterr().err
    assert not any(p.name.startswith(("l.tsv", "n.tsv", "s.json", "m.pt")) for p in tmp_path.iterdir())
    text = pa.table({"s1": ["ok one", "ok two"], "s2": ["a b", "c d"]}).column("s1").chunk(0)
    broken = pa.Array.from_buffers(pa.string(), 2, [None, text.buffers()[1],
                                                   pa.py_buffer(b"ok one\xffk two")])
    pq.write_table(pa.table({"s1": broken, "s2": ["a b", "c d"]}), tmp_path / "utf8.parquet")
    with pytest.raises(InputError, match=r"utf8.parquet: column s1, rows 1-2: Invalid UTF8"):
        list(iter_parquet_batches([tmp_path / "utf8.parquet"]))
    assert main(["embed", "train", str(tmp_path / "utf8.parquet"), "--out", str(tmp_path / "m.pt")]) == 2
    assert "utf8.parquet: column s1, rows 1-2" in capsys.readouterr().err  # polars panicked
    pq.write_table(pa.table({"s1": ["a b"], "s2": ["c d"], "parascore": ["high"]}), tmp_path / "s.parquet")
    assert main(["lexicon", "build", str(tmp_path / "s.parquet"), "--tsv", str(tmp_path / "l.tsv"),
                 "--neighbours", str(tmp_path / "n.tsv"), "--stats", str(tmp_path / "s.json")]) == 2
    assert "s.parquet: column parascore holds string, not numbers" in capsys.readouterr().err


def test_a_sentencepiece_model_file_that_is_not_one_names_it(tmp_path):
    """embed.model.sp_model and an NMT model's source_spm/target_spm are users' files:
    SentencePiece's own error was a traceback naming no setting."""
    from paramill.embed.features import Featurizer
    from paramill.nmt.subwords import Segmenter

    (tmp_path / "bad.model").write_bytes(b"not a model")
    for load in (lambda p: Featurizer("sp", sp_model=str(p)), Segmenter):
        with pytest.raises(InputError, match=r"bad.model: not a SentencePiece model \(.*could not parse"):
            load(tmp_path / "bad.model")
        with pytest.raises(InputError, match=r"missing.model: file not found"):
            load(tmp_path / "missing.model")


def test_a_table_of_another_shape_is_an_error_naming_the_file_and_the_column(tmp_path, capsys):
    """`twitter month` read day tables with polars and ended in its ColumnNotFoundError (no
    file named) on a Parquet file of other columns; a column of another kind (numbers for
    the tweet id) likewise. Both name the file and the column now, before the identifier is
    loaded. Text in any of Arrow's layouts (large strings, a dictionary) is still text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from paramill.cli import main
    from paramill.io.tableread import read_table
    from paramill.twitter.tweets import TWEETS

    row = {"tweet_id": "1", "author": "cnn", "author_id": "9", "created_at": "2026-11-02T10:00:00Z",
           "text": "Storm hits the town", "urls": ["https://a.com/1"], "short_urls": [],
           "canonical_urls": ["https://a.com/1"], "is_retweet": False, "retweet_of": None,
           "lang": "en", "source": "archive", "first_version": None}
    good = pa.Table.from_pylist([row], schema=TWEETS)
    pq.write_table(good, tmp_path / "day.parquet")
    def same(table):
        return table.to_pylist() == [row] and table.schema.types == TWEETS.types

    assert same(read_table(tmp_path / "day.parquet", TWEETS, "a day table"))
    wide = good.set_column(4, "text", good["text"].cast(pa.large_string()).dictionary_encode())
    pq.write_table(wide.append_column("extra", pa.array([1])), tmp_path / "wide.parquet")
    assert same(read_table(tmp_path / "wide.parquet", TWEETS, "a day table"))
    pq.write_table(pa.table({"s1": ["a"], "s2": ["b"]}), tmp_path / "pairs.parquet")
    pq.write_table(good.set_column(0, "tweet_id", pa.array([1])), tmp_path / "ids.parquet")
    (tmp_path / "model.npz").write_bytes(b"never read")
    for name, problem in (("pairs.parquet", "no column tweet_id (it has s1, s2)"),
                          ("ids.parquet", "column tweet_id holds int64, not string")):
        assert main(["twitter", "month", "--month", "2026-11", "--model", str(tmp_path / "model.npz"),
                     "--pairs", str(tmp_path / "p.parquet"), "--tsv", str(tmp_path / "p.tsv"),
                     "--stats", str(tmp_path / "s.json"), str(tmp_path / name)]) == 2
        assert capsys.readouterr().err.strip().endswith(
            f"{tmp_path / name}: not a day table of tweets (`paramill twitter harvest`): {problem}")


def test_a_month_is_a_month_and_its_days_are_its_own(tmp_path, capsys):
    """`twitter month --month 2026-13` wrote empty outputs for a month that does not exist; a
    day table named for another month's day (`2026-10-05.parquet` given to 2026-11), or one
    day given twice, was counted into the month's stats. `twitter growth` ended in a KeyError
    or TypeError traceback on a JSON file that is not a month's stats, and counted a month
    given twice twice. Each is now an error naming the month or the file; nothing written."""
    from paramill.cli import main

    def month(name, *days):
        return main(["twitter", "month", "--month", name, "--model", str(tmp_path / "model.npz"),
                     "--pairs", str(tmp_path / "out" / "p.parquet"), "--tsv", str(tmp_path / "out" / "p.tsv"),
                     "--stats", str(tmp_path / "out" / "s.json"), *map(str, days)])

    (tmp_path / "model.npz").write_bytes(b"never read")
    october = tmp_path / "2026-10-05.parquet"
    october.write_bytes(b"never read")
    for name in ("2026-13", "2026-1", "26-11", "2026-11-01"):
        assert month(name) == 2
        assert capsys.readouterr().err.strip().endswith(f"error: month {name!r} is not a month (YYYY-MM)")
    assert month("2026-11", october) == 2
    assert capsys.readouterr().err.strip().endswith(
        f"{october}: is the day table of 2026-10-05, not of a day of 2026-11")
    assert month("2026-10", october, tmp_path / "." / october.name) == 2
    assert f"is given twice (also as {october})" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # the folder the output check made is gone again

    stats = {"month": "2026-10", "days": 3, "tweets": 192, "news_tweets": 24, "urls": 24,
             "pairs": 96, "accepted": 72, "filtered": {}}
    cases = {"list": ([stats], "the top level: [{"),
             "other": ({"a": 1}, "the top level: 'month' is a required property"),
             "month": ({**stats, "month": "2026-13"}, None),
             "number": ({**stats, "month": 202610}, "month: 202610 is not of type 'string'"),
             "negative": ({**stats, "pairs": -1}, "pairs: -1 is less than the minimum of 0"),
             "flag": ({**stats, "accepted": True}, "accepted: True is not of type 'integer'")}
    good = tmp_path / "good.json"
    good.write_text(json.dumps(stats))
    for name, (value, says) in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(value))
        assert main(["twitter", "growth", str(good), str(path), "--tsv", str(tmp_path / "g.tsv")]) == 2
        err = capsys.readouterr().err.strip()
        if says is None:
            assert err.endswith(f"{path}: month '2026-13' is not a month (YYYY-MM)")
        else:
            assert f"{path}: not a month's stats (`paramill twitter month --stats`): {says}" in err
    again = tmp_path / "again.json"
    again.write_text(json.dumps(stats))
    assert main(["twitter", "growth", str(good), str(again), "--tsv", str(tmp_path / "g.tsv")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"{again}: holds month 2026-10, as {good} does: each month once")
    assert not (tmp_path / "g.tsv").exists()
    november = tmp_path / "nov.json"
    november.write_text(json.dumps({**stats, "month": "2026-11", "pairs": 64}))
    assert main(["twitter", "growth", str(november), str(good), "--tsv", str(tmp_path / "g.tsv")]) == 0
    assert (tmp_path / "g.tsv").read_text().splitlines() == [
        "month\tdays\ttweets\tnews_tweets\turls\tpairs\taccepted",
        "2026-10\t3\t192\t24\t24\t96\t72", "2026-11\t3\t192\t24\t24\t64\t72"]


def test_stats_and_results_of_another_shape_are_one_error_never_a_traceback(tmp_path, capsys):
    """The JSON files one stage writes and another reads (a corpus's ingest and clean stats,
    a pair corpus's stats, an STS result, a selection summary) ended in KeyError/TypeError
    tracebacks when another JSON file or an edited one took their place: `evaluate sweep`
    223 of 404 edits, `bitext stats` 274 of 404. Every field of each, set to 15 values of
    other JSON types, and the whole file set to a list, a number, a string and null: the
    command exits 0 or 2, never a traceback; a file that is not an object names the file
    and what it should be. An ingest folder whose shards no longer add up to its stats is
    an error before cleaning."""
    import shutil

    from paramill.cli import main
    from tests.hostile import edited

    def quiet(argv):
        code = main(argv)
        capsys.readouterr()
        return code

    src = tmp_path / "c.tsv"
    src.write_text("".join(f"{i}\t1\tradek číslo {i}\tline number {i}\n" for i in range(30)) + "bad line\n")
    ingest = tmp_path / "ingest"
    assert quiet(["bitext", "ingest", "--corpus", "c", "--out", str(ingest), "--spec",
                  json.dumps({"format": "czeng1", "path": str(src)}), "--settings", '{"shard_size": 10}']) == 0
    clean = ["bitext", "clean", "--corpus", "c", "--ingested", str(ingest), "--shards", str(tmp_path / "cl/shards"),
             "--rejected", str(tmp_path / "cl/rej.parquet"), "--keys", str(tmp_path / "cl/keys.parquet"),
             "--stats", str(tmp_path / "cl/stats.json")]
    assert quiet(clean) == 0
    pairs = tmp_path / "pairs"
    (tmp_path / "p.tsv").write_text("".join(f"a man reads {i}\ta man is reading {i}\n" for i in range(5)))
    assert quiet(["pairs", "ingest", "--corpus", "p", "--out", str(pairs), "--spec",
                  json.dumps({"format": "tsv", "path": str(tmp_path / "p.tsv")})]) == 0
    sts = {"model": "m.pt", "datasets": [{"dataset": "d", "year": "2012", "n": 3, "pearson": 50.0,
                                          "spearman": 49.0, "skipped": 0}],
           "years": [{"year": "2012", "datasets": 1, "n": 3, "pearson_mean": 50.0, "spearman_mean": 49.0,
                      "pearson_weighted": 50.0, "spearman_weighted": 49.0}]}
    selection = {"paranmt_score": "parascore", "rows": 10, "score_columns": {"bleu": "range"},
                 "selection": "default", "steps": [{"step": "candidates", "pairs": 12}],
                 "settings": {"bounds": {"bleu": [0.1, None]}, "dedup": True, "drop_identical": True,
                              "exclude_heldout": True, "folds": [1], "max_tokens": 30, "n_folds": 10,
                              "rank_by": None, "seed": 13, "size": 0}}
    (tmp_path / "model").mkdir()
    import pyarrow as pa
    import pyarrow.parquet as pq

    from paramill.nmt.tables import CANDIDATES

    candidates = tmp_path / "candidates.parquet"  # a real one: the command line checks it first
    pq.write_table(pa.Table.from_pylist([{"pair_id": "c-1", "candidate_id": "c-1:beam:1", "en_ref": "a b",
                                          "candidate": "a c", "method": "beam", "rank": 1}], schema=CANDIDATES),
                   candidates)
    readers = {  # what each file should be, where it goes, the command that reads it
        "an ingest's stats": (read_json(ingest / "stats.json"), ingest / "stats.json", clean),
        "a corpus's clean stats": (read_json(tmp_path / "cl/stats.json"), tmp_path / "s.json",
                                   ["bitext", "stats", str(tmp_path / "s.json"), "--json",
                                    str(tmp_path / "o.json"), "--tsv", str(tmp_path / "o.tsv")]),
        "a pair corpus's stats": (read_json(pairs / "stats.json"), pairs / "stats.json",
                                  ["pairs", "stats", str(pairs), "--json", str(tmp_path / "o.json"),
                                   "--tsv", str(tmp_path / "o.tsv")]),
        "an STS result": (sts, tmp_path / "model/sts.json",
                          ["evaluate", "sweep", str(tmp_path / "model/sts.json"), "--out", str(tmp_path / "o.tsv")]),
        "a selection summary": (selection, tmp_path / "selection.json",
                                ["filters", "analyse", "--candidates", str(candidates),
                                 "--corpus", str(tmp_path / "none.parquet"), "--summary",
                                 str(tmp_path / "selection.json"), "--out-dir", str(tmp_path / "an")]),
    }
    kept = tmp_path / "kept"
    shutil.copytree(ingest, kept)
    for what, (good, path, argv) in readers.items():
        cases = [*((p, v, c) for p, v, c in edited(good)), *(((), v, v) for v in ([], 1, "x", None))]
        for where, value, changed in cases:
            path.write_text(json.dumps(changed))
            code = main(argv)  # a traceback fails the test here
            err = capsys.readouterr().err
            assert code in (0, 2), (what, where, value, err)
            if where == ():
                assert f"{path}: not {what}" in err, (what, value, err)
        path.write_text(json.dumps(good))
    # shards removed from an ingest folder: its stats no longer add up, and clean says so
    (kept / "shard-00001.parquet").unlink()
    assert main([*clean[:4], "--ingested", str(kept), *clean[6:]]) == 2
    assert f"{kept / 'stats.json'}: says 31 rows in, but the folder's shards hold 20 and it rejected 1" \
        in capsys.readouterr().err


def test_a_column_a_parquet_file_lacks_is_an_error_not_left_out(tmp_path):
    """pyarrow's batch reader leaves out a column the file does not have, without a word:
    `filters analyse --corpus` given a table without s1/s2 reported a corpus of 0 pairs.
    Every Parquet read through paramill.tables names the file and the missing column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from paramill.io.tableread import iter_parquet_batches

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"s1": ["a"], "x": [1]}), path)
    assert [b.num_rows for b in iter_parquet_batches([path], columns=["s1"])] == [1]
    with pytest.raises(InputError, match=r"t.parquet: no column s2 \(it has s1, x\)"):
        list(iter_parquet_batches([path], columns=["s1", "s2"]))


def flip_in_page(path, column: int = 0, back: int = 3) -> None:
    """Flip one bit ``back`` bytes before the end of ``column``'s pages in the first row group."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata.row_group(0).column(column)
    start = meta.dictionary_page_offset if meta.has_dictionary_page else meta.data_page_offset
    data = bytearray(path.read_bytes())
    data[start + meta.total_compressed_size - back] ^= 0x04
    path.write_bytes(bytes(data))


def test_a_bit_flipped_in_a_page_paramill_wrote_is_an_error_naming_the_file(tmp_path):
    """zstd keeps no checksum: a flipped bit in a page decoded into other text without a
    word. paramill writes a CRC32 of every page (PARQUET_WRITE) and verifies it on reading."""
    import random
    import string

    import pyarrow as pa

    from paramill.io.tableread import iter_parquet_batches
    from paramill.io.tablewrite import TableWriter

    rng = random.Random(1)
    text = ["".join(rng.choice(string.ascii_letters) for _ in range(300)) for _ in range(40)]
    for back in (3, 2000, 6000):  # the data page (indices), the dictionary page (the texts)
        path = tmp_path / f"pairs-{back}.parquet"
        writer = TableWriter(path, pa.schema([("s1", pa.string())]))
        writer.write(pa.table({"s1": text}))
        writer.close()
        assert [r for b in iter_parquet_batches([path]) for r in b.column("s1").to_pylist()] == text
        flip_in_page(path, back=back)
        with pytest.raises(InputError, match=rf"pairs-{back}.parquet: Parquet data cannot be read after "
                                             r"row 0 \(could not verify page integrity, CRC checksum"):
            list(iter_parquet_batches([path]))


def test_a_batch_of_long_rows_ends_at_its_text_not_only_its_rows(write_file, tmp_path, monkeypatch):
    """A batch gathered in Python lists ends at ``batch_rows`` rows or at
    ``BATCH_TEXT_CHARS`` of text, whichever comes first: rows under the line limit may each
    be 60 KB (an 803-byte Parquet file of 100,000 such pairs: `pairs ingest` was killed at
    24 GB, 50,000 rows a batch). Where a batch ends changes nothing that is written."""
    from collections import Counter

    import polars as pl

    from paramill.bitext import ingest as bitext_ingest
    from paramill.bitext.readers import CorpusSpec
    from paramill.embed import data
    from paramill.pairs import ingest as pairs_ingest
    from paramill.pairs.readers import PairCorpusSpec

    sides = [(f"{'Věta ' * (50 + i)}{i}.", f"{'Sentence ' * (50 + i)}{i}.") for i in range(40)]
    cs = write_file("b.cs", [a for a, _ in sides])
    en = write_file("b.en", [b for _, b in sides])
    tsv = write_file("p.tsv", [f"{b}\t{b} again" for _, b in sides])
    bitext = CorpusSpec.from_dict("b", {"format": "moses", "cs": str(cs), "en": str(en)})
    pairs = PairCorpusSpec.from_dict("p", {"format": "tsv", "path": str(tsv)})
    tables, frame, shards = [], pairs_ingest._Rows.frame, bitext_ingest.ShardWriter
    monkeypatch.setattr(pairs_ingest._Rows, "frame", lambda self, *a: tables.append(len(self)) or frame(self, *a))
    monkeypatch.setattr(bitext_ingest, "ShardWriter", type("Counted", (shards,), {  # bitext's: negative
        "write": lambda self, t: tables.append(-t.num_rows) or shards.write(self, t)}))

    def run(where: str) -> tuple:
        tables.clear()
        bitext_ingest.ingest(bitext, tmp_path / where / "b",
                             bitext_ingest.IngestSettings(shard_size=100, batch_rows=1000))
        pairs_ingest.ingest_pairs(pairs, tmp_path / where / "p",
                                  settings=pairs_ingest.PairIngestSettings(batch_rows=1000))
        frames = [f.height for f in data._tsv_frames(str(tsv), 1000, Counter(), {})]
        written = [pl.read_parquet(tmp_path / where / s / "shard-*.parquet") for s in ("b", "p")]
        return sorted(tables), frames, written

    whole = run("whole")
    assert whole[0] == [-40, 40] and whole[1] == [40]  # one batch of every row
    for module in (bitext_ingest, pairs_ingest, data):
        monkeypatch.setattr(module, "BATCH_TEXT_CHARS", 5000)
    split = run("split")
    assert len(split[0]) > 8 and max(abs(n) for n in split[0]) < 15 and sum(n for n in split[0] if n > 0) == 40
    assert sum(split[1]) == 40 and max(split[1]) < 15
    assert all(a.equals(b) for a, b in zip(whole[2], split[2]))
