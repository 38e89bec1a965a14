"""Shared test helpers: small files in every compression paramill reads; a command stopped
mid-run."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

REPO = Path(__file__).resolve().parents[1]

#: ``make test`` runs two pytest-xdist workers on CI's 2 cores, and a workflow test's Snakemake
#: runs jobs on 2 more threads: the cores are shared by design. OpenMP's threads (torch's and
#: CTranslate2's, both libgomp) spin while they wait for work, on cores the other worker's
#: jobs need; waiting passively gives the cores back (the threads each job uses, and so its
#: results, are unchanged). Set before anything imports torch, and inherited by every
#: Snakemake and job the tests start.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def compress(data: bytes, kind: str) -> bytes:
    if kind == "gz":
        return gzip.compress(data, mtime=0)
    if kind == "xz":
        return lzma.compress(data)
    if kind == "zst":
        return zstandard.ZstdCompressor().compress(data)
    if kind == "bz2":
        return bz2.compress(data)
    return data


@pytest.fixture
def write_file(tmp_path):
    """write_file(name, lines_or_bytes, kind="plain") -> Path, compressed as asked."""

    def _write(name: str, content, kind: str = "plain") -> Path:
        if isinstance(content, (list, tuple)):
            content = b"".join((c.encode() if isinstance(c, str) else c) + b"\n" for c in content)
        elif isinstance(content, str):
            content = content.encode()
        path = tmp_path / name
        path.write_bytes(compress(content, kind))
        return path

    return _write


def stopped_when(command: list[str], env: dict[str, str], seen: Callable[[str], bool],
                 stop: Callable[[subprocess.Popen], None], **popen) -> tuple[int, str]:
    """Run ``command``, and at the first line of its stderr that ``seen`` accepts call
    ``stop`` with the process (a signal, as a job's end sends one); returns its exit status
    and the stderr after that line. The process is killed if it outlives the test."""
    proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True, **popen)
    try:
        for line in proc.stderr:
            if seen(line):
                stop(proc)
                break
        rest = proc.stderr.read()
        proc.wait(timeout=120)
    finally:
        proc.kill()
    return proc.returncode, rest


def _cuda_problem() -> str | None:
    """Why GPU tests cannot run here (None where torch sees a CUDA device)."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch is a dependency
        return f"torch cannot be imported: {exc}"
    if not torch.cuda.is_available():
        return (f"needs a CUDA GPU; torch {torch.__version__} sees none "
                f"(CUDA build: {torch.version.cuda or 'no'})")
    return None


#: The name of the unit of work that the tests sharing the session's tiny run form.
TINY_GROUP = "tiny-run"

#: The units of work that take longest (seconds of one worker in a suite on 2 cores), in the
#: order they are handed out: the default DAG (455, two cores through its NMT training), the
#: SLURM module (250, mostly waiting on the plugin's status checks: beside the default DAG
#: its waits leave the other worker both cores), the workflow tests that share the session's
#: tiny run (tests/workflow/conftest.py; one worker runs them all, so the tiny DAG is built
#: once; 550), the README's own-data runs (220), the NMT unit tests (120), the harvest season
#: (100), the embedding unit tests (100), the hostile run (80), the identifier's unit tests
#: (65), the pair-only DAG (45). Every other module follows, in the order collected: short
#: ones, which fill the gaps at the end. A worker takes its next unit when two or fewer tests
#: of its last are left; a long unit handed out last leaves the other worker idle for its
#: whole length (the SLURM module, collected last, did: 230 s of a suite's 1111), and a
#: unit that mostly waits beside one that uses a single core leaves a core idle (SLURM beside
#: the short unit modules and the harvest season: about 110 core-seconds of a suite).
FIRST_GROUPS = ("tests/workflow/test_default_workflow.py", "tests/workflow/test_slurm.py",
                TINY_GROUP, "tests/workflow/test_own_data.py", "tests/unit/test_nmt.py",
                "tests/workflow/test_harvest_workflow.py", "tests/unit/test_embed.py",
                "tests/workflow/test_reproducible.py", "tests/unit/test_paraid.py",
                "tests/workflow/test_pairs_workflow.py")


def _group(item) -> str:
    if "tiny_run" in item.fixturenames:
        return TINY_GROUP
    return item.nodeid.split("::")[0]  # the module: its module-scoped fixtures run once


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` are skipped, with the reason, where no CUDA device is visible.

    Under pytest-xdist (``make test`` runs ``-n 2 --dist loadgroup``) each module is one unit
    of work, and the tests sharing the tiny run are one; the longest go first, in
    :data:`FIRST_GROUPS`' order."""
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    problem = _cuda_problem() if gpu_items else None
    if problem:
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=problem))
    if not getattr(config.option, "loadgroup", False):  # set in each worker (its dist is "no")
        return
    for item in items:
        if not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(_group(item)))
    rank = {name: i for i, name in enumerate(FIRST_GROUPS)}
    items.sort(key=lambda item: rank.get(_group(item), len(rank)))  # stable: order kept within
