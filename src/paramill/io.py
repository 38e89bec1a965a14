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

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import shutil
import socket
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


# Parquet tables live in paramill.tables; their names are also found here, where every
# stage has long imported them from.
from paramill.errors import InputError, check_name, check_regular_file  # noqa: E402,F401
from paramill.tables import (  # noqa: E402,F401
    PARQUET_COMPRESSION,
    ShardWriter,
    TableWriter,
    iter_parquet_batches,
    parquet_rows,
)

# The compressed-file opener lives in paramill.compressed; its names are found here too.
from paramill.compressed import (  # noqa: E402,F401
    CorruptInput,
    compression_of,
    open_compressed,
)


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, as stored (compressed files are hashed compressed).

    Only a regular file is read (:func:`check_regular_file`): a device or FIFO never ends.
    """
    check_regular_file(path)
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
    check_writable(*finals, probe=False)  # the folders; commands probe theirs at start
    for final in finals:
        sweep_leftovers(final.parent, _temp_prefix(final))
    try:
        yield temps
        for tmp, final in zip(temps, finals):  # all checked before any is renamed
            if not tmp.exists():
                raise RuntimeError(f"atomic_output: {final} was not written")
            _check_replaceable(final, tmp)
    except BaseException:
        for tmp in temps:
            _remove(tmp)
        raise
    for tmp, final in zip(temps, finals):
        if final.exists() or final.is_symlink():
            _remove(final)
        os.replace(tmp, final)


def check_writable(*paths: str | os.PathLike, probe: bool = True) -> list[Path]:
    """Make each path's folder (with its parents) and, with ``probe``, create and remove a
    temporary file in it: an :class:`InputError` naming the path where that fails (a folder
    under a file or a dangling link, a read-only or full file system, ``/proc``). Every
    command runs it on its outputs before its work (:func:`paramill.commands.out`), and jobs
    that write other files first (a store, a checkpoint) on those. :func:`atomic_output`
    runs it without the probe, which would cost two metadata operations on every write (a
    harvest writes its state once a page). Returns the folders it made, deepest first, for
    :func:`remove_made_folders` when the work fails."""
    made: list[Path] = []
    try:
        for path in map(Path, paths):
            _make_writable(path, probe, made)
    except BaseException:
        remove_made_folders(made)  # those of the outputs checked before the one that failed
        raise
    return sorted(made, key=lambda f: len(f.parts), reverse=True)


def _make_writable(path: Path, probe: bool, made: list[Path]) -> None:
    check_name(path)
    temp = _temp_sibling(path)
    missing = [f for f in path.parents if not (f.exists() or f.is_symlink())]
    above = next((f for f in path.parents if f.exists() or f.is_symlink()), None)
    if above is not None and not above.is_dir():
        what = (f"is a link to {os.readlink(above)}, which does not exist"
                if not above.exists() else "is a file, not a folder")
        raise InputError(path, None, f"cannot be written: {above} {what}. Give a path in a "
                         "folder (nothing was written)")
    try:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        finally:  # those made, also where a deeper one then failed
            made.extend(f for f in missing if f.is_dir() and f not in made)
        if probe:
            os.close(os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            temp.unlink()
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(temp) else ""
        raise InputError(path, None, f"cannot be written: {exc.strerror or exc}{where}. "
                         "Give a path in a folder this job can write (nothing was "
                         "written)") from None


def remove_made_folders(folders: list[Path]) -> None:
    """Remove the folders :func:`check_writable` made, deepest first, each only while it is
    empty (another job may have written into it since): a command that fails on its input
    leaves no empty output folder behind."""
    for folder in sorted(folders, key=lambda f: len(f.parts), reverse=True):
        try:
            folder.rmdir()
        except OSError:
            pass


def _check_replaceable(final: Path, new: Path) -> None:
    """A folder where a file was written (``--out`` given a folder), or a file where a folder
    was, is an :class:`InputError` naming it: replacing it would delete the folder and all
    it holds, or a file the job was never asked to write. An output of the same kind is
    replaced (an earlier run's)."""
    if final.is_symlink() or not final.exists() or final.is_dir() == new.is_dir():
        return
    if final.is_dir():
        raise InputError(final, None, "is a folder, and this output is a file: writing it would "
                         "delete the folder and all it holds. Give a file path (nothing was written)")
    raise InputError(final, None, "is a file, and this output is a folder: writing it would "
                     "delete the file. Give another path (nothing was written)")


@contextlib.contextmanager
def scratch_dir(directory: str | os.PathLike, prefix: str) -> Iterator[Path]:
    """A scratch directory ``<prefix><pid@host>-<random>`` in ``directory``, removed when the
    block ends (also on an exception or SIGTERM; see :func:`sweep_leftovers` for SIGKILL)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    sweep_leftovers(directory, prefix)
    with tempfile.TemporaryDirectory(prefix=f"{prefix}{_owner()}-", dir=directory) as tmp:
        yield Path(tmp)


def write_json(path: str | os.PathLike, obj: Any, indent: int | None = 2) -> None:
    """Write JSON atomically (sorted keys, indented unless ``indent`` is None, trailing newline)."""
    with atomic_output(path) as (tmp,):
        tmp.write_text(json.dumps(obj, indent=indent, sort_keys=True, ensure_ascii=False) + "\n")


@contextlib.contextmanager
def file_lock(path: str | os.PathLike) -> Iterator[None]:
    """An exclusive lock on ``path`` for the block, held on the sibling ``.<name>.lock`` (a
    POSIX record lock, which NFS carries between hosts; it waits for the holder). On a file
    system without locks the block runs unlocked, as it would without this."""
    path = Path(path)
    check_writable(path, probe=False)  # its folder, made, or an error naming it
    with open(path.with_name(f".{path.name}.lock"), "a") as handle:
        try:
            fcntl.lockf(handle, fcntl.LOCK_EX)
        except OSError:  # ENOLCK, EOPNOTSUPP: a file system without locks
            pass
        yield  # closing the handle releases the lock


def merge_json(path: str | os.PathLike, new: dict[str, Any],
               load: Callable[[Path], dict[str, Any]], indent: int | None = 2) -> dict[str, Any]:
    """Add ``new`` to the JSON object in ``path`` (a cache several jobs add to at once: past
    days rebuilt side by side) and return the whole: under :func:`file_lock` the file is read
    again (``load`` reads and validates it, raising an error naming it), ``new`` is laid over it and the
    result written atomically, so no job's entries are lost to another's rename."""
    path = Path(path)
    with file_lock(path):
        merged = load(path) if path.exists() else {}
        merged.update(new)
        write_json(path, merged, indent)
    return merged


class MalformedJson(InputError, ValueError):
    """A JSON file that is not UTF-8 (``utf8``) or not JSON; a ValueError too, as json's own
    errors are, so code that caught those still does."""

    def __init__(self, path: str | os.PathLike, line: int | None, message: str, utf8: bool):
        super().__init__(path, line, message)
        self.utf8 = utf8


def read_json(path: str | os.PathLike) -> Any:
    """The JSON value in ``path``; bytes that are not UTF-8 or text that is not JSON are a
    :class:`MalformedJson` naming the file and line (a state, stats or meta file edited by
    hand reads as one error line, not as json's own words without the file)."""
    data = Path(path).read_bytes()
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise MalformedJson(path, None, f"not UTF-8 (byte {exc.start})", utf8=False) from None
    except json.JSONDecodeError as exc:
        raise MalformedJson(path, exc.lineno, f"not JSON ({exc.msg}, column {exc.colno})",
                            utf8=True) from None
    except RecursionError:
        raise MalformedJson(path, None, "not JSON (nested too deeply to read)", utf8=True) from None


# -- lines of text files -------------------------------------------------------

#: Text kept of a rejected line, so a 1 MB line does not become a 1 MB rejected row.
REJECTED_TEXT_CHARS = 1000
#: The characters a batch of rows gathered in Python lists holds at most, whatever its rows:
#: a batch's rows (``batch_rows``) bound memory only where lines are short (50,000 pairs of
#: 60 KB sides, each under the line limit, held 6 GB of text; `pairs ingest` was killed at
#: 24 GB). A batch is processed when either is reached; no result depends on where.
BATCH_TEXT_CHARS = 64 << 20
#: A UTF-8 byte order mark at the start of a file is not text (nor part of a header name).
_BOM = b"\xef\xbb\xbf"


@dataclass
class LineStream:
    """Lines of one (possibly compressed) file as bytes, with limits and clear errors.

    Yields ``(line_no, bytes)``, or ``(line_no, None)`` for a line longer than
    ``max_line_bytes`` (read through in chunks, never held whole).
    """

    path: str
    max_line_bytes: int
    lines: int = field(default=0, init=False)

    def __iter__(self) -> Iterator[tuple[int, bytes | None]]:
        limit = self.max_line_bytes
        try:
            with open_compressed(self.path) as fh:
                while True:
                    # room for the limit, CR and LF: a line is measured without its ending
                    line = fh.readline(limit + 2)
                    if not line:
                        break
                    self.lines += 1
                    complete = line.endswith(b"\n")
                    if complete:
                        line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
                    if self.lines == 1 and line.startswith(_BOM):
                        line = line[len(_BOM):]
                    if len(line) > limit:
                        while not complete:  # skip the rest of an over-long line
                            rest = fh.readline(1 << 20)
                            complete = not rest or rest.endswith(b"\n")
                        yield self.lines, None
                        continue
                    yield self.lines, line
        except CorruptInput as exc:  # where the stream broke: the line being read then
            raise CorruptInput(self.path, self.lines + 1, exc.message) from None
        if self.lines == 0:
            raise InputError(self.path, None, "file is empty")


def decode_line(raw: bytes) -> tuple[str | None, str | None, str | None]:
    """``(text, None, None)``, or ``None``, the reason and a detail naming the bad byte's
    offset: ``invalid_utf8``, or ``not_text`` for a NUL byte. NUL is valid UTF-8 but never
    text: a line holding one is a binary file's, or a block of zeros that a crash or a full
    disk left in the file (cleaning would drop the NULs and keep the garbage around them)."""
    nul = raw.find(b"\x00")
    if nul >= 0:
        return None, "not_text", (f"NUL byte at byte offset {nul}: not text (a binary file, or "
                                  "a block of zeros a crash left)")
    try:
        return raw.decode("utf-8"), None, None
    except UnicodeDecodeError as exc:
        return None, "invalid_utf8", f"invalid UTF-8 at byte offset {exc.start}"


def shown_text(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    return raw[: REJECTED_TEXT_CHARS * 4].decode("utf-8", "replace")[:REJECTED_TEXT_CHARS]
