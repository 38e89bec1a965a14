"""The error every reader raises for a user's file it cannot use, and the checks that a path
names a file and that it is a regular file it may read. At the bottom of the package: every
module may raise it."""

from __future__ import annotations

import os
import stat


class InputError(Exception):
    """An input file that cannot be used. Names the file and, where known, the line."""

    def __init__(self, path: str | os.PathLike, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


def check_name(path: str | os.PathLike) -> None:
    """Raise :class:`InputError` where ``path`` is empty, holds a NUL byte, or its name is not UTF-8 (a Latin-1 ``café.tsv``
    on an old file system: Python holds its byte as a lone surrogate). Every input's and
    output's name goes into tables and provenance, which hold UTF-8 text: such a name failed
    the job after its work, ``surrogates not allowed``, naming no file."""
    name = os.fspath(path)
    if not name:
        raise InputError("(an empty path)", None, "no file is named: the path is empty")
    if "\0" in name if isinstance(name, str) else b"\0" in name:
        shown = name.replace("\0", "\\0") if isinstance(name, str) else repr(name)
        raise InputError(shown, None, "its name holds a NUL byte, which no file name can hold")
    if isinstance(name, str) and not name.isascii():
        try:
            name.encode("utf-8")
        except UnicodeEncodeError as exc:
            shown = os.fsencode(name).decode("utf-8", "backslashreplace")
            byte = repr(os.fsencode(name[exc.start:exc.end]))[2:-1]
            raise InputError(shown, None, f"its name is not UTF-8 (the byte {byte}); paramill "
                             "writes every file's name into its tables and provenance as UTF-8 "
                             "text. Rename it (convmv -f latin1 -t utf-8 --notest NAME)") from None


def check_regular_file(path: str | os.PathLike) -> None:
    """Raise :class:`InputError` unless ``path`` is a readable regular file with a UTF-8 name
    (:func:`check_name`).

    A directory, a symlink loop, a FIFO or a device (``/dev/zero`` would never end), a
    missing or unreadable file: each is one clear message naming the file.
    """
    check_name(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputError(path, None, "file not found") from None
    except OSError as exc:  # ELOOP (symlink loop), ENAMETOOLONG, EACCES on a parent, ...
        raise InputError(path, None, f"cannot be read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(path, None, "is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(path, None, "is not a regular file (a FIFO, socket or device)")
    if not os.access(path, os.R_OK):
        raise InputError(path, None, "permission denied")


def first_line(exc: BaseException, default: str | None = None) -> str:
    """An exception's first line of text, at most 200 characters, for an error line that
    names a file (``default``, or the exception's type, where it has no text)."""
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else (type(exc).__name__ if default is None else default)
