"""Shared by the benchmark scripts: print the JSON report and optionally save it; the
machine; a scratch copy of the project; the Twitter URL corpus train positives."""

from __future__ import annotations

import json
import os
import platform
import shutil
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
