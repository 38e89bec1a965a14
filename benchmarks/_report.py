"""Shared by the benchmark scripts: print the JSON report and optionally save it; the
machine; a scratch copy of the project; the Twitter URL corpus train positives."""

from __future__ import annotations

import json
import os
import platform
import shutil
import threading
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
#: the real public data (../shared/data beside the checkout; PARAMILL_SHARED_DATA elsewhere, e.g.
#: a copy carried to a GPU machine by scripts/gpu-carry.sh)
SHARED = Path(os.environ.get("PARAMILL_SHARED_DATA") or REPO.parent / "shared" / "data")
#: what a run of the workflow needs from the checkout (as tests/workflow/conftest.py copies)
PROJECT_FILES = ["Snakefile", "config.yaml", "rules", "configs", "envs", "report", "profiles",
                 "slurm", "data/sample"]


#: the peak RSS of the process that evaluates it, in MB, for the scripts benchmarks run in a
#: child process: the kernel's high-water mark of this process's own memory (VmHWM). Not
#: ru_maxrss: Linux carries it over from the parent at fork and keeps it through exec, so a
#: child of a benchmark holding 800 MB of synthetic pairs reported 800 MB whatever it did.
PEAK_RSS_MB = "float(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) / 1024"


def _tree_pids(root: int) -> list[int]:
    """``root`` and every process below it (each thread's ``children`` file: Linux)."""
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        try:
            for task in os.scandir(f"/proc/{pid}/task"):
                todo += map(int, Path(task.path, "children").read_text().split())
        except OSError:  # gone since its parent listed it
            continue
    return tree


def _status_kb(pid: int, *fields: str) -> int:
    """The sum of ``fields`` (kB) of ``/proc/PID/status``; 0 when it is gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0
    return sum(int(line.split()[1]) for line in lines if line.split(":")[0] in fields)


def _tree_rss_parts(root: int) -> tuple[int, int, int]:
    """The resident memory of ``root`` and every process below it, now (from /proc: Linux):
    ``root``'s whole resident set, its children's anonymous pages together (their heaps and
    arrays), and how many children. A child's file-backed pages (the libraries) are left out
    as the ones ``root`` also maps: right for spawned workers, which share no anonymous pages
    with it. (smaps' Pss would split shared pages exactly, but reading it walks the page
    tables: ~11 ms a sample for a 1.4 GB process, against 0.06 ms for ``status``.)"""
    root_pid, *children = _tree_pids(root)
    return (1024 * _status_kb(root_pid, "VmRSS"),
            1024 * sum(_status_kb(pid, "RssAnon") for pid in children), len(children))


class TreePeak:
    """The peak resident memory of a process *and its children together* (worker pools),
    sampled every ``interval`` seconds while it runs: what a SLURM job's memory limit counts,
    where :data:`PEAK_RSS_MB` sees only the process that evaluates it. Sampling can miss a
    peak shorter than ``interval``. ``with TreePeak(proc.pid) as peak: proc.wait()``; then
    ``peak.mb``; also the children's peak together (``children_mb``) and the most children
    seen at once (``children``), to size a run with more workers."""

    def __init__(self, pid: int, interval: float = 0.2):
        self.pid, self.interval, self.peak, self.children_peak, self.children = pid, interval, 0, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            own, children, count = _tree_rss_parts(self.pid)
            self.peak = max(self.peak, own + children)
            self.children_peak = max(self.children_peak, children)
            self.children = max(self.children, count)
            self._stop.wait(self.interval)

    def __enter__(self) -> "TreePeak":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def mb(self) -> float:
        return self.peak / 2**20

    @property
    def children_mb(self) -> float:
        return self.children_peak / 2**20


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {"platform": platform.platform(), "cpus": os.cpu_count(),
            "cpus_usable": len(os.sched_getaffinity(0)), "python": platform.python_version(),
            "processor": platform.processor() or platform.machine()}


def copy_project(dest: Path) -> Path:
    """The workflow's files from the checkout into ``dest`` (files already there are kept)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in PROJECT_FILES:
        src, target = REPO / name, dest / name
        if target.exists() or target.is_symlink():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            target.symlink_to(src.readlink())
        elif src.is_dir():
            shutil.copytree(src, target)
        else:
            shutil.copy2(src, target)
    return dest


def twitter_positive_pairs(data: Path):
    """The Twitter URL corpus train split's paraphrase pairs (label 1), as (s1, s2)."""
    train = data / "twitter-url-corpus" / "castorini-twitterPPDB" / "train"
    a = (train / "a.toks").read_text(encoding="utf-8").splitlines()
    b = (train / "b.toks").read_text(encoding="utf-8").splitlines()
    sim = (train / "sim.txt").read_text().split()
    for s1, s2, label in zip(a, b, sim):
        if label.strip() == "1":
            yield s1, s2


def twitter_positives(data: Path, out: Path) -> int:
    """The train split's paraphrase pairs as a TSV with a header (s1, s2, label); how many."""
    n = 0
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("s1\ts2\tlabel\n")
        for s1, s2 in twitter_positive_pairs(data):
            fh.write(f"{s1}\t{s2}\t1\n")
            n += 1
    return n


def emit(report: dict[str, Any], out: str | None) -> None:
    text = json.dumps(report, indent=2)
    print(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text + "\n")


def run_paramill(argv: list[str]) -> dict[str, Any]:
    """``paramill ARGV`` in a child process (no progress bars): its wall time and the peak
    resident memory of it and its children; a failure ends the benchmark with its error."""
    import subprocess
    import sys
    import time

    start = time.perf_counter()
    proc = subprocess.Popen([str(Path(sys.executable).parent / "paramill"), *argv],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PARAMILL_PROGRESS": "0"})
    with TreePeak(proc.pid) as peak:
        _, err = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"paramill {' '.join(argv[:3])} failed: {err[-2000:]}")
    return {"seconds": round(time.perf_counter() - start, 2), "peak_rss_mb": round(peak.mb)}
