"""Shared I/O: the one compressed-file opener, the one atomic writer, Parquet writers.

Every stage reads inputs through :func:`open_compressed` and writes outputs through
:func:`atomic_output`, so a killed job never leaves a half-written file under a final
name and every compressed format is handled the same way everywhere. Scratch space goes
through :func:`scratch_dir`.

Temporaries carry their owner as ``pid@host``. A job killed outright (SIGKILL, a node
lost) cannot clean up after itself, so the next job writing the same output, or using
the same scratch prefix, removes the temporaries whose owner was on this host and no
longer runs. Those on other hosts, or whose process is alive, are left alone.
"""

from __future__ import annotations

import bz2
import contextlib
import glob
import gzip
import hashlib
import json
import lzma
import os
import shutil
import socket
import sys
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

PARQUET_COMPRESSION = "zstd"

_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"\xfd7zXZ\x00": "xz",
    b"(\xb5/\xfd": "zstd",
    b"BZh": "bz2",
}


class InputError(Exception):
    """An input file that cannot be used. Names the file and, where known, the line."""

    def __init__(self, path: str | os.PathLike, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


def compression_of(path: str | os.PathLike) -> str:
    """Detect compression from the file's magic bytes (not its name): plain, gzip, xz, zstd, bz2."""
    with open(path, "rb") as fh:
        head = fh.read(6)
    for magic, name in _MAGIC.items():
        if head.startswith(magic):
            return name
    return "plain"


def open_compressed(path: str | os.PathLike) -> IO[bytes]:
    """Open a file for binary reading, transparently decompressing gzip/xz/zstd/bz2.

    Bytes are returned undecoded so that readers can report invalid UTF-8 per line.
    """
    kind = compression_of(path)
    if kind == "gzip":
        return gzip.open(path, "rb")
    if kind == "xz":
        return lzma.open(path, "rb")
    if kind == "bz2":
        return bz2.open(path, "rb")
    if kind == "zstd":
        import zstandard

        raw = open(path, "rb")
        reader = zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)
        import io as _io

        return _io.BufferedReader(reader)
    return open(path, "rb")


#: Exceptions raised by the decompressors for truncated or corrupt streams.
def _decompress_errors() -> tuple[type[BaseException], ...]:
    import zlib

    errors: list[type[BaseException]] = [EOFError, zlib.error, lzma.LZMAError, OSError]
    try:
        import zstandard

        errors.append(zstandard.ZstdError)
    except ImportError:  # pragma: no cover - zstandard is a dependency
        pass
    return tuple(errors)


DECOMPRESS_ERRORS = _decompress_errors()


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, as stored (compressed files are hashed compressed)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _owner() -> str:
    return f"{os.getpid()}@{socket.gethostname()}"


def owner_is_gone(owner: str) -> bool:
    """True when ``owner`` (``pid@host``) names this host and a process that has ended."""
    pid, _, host = owner.partition("@")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):  # someone else's process; not a pid here
        pass
    return False


def sweep_leftovers(directory: str | os.PathLike, prefix: str) -> list[Path]:
    """Remove the entries ``<prefix><pid@host>-<suffix>`` in ``directory`` left by ended
    processes of this host; return what was removed (each is reported on stderr)."""
    directory = Path(directory)
    removed = []
    if not directory.is_dir():
        return removed
    for entry in sorted(directory.glob(f"{glob.escape(prefix)}*")):
        owner = entry.name[len(prefix):].rpartition("-")[0]
        if owner and owner_is_gone(owner):
            _remove(entry)
            removed.append(entry)
            print(f"paramill: removed {entry}, left by a job that was killed", file=sys.stderr)
    return removed


def _temp_prefix(path: Path) -> str:
    return f".{path.name}.tmp-"


def _temp_sibling(path: Path) -> Path:
    return path.with_name(f"{_temp_prefix(path)}{_owner()}-{uuid.uuid4().hex[:8]}")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink()


@contextlib.contextmanager
def atomic_output(*paths: str | os.PathLike) -> Iterator[list[Path]]:
    """Yield temporary sibling paths for ``paths``; rename them into place on success.

    Works for files and directories. On any exception every temporary is removed and no
    final path is touched, so a failed or killed job leaves nothing half-written under a
    final name. The renames happen only after the block finished without error.
    """
    finals = [Path(p) for p in paths]
    temps = [_temp_sibling(p) for p in finals]
    for final in finals:
        final.parent.mkdir(parents=True, exist_ok=True)
        sweep_leftovers(final.parent, _temp_prefix(final))
    try:
        yield temps
    except BaseException:
        for tmp in temps:
            _remove(tmp)
        raise
    for tmp, final in zip(temps, finals):
        if not tmp.exists():
            raise RuntimeError(f"atomic_output: {final} was not written")
        if final.exists() or final.is_symlink():
            _remove(final)
        os.replace(tmp, final)


@contextlib.contextmanager
def scratch_dir(directory: str | os.PathLike, prefix: str) -> Iterator[Path]:
    """A scratch directory ``<prefix><pid@host>-<random>`` in ``directory``, removed when the
    block ends (also on an exception or SIGTERM; see :func:`sweep_leftovers` for SIGKILL)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    sweep_leftovers(directory, prefix)
    with tempfile.TemporaryDirectory(prefix=f"{prefix}{_owner()}-", dir=directory) as tmp:
        yield Path(tmp)


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write JSON atomically (sorted keys, indented, trailing newline)."""
    with atomic_output(path) as (tmp,):
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    return json.loads(Path(path).read_text())


class ShardWriter:
    """Stream Arrow record batches into numbered Parquet shards of at most ``shard_size`` rows.

    Shards are named ``shard-00000.parquet`` … inside ``directory`` (which should be a
    temporary path from :func:`atomic_output`). Memory holds one batch at a time.
    """

    def __init__(self, directory: str | os.PathLike, schema: pa.Schema, shard_size: int,
                 prefix: str = "shard"):
        if shard_size < 1:
            raise ValueError("shard_size must be at least 1")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.schema = schema
        self.shard_size = shard_size
        self.prefix = prefix
        self.paths: list[Path] = []
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None
        self._in_shard = 0

    def _open(self) -> None:
        path = self.directory / f"{self.prefix}-{len(self.paths):05d}.parquet"
        self.paths.append(path)
        self._writer = pq.ParquetWriter(path, self.schema, compression=PARQUET_COMPRESSION)
        self._in_shard = 0

    def write(self, table: pa.Table | pa.RecordBatch) -> None:
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        table = table.select(self.schema.names).cast(self.schema)
        offset = 0
        while offset < table.num_rows:
            if self._writer is None or self._in_shard >= self.shard_size:
                self.close_shard()
                self._open()
            take = min(self.shard_size - self._in_shard, table.num_rows - offset)
            assert self._writer is not None
            self._writer.write_table(table.slice(offset, take))
            self._in_shard += take
            self.rows += take
            offset += take

    def close_shard(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def close(self) -> list[Path]:
        self.close_shard()
        return self.paths


class TableWriter:
    """Stream batches into one Parquet file (created on close when nothing was written)."""

    def __init__(self, path: str | os.PathLike, schema: pa.Schema):
        self.path = Path(path)
        self.schema = schema
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None

    def write(self, table: pa.Table | pa.RecordBatch) -> None:
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        if table.num_rows == 0:
            return
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, self.schema, compression=PARQUET_COMPRESSION)
        self._writer.write_table(table.select(self.schema.names).cast(self.schema))
        self.rows += table.num_rows

    def close(self) -> Path:
        if self._writer is None:
            pq.write_table(self.schema.empty_table(), self.path, compression=PARQUET_COMPRESSION)
        else:
            self._writer.close()
        return self.path


def iter_parquet_batches(paths: Sequence[str | os.PathLike], batch_size: int = 65536,
                         columns: Sequence[str] | None = None) -> Iterator[pa.RecordBatch]:
    """Yield record batches from Parquet files in order, never loading a whole file.

    ``pre_buffer`` is off: with it Arrow prefetches every row group of the file at once,
    which made memory grow with the file's size.
    """
    for path in paths:
        pf = pq.ParquetFile(path, pre_buffer=False)
        yield from pf.iter_batches(batch_size=batch_size, columns=list(columns) if columns else None)


def parquet_rows(paths: Sequence[str | os.PathLike]) -> int:
    """Row count from Parquet footers (no data read)."""
    return sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
