"""JSON files: written atomically, read with errors naming the file and line, merged under
a lock by jobs that add to one file at once, and checked against a JSON Schema of what the
reader uses where one stage writes a file another reads (stats, results): a file of another
shape is an error naming the file and the field, not a ``KeyError`` deep in a job."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from paramill.errors import InputError
from paramill.io.outputs import atomic_output, check_writable

#: a count: a whole number from 0 to what a Parquet/polars Int64 holds
COUNT = {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}
#: counts by name (reasons, outcomes)
COUNTS = {"type": "object", "additionalProperties": COUNT}
TEXT = {"type": "string"}


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


def read_json_as(path: str | os.PathLike, shape: dict[str, Any], what: str) -> Any:
    """:func:`paramill.io.read_json`, then checked against the JSON Schema ``shape``: a file
    of another shape (another JSON file, a field of another type, edited by hand) is an
    :class:`InputError` naming the file, the field and ``what`` the file should be (``a
    corpus's clean stats``)."""
    value = read_json(path)
    wrong = problem(value, shape)
    if wrong:
        raise InputError(path, None, f"not {what}: {wrong}")
    return value


def problem(value: Any, shape: dict[str, Any]) -> str | None:
    """What is wrong with ``value`` against the JSON Schema ``shape`` (``field.path: message``),
    or None."""
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(shape).iter_errors(value))
    if error is None:
        return None
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"{where.lstrip('.') or 'the top level'}: {error.message[:200]}"
