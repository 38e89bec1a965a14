"""Parquet page headers read by paramill (paramill.pages): the rows, sizes and encodings of a
column chunk's data pages, as each writer lays them out, and a header that is not one."""

from __future__ import annotations

import random

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paramill.io.pagescan import Page, PageError, data_pages

TEXT = [f"sentence {i} of the sample, {'word ' * (i % 13)}end" for i in range(5000)]


def chunk_pages(path, group: int = 0, column: int = 0) -> tuple[list[Page], object]:
    chunk = pq.ParquetFile(path).metadata.row_group(group).column(column)
    start = min(o for o in (chunk.dictionary_page_offset, chunk.data_page_offset) if o)
    return data_pages(path, start, chunk.total_compressed_size), chunk


@pytest.mark.parametrize("layout", [
    {},  # pyarrow's defaults: a dictionary, version 1 pages
    {"use_dictionary": False, "compression": "none", "write_statistics": False},
    {"data_page_version": "2.0", "write_page_checksum": True, "compression": "zstd"},
    {"use_dictionary": False, "column_encoding": {"text": "DELTA_BYTE_ARRAY"}, "data_page_version": "2.0"},
    {"use_dictionary": False, "column_encoding": {"text": "DELTA_BYTE_ARRAY"}},
    {"use_dictionary": False, "column_encoding": {"text": "DELTA_LENGTH_BYTE_ARRAY"}, "compression": "gzip"},
])
def test_each_data_page_is_read_with_its_rows_size_and_encoding(tmp_path, layout):
    path = tmp_path / "t.parquet"
    text = pa.array([None if i % 97 == 0 else t for i, t in enumerate(TEXT)])
    pq.write_table(pa.table({"text": text, "n": range(len(TEXT))}), path, data_page_size=4096,
                   row_group_size=3000, **layout)
    prefixed = layout.get("column_encoding", {}).get("text") == "DELTA_BYTE_ARRAY"
    for group, rows in ((0, 3000), (1, 2000)):
        pages, chunk = chunk_pages(path, group)
        assert (len(pages) > 1 or chunk.has_dictionary_page) and sum(p.rows for p in pages) == rows  # nulls too
        assert all(p.prefixed == prefixed for p in pages)
        assert all(p.size > 0 for p in pages) and sum(p.size for p in pages) <= chunk.total_uncompressed_size
        assert sum(p.size for p in pages) > chunk.total_uncompressed_size // 3 or chunk.has_dictionary_page
    numbers, _ = chunk_pages(path, 0, 1)
    assert sum(p.rows for p in numbers) == 3000 and not any(p.prefixed for p in numbers)


def test_polars_pages_are_read_too(tmp_path):
    path = tmp_path / "p.parquet"
    pl.DataFrame({"text": TEXT}).write_parquet(path, data_page_size=4096, row_group_size=5000)
    pages, chunk = chunk_pages(path)
    assert sum(p.rows for p in pages) == 5000 and sum(p.size for p in pages) <= chunk.total_uncompressed_size


def test_a_header_that_is_not_one_is_a_page_error_never_another(tmp_path):
    """Every byte of a chunk's first header set to 16 other values (1,000 headers that are
    not the writer's): each read gives its pages or a PageError, and no other error."""
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"text": TEXT}), path, use_dictionary=False, data_page_size=4096,
                   column_encoding={"text": "DELTA_BYTE_ARRAY"})
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    data, start = path.read_bytes(), chunk.data_page_offset
    outcomes, rnd = {"pages": 0, "error": 0}, random.Random(3)
    bad = tmp_path / "bad.parquet"
    for offset in range(start, start + 60):
        for value in rnd.sample(range(256), 16):
            changed = bytearray(data)
            changed[offset] = value
            bad.write_bytes(changed)
            try:
                pages = data_pages(bad, start, chunk.total_compressed_size)
            except PageError:
                outcomes["error"] += 1
            else:
                assert all(isinstance(p, Page) and p.rows >= 0 and p.size >= 0 for p in pages)
                outcomes["pages"] += 1
    assert outcomes["error"] > 100 and outcomes["pages"] > 100, outcomes


@pytest.mark.parametrize("header, message", [
    (b"\x15\x00\x15\x10\x15\x10\x1c", "cut short"),  # a struct field never ended
    (b"\x19\xfc\xff\xff\xff\x0f" + b"\x01" * 64, "cut short"),  # a list of 2**32 items in 64 bytes
    (b"\x1d\x00", "unknown type 13"),
    (b"\x15\x00" + b"\x1c" * 70, "nested over 64 deep"),
    (b"\x15\x00\x15" + b"\xff" * 12, "longer than 64 bits"),
    (b"\x15\x00\x15\x10\x00", "without its sizes"),
    (b"\x15\x00\x15\x10\x15\x10\x5c\x15" + b"\xfe" * 8 + b"\x01\x00\x00", "outside 32 bits"),  # 2**63 rows
])
def test_a_hostile_header_is_refused_at_once(tmp_path, header, message):
    path = tmp_path / "h.bin"
    path.write_bytes(header)
    with pytest.raises(PageError, match=message):
        data_pages(path, 0, len(header))
