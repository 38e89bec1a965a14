"""Compressed inputs: the one opener every stage reads through (:func:`open_compressed`).

A file's codec is told by its name (``.gz``, ``.xz``, ``.zst``, ``.bz2``) and checked against
its magic bytes; a stream cut short or with a corrupt byte is a :class:`CorruptInput` naming
the file, never a silent short read. :mod:`paramill.io` re-exports these names.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
from pathlib import Path
from typing import IO, Any

from paramill.errors import InputError, check_regular_file

_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"\xfd7zXZ\x00": "xz",
    b"(\xb5/\xfd": "zstd",
    b"BZh": "bz2",
}


class CorruptInput(InputError):
    """Compressed input that ends before its end-of-stream marker, or is corrupt."""


#: File-name endings that promise a codec; a file so named without its magic bytes is
#: refused (a copy cut inside the magic, or a mislabelled file) instead of read as text.
_SUFFIXES = {".gz": "gzip", ".gzip": "gzip", ".xz": "xz", ".zst": "zstd", ".zstd": "zstd",
             ".bz2": "bz2"}


def compression_of(path: str | os.PathLike) -> str:
    """Detect compression from the file's magic bytes (not its name): plain, gzip, xz, zstd, bz2."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(6)
    except PermissionError:
        raise InputError(path, None, "permission denied") from None
    for magic, name in _MAGIC.items():
        if head.startswith(magic):
            return name
    return "plain"


class _ZstdFrames:
    """Where a zstd stream stands in its frames (RFC 8878: a frame's header, its blocks, its
    checksum; skippable frames), followed from the compressed bytes as they are read, their
    content passed over: :attr:`between` says whether the bytes so far end between frames."""

    _ZSTD = b"\x28\xb5\x2f\xfd"

    def __init__(self) -> None:
        self.state, self.need, self.head, self.skip = "magic", 4, b"", 0
        self.checksum = False

    @property
    def between(self) -> bool:
        return self.state in ("magic", "other") and not self.head and not self.skip

    def feed(self, data: bytes) -> None:
        pos = 0
        while pos < len(data) and self.state != "other":
            if self.skip:
                take = min(self.skip, len(data) - pos)
                self.skip -= take
                pos += take
                continue
            take = min(self.need - len(self.head), len(data) - pos)
            self.head += data[pos:pos + take]
            pos += take
            if len(self.head) == self.need:
                head, self.head = self.head, b""
                self._parsed(head)

    def _parsed(self, head: bytes) -> None:
        """The next part once ``head`` (what the state needed) is complete."""
        if self.state == "magic":
            if head == self._ZSTD:
                self.state, self.need = "header", 1
            elif head[0] & 0xF0 == 0x50 and head[1:] == b"\x2a\x4d\x18":  # skippable
                self.state, self.need = "skippable", 4
            else:  # not a frame: the decompressor says so
                self.state = "other"
        elif self.state == "skippable":
            self.state, self.need, self.skip = "magic", 4, int.from_bytes(head, "little")
        elif self.state == "header":  # the frame header descriptor: what follows it
            fhd = head[0]
            single = bool(fhd & 0x20)
            self.checksum = bool(fhd & 0x04)
            rest = (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + (int(single), 2, 4, 8)[fhd >> 6]
            self.state, self.need = ("rest", rest) if rest else ("block", 3)
        elif self.state == "rest":
            self.state, self.need = "block", 3
        elif self.state == "block":
            value = int.from_bytes(head, "little")
            kind, size = (value >> 1) & 3, value >> 3
            self.skip = 1 if kind == 1 else size  # RLE: one byte repeated
            if value & 1:  # the frame's last block
                self.state, self.need = ("checksum", 4) if self.checksum else ("magic", 4)
        else:  # checksum
            self.state, self.need = "magic", 4


class _Followed:
    """A file whose bytes, as read, go through a :class:`_ZstdFrames`."""

    def __init__(self, fh: IO[bytes], frames: _ZstdFrames):
        self.fh, self.frames = fh, frames

    def read(self, size: int = -1) -> bytes:
        data = self.fh.read(size)
        self.frames.feed(data)
        return data


class _ZstdRaw(io.RawIOBase):
    """Decompressed bytes of a zstd file, frame after frame, in memory bounded by the reads
    (python-zstandard's ``stream_reader``: its ``decompressobj`` returned all that a chunk
    held, and 32 KB of zeros compressed held 1 GB), refusing a cut stream.

    ``stream_reader`` ends quietly when the input runs out inside a frame; here the frames are
    followed from the compressed bytes (:class:`_ZstdFrames`), and an end inside one raises
    :class:`EOFError` (as gzip, xz and bz2 do); a corrupt frame (or a checksum mismatch)
    raises ``ZstdError``.
    """

    def __init__(self, path: str | os.PathLike):
        import zstandard

        self._path = path
        self._file = open(path, "rb")
        self._frames = _ZstdFrames()
        self._reader = zstandard.ZstdDecompressor().stream_reader(
            _Followed(self._file, self._frames), read_across_frames=True, closefd=False)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        import zstandard

        try:
            n = self._reader.readinto(buffer)
        except zstandard.ZstdError as exc:
            if "requires too much memory" not in str(exc):
                raise
            raise InputError(self._path, None, "a zstd frame whose window is larger than the 128 "
                             f"MiB a reader holds ({_window(self._path)}written with zstd --long): "
                             "recompress it without --long (zstd -d --long=31 -c FILE | zstd -19 "
                             "-o NEW), or give it uncompressed") from None
        if not n and not self._frames.between:
            raise EOFError("zstd stream ended before the end of its frame")
        return n

    def close(self) -> None:
        if not self.closed:
            self._reader.close()
            self._file.close()
        super().close()


def _window(path: str | os.PathLike) -> str:
    """``"2 GiB, "``: the window the file's first frame asks for, as far as its header says."""
    import zstandard

    with open(path, "rb") as fh:
        try:
            size = zstandard.get_frame_parameters(fh.read(18)).window_size
        except zstandard.ZstdError:
            return ""
    return f"{size / 2**30:g} GiB, " if size >= 2**30 else f"{size / 2**20:g} MiB, "


#: what an xz reader may hold to decode (liblzma's memory limit): a dictionary up to 128 MiB,
#: as zstd's window (``xz -9`` writes 64 MiB). An xz header may ask for 1.5 GiB, which the
#: decoder fills as the output grows: a small file of repeats took that much
XZ_DICTIONARY = 128 << 20
_XZ_MEMLIMIT = XZ_DICTIONARY + (8 << 20)


class _Streams(io.RawIOBase):
    """Decompressed bytes of an xz or bz2 file, stream after stream (``cat a.xz b.xz``; pbzip2
    and lbzip2 write a stream per block), each read bounded by the buffer's size, xz's decoder
    memory capped (:data:`XZ_DICTIONARY`). Zero bytes after a stream are padding, as ``xz``
    and ``gzip`` read them; any other bytes must be a stream: ``lzma.open`` and ``bz2.open``
    ended the read quietly at bytes that start none, so a later stream whose header was
    corrupt was dropped with all it held (and ``lzma.open`` failed a padded file). A stream
    cut short raises :class:`EOFError`."""

    def __init__(self, path: str | os.PathLike, kind: str):
        self._path = path
        self._kind = kind
        self._file = open(path, "rb")
        self._decoder = self._new()
        self._done = False

    def _new(self) -> lzma.LZMADecompressor | bz2.BZ2Decompressor:
        if self._kind == "bz2":
            return bz2.BZ2Decompressor()
        return lzma.LZMADecompressor(lzma.FORMAT_XZ, memlimit=_XZ_MEMLIMIT)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size = len(buffer)
        try:
            while not self._done:
                data = self._step(size)
                if data:
                    buffer[:len(data)] = data
                    return len(data)
        except lzma.LZMAError as exc:
            if "memory usage limit" not in str(exc).lower():
                raise
            raise InputError(self._path, None, f"an xz stream whose dictionary{_dictionary(self._path)} "
                             f"is larger than the {XZ_DICTIONARY >> 20} MiB a reader holds: "
                             "recompress it with a preset (xz -d -c FILE | xz -9 > NEW), or give "
                             "it uncompressed") from None
        return 0

    def _step(self, size: int) -> bytes:
        """The next bytes the decoder gives (possibly none), at most ``size``."""
        decoder = self._decoder
        if decoder.eof:  # another stream may follow, after stream padding (zero bytes)
            rest = decoder.unused_data.lstrip(b"\0")
            while not rest:
                raw = self._file.read(1 << 16)
                if not raw:
                    self._done = True
                    return b""
                rest = raw.lstrip(b"\0")
            self._decoder = self._new()
            return self._decoder.decompress(rest, size)
        if not decoder.needs_input:
            return decoder.decompress(b"", size)
        raw = self._file.read(1 << 16)
        if not raw:
            raise EOFError(f"{self._kind} stream ended before its end-of-stream marker")
        return decoder.decompress(raw, size)

    def close(self) -> None:
        if not self.closed:
            self._file.close()
        super().close()


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The variable-length integer at ``pos`` of ``data`` (seven bits a byte, least
    significant first, the high bit set on all but its last byte: xz's headers, protobuf)
    and the place after it; IndexError where ``data`` ends inside it."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _dictionary(path: str | os.PathLike) -> str:
    """``" (1.5 GiB)"``: the LZMA2 dictionary the file's first block asks for, as far as its
    header says (xz format 1.0.4: stream header, block header, filter flags), where it is over
    the limit; else ``""`` (a later stream's, or a header not read)."""
    with open(path, "rb") as fh:
        head = fh.read(12 + 1024)
    pos = 14
    if len(head) < pos or head[12] == 0:
        return ""

    def varint() -> int:
        nonlocal pos
        value, pos = read_varint(head, pos)
        return value

    try:
        flags = head[13]
        for present in (0x40, 0x80):  # compressed and uncompressed sizes
            if flags & present:
                varint()
        for _ in range((flags & 3) + 1):
            filter_id, size = varint(), varint()
            if filter_id == 0x21 and size == 1 and head[pos] <= 40:  # LZMA2
                bits = head[pos]
                value = 0xFFFFFFFF if bits == 40 else (2 | (bits & 1)) << (bits // 2 + 11)
                if value <= XZ_DICTIONARY:  # not the stream that asks for more (a later one)
                    return ""
                return f" ({value / 2**30:g} GiB)" if value >= 2**30 else f" ({value / 2**20:g} MiB)"
            pos += size
    except IndexError:
        pass
    return ""


class _Guarded(io.RawIOBase):
    """Wraps a decompressing stream: a truncated or corrupt stream becomes InputError."""

    def __init__(self, inner: IO[bytes], path: str | os.PathLike, kind: str):
        self._inner = inner
        # read1: what one step of the decompressor gives, so the lines before a cut are
        # still delivered and the error names the line where the stream broke
        self._read = getattr(inner, "read1", inner.read)
        self._path = path
        self._kind = kind

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self._read(len(buffer))
        except DECOMPRESS_ERRORS as exc:
            raise CorruptInput(self._path, None, f"{self._kind} data is truncated or corrupt "
                             f"({exc})") from None
        n = len(data)
        buffer[:n] = data
        return n

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
        super().close()


def open_compressed(path: str | os.PathLike) -> IO[bytes]:
    """Open a file for binary reading, transparently decompressing gzip/xz/zstd/bz2.

    Bytes are returned undecoded so that readers can report invalid UTF-8 per line. The
    file is checked first (:func:`check_regular_file`); a stream that ends before its
    end-of-stream marker, or a corrupt one, raises :class:`InputError` naming the file
    (without a line: readers that count lines add it).
    """
    check_regular_file(path)
    kind = compression_of(path)
    expected = _SUFFIXES.get(Path(path).suffix.lower())
    if kind == "plain" and expected is not None:
        raise InputError(path, None, f"named {Path(path).suffix} but is not {expected} data "
                         "(cut short before its header, or not compressed)")
    if kind == "plain":
        return open(path, "rb")
    if kind == "gzip":
        inner: IO[bytes] = gzip.open(path, "rb")
    elif kind in ("xz", "bz2"):
        inner = _Streams(path, kind)  # type: ignore[assignment]
    else:
        inner = _ZstdRaw(path)  # type: ignore[assignment]
    return io.BufferedReader(_Guarded(inner, path, kind), buffer_size=1 << 16)


def _decompress_errors() -> tuple[type[BaseException], ...]:
    import zlib

    errors: list[type[BaseException]] = [EOFError, zlib.error, lzma.LZMAError, OSError]
    try:
        import zstandard

        errors.append(zstandard.ZstdError)
    except ImportError:  # pragma: no cover - zstandard is a dependency
        pass
    return tuple(errors)


#: Exceptions raised by the decompressors for truncated or corrupt streams.
DECOMPRESS_ERRORS = _decompress_errors()
