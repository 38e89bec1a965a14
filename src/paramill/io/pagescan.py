"""The data pages of a Parquet column chunk, read from their headers (pyarrow keeps them to
itself): how many rows each holds, how many bytes it decodes from, and how its values are
encoded. :mod:`paramill.tables` bounds a batch's decoded text by them.

A page header is a Thrift struct in the compact protocol; only the fields named here are
kept, every other one skipped by its type, so statistics or fields a later writer adds cost
nothing but their bytes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, BinaryIO

#: compact-protocol field types (``BOOL`` is two: its value is the type)
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)
#: data page types, and the encoding whose values are each a prefix of the last one's and an end
DATA_PAGE, DATA_PAGE_V2 = 0, 3
DELTA_BYTE_ARRAY = 7
#: the fields kept: the header's type, sizes and data page headers (their value count,
#: encoding and, in a version 2 header, row count)
_HEADER = {1: None, 2: None, 3: None, 5: {1: None, 2: None}, 8: {1: None, 3: None, 4: None}}
#: the longest header read, as Arrow's own reader allows (statistics may make one long)
MAX_HEADER_BYTES = 16 << 20


class PageError(ValueError):
    """A page header that cannot be read: cut short, or not a header."""


@dataclass(frozen=True)
class Page:
    """One data page: ``rows`` it holds (a version 1 header's value count, which is its rows
    for a column outside any list), the ``size`` in bytes its values decode from (the
    larger of its sizes compressed and not: Arrow refuses a page that decompresses to other
    than its header says, and an uncompressed page is its bytes on disk), and whether it is ``prefixed`` (``DELTA_BYTE_ARRAY``: each
    value may repeat up to the whole of the last one, so a page of ``size`` bytes decodes to
    as much as ``size`` a row)."""

    rows: int
    size: int
    prefixed: bool


class _Reader:
    """Compact-protocol values from ``data``, a header's bytes; :class:`_Short` where it
    ends before one does."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, count: int) -> bytes:
        if self.at + count > len(self.data):
            raise _Short
        self.at += count
        return self.data[self.at - count:self.at]

    def varint(self) -> int:
        value = shift = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 63:
                raise PageError("a number longer than 64 bits")

    def signed(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def skip(self, kind: int, depth: int) -> None:
        if depth > 64:
            raise PageError("structs nested over 64 deep")
        if kind in (_TRUE, _FALSE):
            return
        if kind == _BYTE:
            self.take(1)
        elif kind in (_I16, _I32, _I64):
            self.varint()
        elif kind == _DOUBLE:
            self.take(8)
        elif kind == _BINARY:
            self.take(self.varint())
        elif kind in (_LIST, _SET):
            head = self.take(1)[0]
            size, item = head >> 4, head & 0x0F
            for _ in range(self.varint() if size == 15 else size):  # each item a byte or more
                self.take(1) if item in (_TRUE, _FALSE) else self.skip(item, depth + 1)
        elif kind == _MAP:
            size = self.varint()
            if size:
                kinds = self.take(1)[0]
                for _ in range(size):
                    for half in (kinds >> 4, kinds & 0x0F):
                        self.take(1) if half in (_TRUE, _FALSE) else self.skip(half, depth + 1)
        elif kind == _STRUCT:
            self.struct({}, depth + 1)
        else:
            raise PageError(f"a field of unknown type {kind}")

    def struct(self, wanted: dict[int, Any], depth: int = 0) -> dict[int, Any]:
        """The fields of a struct that ``wanted`` names (an int, or a struct of the fields
        its own value names), the others skipped."""
        found: dict[int, Any] = {}
        field = 0
        while (head := self.take(1)[0]) != 0:
            kind, delta = head & 0x0F, head >> 4
            field = field + delta if delta else self.signed()
            if field in wanted and kind in (_I16, _I32, _I64) and wanted[field] is None:
                found[field] = self.signed()
                if not -(1 << 31) <= found[field] < 1 << 31:  # each an i32 in Parquet's Thrift
                    raise PageError(f"field {field}'s {found[field]} is outside 32 bits")
            elif field in wanted and kind == _STRUCT and wanted[field] is not None:
                found[field] = self.struct(wanted[field], depth + 1)
            else:
                self.skip(kind, depth)
        return found


class _Short(Exception):
    """The bytes read so far end inside the header."""


def _header(stream: BinaryIO, at: int, end: int) -> tuple[dict[int, Any], int]:
    """The header at byte ``at`` of ``stream`` and its length, read in growing windows."""
    window = 4096
    while True:
        stream.seek(at)
        data = stream.read(min(window, end - at))
        try:
            reader = _Reader(data)
            return reader.struct(_HEADER), reader.at
        except _Short:
            if len(data) < min(window, end - at) or window >= MAX_HEADER_BYTES or at + len(data) >= end:
                raise PageError("a header cut short") from None
            window *= 4


def data_pages(path: str | os.PathLike, start: int, length: int) -> list[Page]:
    """The data pages of the column chunk at bytes ``start`` to ``start + length`` of the
    Parquet file ``path`` (its first page, the dictionary's where it has one, and its
    compressed size, from the file's footer). A header that cannot be read is a
    :class:`PageError`."""
    pages, at, end = [], start, start + length
    with open(path, "rb") as stream:
        while at < end:
            fields, used = _header(stream, at, end)
            kind, unpacked, packed = fields.get(1), fields.get(2, -1), fields.get(3, -1)
            if unpacked < 0 or packed < 0:
                raise PageError(f"a page header at byte {at} without its sizes")
            v1, v2 = fields.get(5, {}), fields.get(8, {})
            if kind == DATA_PAGE or kind == DATA_PAGE_V2:
                rows = v1.get(1, 0) if kind == DATA_PAGE else v2.get(3, v2.get(1, 0))
                encoding = v1.get(2) if kind == DATA_PAGE else v2.get(4)
                pages.append(Page(max(rows, 0), max(unpacked, packed),
                                  encoding == DELTA_BYTE_ARRAY))
            at += used + packed
    return pages
