"""Writing outputs so that a killed job never leaves one half-written: the one atomic
writer (:func:`atomic_output`: temporary names, renamed together when the block succeeds),
the writability check every command makes before its work, scratch folders, file digests.

Temporaries carry their owner as ``pid@host``. A job killed outright (SIGKILL, a node
lost) cannot clean up after itself, so the next job writing the same output, or using
the same scratch prefix, removes the temporaries whose owner was on this host and no
longer runs. Those on other hosts, or whose process is alive, are left alone.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import shutil
import socket
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

from paramill.errors import InputError, check_name, check_regular_file


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
    for given in paths:  # before Path(), which reads an empty path as "."
        check_name(given)
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
    for given in paths:  # before Path(), which reads an empty path as "."
        check_name(given)
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
