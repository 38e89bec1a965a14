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
from typing import IO

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


class _ZstdRaw(io.RawIOBase):
    """Decompressed bytes of a zstd file, frame after frame, that refuses a cut stream.

    python-zstandard's ``stream_reader`` ends quietly when the input runs out inside a
    frame; here the end of the input inside a frame raises :class:`EOFError` (as gzip, xz
    and bz2 do), and a corrupt frame (or a checksum mismatch) raises ``ZstdError``.
    """

    CHUNK = 1 << 16

    def __init__(self, path: str | os.PathLike):
        import zstandard

        self._file = open(path, "rb")
        self._dctx = zstandard.ZstdDecompressor()
        self._obj = self._dctx.decompressobj()
        self._in_frame = False  # bytes were fed to the current frame, which has not ended
        self._out = b""
        self._pos = 0

    def readable(self) -> bool:
        return True

    def _feed(self, data: bytes) -> bytes:
        out = []
        while data:
            self._in_frame = True
            out.append(self._obj.decompress(data))
            if not self._obj.eof:
                break
            data = self._obj.unused_data  # the next frame (or skippable frame) begins
            self._obj = self._dctx.decompressobj()
            self._in_frame = False
        return b"".join(out)

    def readinto(self, buffer: Any) -> int:
        while self._pos >= len(self._out):
            chunk = self._file.read(self.CHUNK)
            if not chunk:
                if self._in_frame:
                    raise EOFError("zstd stream ended before the end of its frame")
                return 0
            self._out, self._pos = self._feed(chunk), 0
        n = min(len(buffer), len(self._out) - self._pos)
        buffer[:n] = self._out[self._pos:self._pos + n]
        self._pos += n
        return n

    def close(self) -> None:
        if not self.closed:
            self._file.close()
        super().close()


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
    elif kind == "xz":
        inner = lzma.open(path, "rb")
    elif kind == "bz2":
        inner = bz2.open(path, "rb")
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
