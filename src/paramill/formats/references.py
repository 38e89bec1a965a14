"""MT outputs beside their reference: a ``reference`` file and line-aligned ``hypotheses``
files, one per MT system, one sentence a line. Line *i* of every system's output is a
candidate paraphrase of line *i* of the reference, its ``method`` the system's name; files
of different lengths are an error naming the file that ended and the line."""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from paramill.formats.rows import Candidate
from paramill.io.lines import LineStream
from paramill.formats.reading import candidate_fields
from paramill.errors import InputError
from paramill.config.typed import Settings, setting

NAME = "references"
ALIASES: tuple[str, ...] = ()
DESCRIPTION = ("a `reference` file and line-aligned `hypotheses` files, one per MT system")


@dataclass(frozen=True)
class Spec(Settings):
    reference: str = setting(doc="The reference file, one sentence a line.", type="string")
    hypotheses: dict[str, str] | list[str] = setting(
        doc="MT outputs line-aligned with the reference: {system: file}, or a list of files "
        "and globs, each system named by its file name less the prefix and suffix all the "
        "names share.",
        anyOf=[{"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1},
               {"type": "array", "items": {"type": "string"}, "minItems": 1}])


def systems(hypotheses: dict[str, str] | list[str] | tuple[str, ...]) -> dict[str, str]:
    """Name the MT systems of ``hypotheses``: a mapping as given, or files (globs expanded,
    sorted) named by their base names less the longest prefix and suffix all share. A glob
    that matches nothing is a :class:`FileNotFoundError`."""
    if isinstance(hypotheses, dict):
        return dict(hypotheses)
    files: list[str] = []
    for entry in hypotheses:
        found = sorted(glob.glob(entry)) if glob.has_magic(entry) else [entry]
        if not found:
            raise FileNotFoundError(f"no file matches {entry!r}")
        files += [f for f in found if f not in files]
    if len(files) == 1:
        return {os.path.basename(files[0]): files[0]}
    names = [os.path.basename(f) for f in files]
    # shared prefix and suffix, cut at a separator so that `hyp.sysA` stays `sysA`
    prefix = re.sub(r"[^._]*$", "", os.path.commonprefix(names))
    suffix = re.sub(r"^[^._]*", "", os.path.commonprefix([n[::-1] for n in names])[::-1])
    stems = [n[len(prefix):len(n) - len(suffix)] for n in names]
    if len(set(stems)) != len(stems) or not all(stems):
        stems = names
    return dict(zip(stems, files))


def check(spec: Spec, use: str, where: str) -> None:
    try:
        found = systems(spec.hypotheses)
    except FileNotFoundError as exc:
        raise ValueError(f"{where}.hypotheses: {exc}") from None
    if problem := _system_problem(spec.reference, found):
        raise ValueError(f"{where}.hypotheses: {problem}")


def _same_bytes(a: str, b: str) -> bool:
    """Whether files ``a`` and ``b`` hold the same bytes (sizes first; read in blocks)."""
    try:
        if os.path.getsize(a) != os.path.getsize(b):
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            while True:
                block = fa.read(1 << 20)
                if block != fb.read(1 << 20):
                    return False
                if not block:
                    return True
    except (OSError, ValueError):
        return False  # a file that cannot be read is said by the reader, naming it


def _system_problem(reference: str, found: dict[str, str]) -> str | None:
    """A system's file that is a folder, the reference (a glob that matches it too) or holds
    the same bytes (a copy, each line paired with itself). (A path that names no file is the
    reader's to say.)"""
    if not reference or "\0" in reference:
        return None
    for name, path in found.items():
        if not path or "\0" in path:
            continue
        if os.path.isdir(path):
            return f"system {name}'s file {path} is a folder: name its files (a glob such as {path}/*.en)"
        same = os.path.abspath(path) == os.path.abspath(reference) or (
            os.path.exists(path) and os.path.exists(reference) and os.path.samefile(path, reference))
        if same:
            return (f"system {name} is the reference file {reference} (a glob that matches it "
                    "too?): every line would be paired with itself; name the systems' files only")
        if _same_bytes(path, reference):
            return (f"system {name}'s file {path} holds the same bytes as the reference "
                    f"{reference}: every line would be paired with itself")
    return None


def _systems(spec: Spec) -> dict[str, str]:
    try:
        found = systems(spec.hypotheses)
    except FileNotFoundError as exc:
        raise InputError(str(exc), None, "no hypothesis file matches this pattern") from None
    if problem := _system_problem(spec.reference, found):
        raise InputError(spec.reference, None, problem)
    return found


def files(spec: Spec) -> list[str]:
    return [spec.reference, *_systems(spec).values()]


def pairs(spec: Spec, method: str = NAME, max_line_bytes: int = 65536, batch_rows: int = 0
          ) -> Iterator[Candidate]:
    """One candidate per system a line (``method`` = the system)."""
    reference, hypotheses = spec.reference, _systems(spec)
    ref_stream = LineStream(reference, max_line_bytes)
    streams = {name: LineStream(path, max_line_bytes) for name, path in hypotheses.items()}
    refs = candidate_fields(ref_stream, "reference")
    hyps = {name: candidate_fields(stream, name) for name, stream in streams.items()}
    while True:
        ref = next(refs, None)
        got = {name: next(it, None) for name, it in hyps.items()}
        ended = [name for name, value in got.items() if value is None]
        if ref is None and len(ended) == len(got):
            return
        if ref is None or ended:
            done = [reference] if ref is None else [hypotheses[n] for n in ended]
            going = [hypotheses[n] for n, v in got.items() if v is not None]
            going += [] if ref is None else [reference]
            raise InputError(done[0], ref_stream.lines + (ref is None),
                             f"line-aligned files differ in length: {', '.join(done)} ended "
                             f"after {ref_stream.lines - (ref is not None)} lines but "
                             f"{', '.join(going)} go on")
        line_no, ref_fields = ref
        for name, (_, fields) in got.items():  # type: ignore[misc]
            path = hypotheses[name]
            if isinstance(ref_fields, Candidate):
                yield Candidate(line_no, ref_fields.en_ref, None, name, source_file=reference,
                                reason=ref_fields.reason, detail=f"reference: {ref_fields.detail}")
            elif isinstance(fields, Candidate):
                fields.method, fields.en_ref, fields.candidate = (name, "\t".join(ref_fields),
                                                                  fields.en_ref)
                yield fields
            else:
                yield Candidate(line_no, "\t".join(ref_fields), "\t".join(fields), name,
                                source_file=path)
