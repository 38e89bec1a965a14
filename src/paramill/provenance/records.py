"""Reading the provenance records paramill writes beside its outputs (``<output>.prov.json``):
a record checked for its shape, and where the names it lists are now (:mod:`paramill.provenance`
writes records, checks jobs' inputs against them and verifies chains of them)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePath
from typing import Any

from paramill.errors import InputError
from paramill.io.jsonfiles import MalformedJson, read_json

PROV_SUFFIX = ".prov.json"


class Malformed(Exception):
    pass


def load_record(record_path: Path) -> dict[str, Any]:
    try:
        record = read_json(record_path)
    except OSError as exc:
        raise Malformed(f"unreadable record: {exc.strerror or exc}") from None
    except MalformedJson as exc:
        raise Malformed(f"malformed record ({exc.message})" if exc.utf8 else
                         f"unreadable record: {exc.message}") from None
    if not isinstance(record, dict):
        raise Malformed("malformed record (not a JSON object)")
    for kind in ("inputs", "outputs", "input_records"):
        entries = record.get(kind, [])
        if not isinstance(entries, list) or not all(
                isinstance(e, dict) and isinstance(e.get("path" if kind != "input_records" else "output"), str)
                and isinstance(e.get("sha256"), str) for e in entries):
            raise Malformed(f"malformed record (`{kind}` is not a list of path/sha256 entries)")
        if kind != "input_records" and not all(type(e.get("bytes", 0)) is int for e in entries):
            raise Malformed(f"malformed record (a `bytes` of `{kind}` is not a whole number)")
    return record


def listed_outputs(record_path: Path) -> tuple[str, dict[Path, dict[str, Any]]]:
    """The rule of a record and its outputs by where they are now (resolved); an
    :class:`~paramill.errors.InputError` naming the record where it cannot be read."""
    try:
        record = load_record(record_path)
    except Malformed as exc:
        raise InputError(record_path, None, f"{exc}; rerun the step that writes it") from None
    where = locator(record, record_path)
    return (str(record.get("rule", "?")),
            {where(e["path"]).resolve(): e for e in record.get("outputs", [])})


def base_of(record: dict[str, Any], record_path: Path) -> Path:
    """The folder a record's relative paths are relative to: found from where the record
    is now and the name it was written under, so the answer is the same from any working
    directory and after the tree was moved; else the recorded working directory."""
    named = record.get("record")
    here = record_path.absolute()
    if isinstance(named, str) and not Path(named).is_absolute():
        parts = Path(named).parts
        if ".." not in parts and here.parts[-len(parts):] == parts:
            return Path(*here.parts[:-len(parts)])
    cwd = record.get("cwd")
    return Path(cwd) if isinstance(cwd, str) else Path.cwd()


def locator(record: dict[str, Any], record_path: Path) -> Callable[[str], Path]:
    """Where a name a record lists is now. The output the record is named for (its
    ``record`` field, ``X.prov.json`` for ``X``) is the file or folder beside the record
    of that name: an output copied or downloaded away from its tree with its record (a
    released model) is still the output its record describes. Every other name (inputs,
    the job's other outputs) is found from :func:`_base`."""
    base = base_of(record, record_path)
    named = record.get("record")
    here = record_path.with_name(record_path.name[:-len(PROV_SUFFIX)])
    own = None
    if isinstance(named, str) and named.endswith(PROV_SUFFIX):
        own = PurePath(named[:-len(PROV_SUFFIX)])
        if own.name != here.name:  # the record of a file of another name: no shortcut
            own = None

    def where(name: str) -> Path:
        if own is not None:
            listed = PurePath(name)
            if listed == own:
                return here
            if own in listed.parents:
                return here / listed.relative_to(own)
        return base / name  # an absolute name stays as it is
    return where
