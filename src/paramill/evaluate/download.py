"""Download the official STS archives, check their pinned sha256, and unpack them.

Only archives whose digest we verified against a byte-identical copy are listed (the
originals kept in github.com/eduardofv/sts_eval, ``data/sources/``, retrieved from the STS
wiki on 2021-06-14). An archive whose download does not match its digest is refused and
nothing is written. Add others with their own digest in ``ARCHIVES``.

Tests never reach the internet: they serve a fake archive from a loopback server.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paramill.run.job import output_job
from paramill.io.outputs import scratch_dir
from paramill.provenance import Run


@dataclass(frozen=True)
class Archive:
    url: str
    sha256: str
    bytes: int
    strip: int = 1  # leading path components dropped on extraction


#: name -> the archives unpacked together into one directory
ARCHIVES: dict[str, list[Archive]] = {
    # sts-train.csv, sts-dev.csv, sts-test.csv (format: stsbenchmark)
    "stsbenchmark": [Archive("http://ixa2.si.ehu.es/stswiki/images/4/48/Stsbenchmark.tar.gz",
                             "557a86abbd2b76ee6768d8b5103b659601a9d26b797898c7467812f303b21280", 409630)],
    # STS Benchmark companion (other English STS data)
    "stscompanion": [Archive("http://ixa2.si.ehu.es/stswiki/images/e/ee/Stscompanion.tar.gz",
                             "985e8e76d90b2ebac0aa5859edae1c96363155e23a7459b54fa11cf7d041d310", 267977)],
    # STS 2017: STS.input.track5.en-en.txt + STS.gs.track5.en-en.txt side by side (senteval)
    "sts2017": [Archive("http://ixa2.si.ehu.es/stswiki/images/2/20/Sts2017.eval.v1.1.zip",
                        "29abfa07b4614c2b17ddd615f74aa484ef76f892ffea07351731287fe7788ffd", 87902),
                Archive("http://ixa2.si.ehu.es/stswiki/images/7/70/Sts2017.gs.zip",
                        "80d7636119de238e6d3fdf252284fbabf0c041fa38f45913fedd67bfdc53a2f8", 3138)],
}


def fetch(archive: Archive, dest: Path, timeout: float = 60.0) -> Path:
    """Download ``archive`` into ``dest`` (a file) and check its size and sha256."""
    digest = hashlib.sha256()
    size = 0
    with urllib.request.urlopen(archive.url, timeout=timeout) as resp, open(dest, "wb") as out:
        while chunk := resp.read(1 << 16):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
    if digest.hexdigest() != archive.sha256:
        raise ValueError(f"{archive.url}: sha256 {digest.hexdigest()} ({size} bytes), expected "
                         f"{archive.sha256} ({archive.bytes} bytes); refusing it")
    return dest


def _target(root: Path, name: str, strip: int) -> Path | None:
    parts = Path(name).parts[strip:]
    if not parts:
        return None
    target = (root / Path(*parts)).resolve()
    if not target.is_relative_to(root.resolve()):
        raise ValueError(f"archive member {name!r} would be written outside {root}")
    return target


def unpack(path: Path, root: Path, strip: int) -> list[str]:
    """Extract files (no links, no paths outside ``root``), dropping ``strip`` components."""
    written = []
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                target = _target(root, info.filename, strip)
                if target is None or info.is_dir():
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                written.append(str(target.relative_to(root.resolve())))
    else:
        with tarfile.open(path) as tf:
            for member in tf.getmembers():
                target = _target(root, member.name, strip)
                if target is None or not member.isfile():
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tf.extractfile(member)
                assert src is not None
                with src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                written.append(str(target.relative_to(root.resolve())))
    return written


def download(name: str, out: str | Path, archives: dict[str, list[Archive]] | None = None,
             rule: str = "sts_download") -> dict[str, Any]:
    """Fetch, check and unpack the archives of ``name`` into the directory ``out``."""
    catalogue = ARCHIVES if archives is None else archives
    if name not in catalogue:
        raise ValueError(f"unknown STS archive {name!r}; known: {', '.join(sorted(catalogue))}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    run = Run(rule=rule, params={"name": name, "archives": [a.__dict__ for a in catalogue[name]]},
              inputs=[])
    with scratch_dir(out.parent, "sts-download-") as tmp, output_job(run, out) as job:
        (tmp_out,) = job.paths
        tmp_out.mkdir(parents=True)
        files: list[str] = []
        for i, archive in enumerate(catalogue[name]):
            files += unpack(fetch(archive, tmp / f"archive-{i}"), tmp_out, archive.strip)
        job.rows_out = len(files)
        job.extra = {"sha256_checked": [a.sha256 for a in catalogue[name]]}
    return {"name": name, "files": sorted(files)}
