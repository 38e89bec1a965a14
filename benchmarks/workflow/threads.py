#!/usr/bin/env python3
"""Threads that match the allocation: nmt_train and embed_train beside one busy process.

On a shared node a job whose pools are sized to the machine, not to the CPUs it was given,
competes with its neighbours for cores it does not have; OpenMP workers that spin at their
barriers make that far worse than a fair share. This runs the two training jobs as the
pipeline runs them (`paramill --threads N ...`) under three conditions, in one run:

- ``idle``: nothing else running, N = every CPU (the reference);
- ``busy, pools = machine``: one competing busy process (a pure-Python loop on one core),
  N = every CPU, what a job does when nothing limits its pools to its allocation (before
  `--threads`, every rule but four; a process started by hand);
- ``busy, pools = allocation``: the same competitor, N = the CPUs left free (what a rule
  given that many threads now uses for torch, BLAS, polars and the tools it starts).

nmt_train: the sample's CS->EN Transformer (2 layers, 128 wide) for ``--nmt-steps`` steps,
through Snakemake (`--set-threads nmt_train=N`, the time from the rule's benchmark file).
embed_train: WORD (300 dims) for one epoch on the Twitter URL corpus train positives
(11,167 pairs; ``../shared/data``), the `paramill embed train` command line.

    python benchmarks/workflow/threads.py --out benchmarks/out/threads.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _report
from _report import SHARED, copy_project, emit, machine, twitter_positives  # noqa: E402

BUSY = "while True: pass"


def _env() -> dict[str, str]:
    bindir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_THREADS")}
    return {**env, "PATH": bindir + os.pathsep + env.get("PATH", ""), "PARAMILL_PROGRESS": "0"}


def _snakemake(root: Path, *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "snakemake", "--cores", str(os.cpu_count()), *args],
                          cwd=root, env=_env(), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"snakemake {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def nmt_train(root: Path, threads: int) -> float:
    """Seconds of the nmt_train job (Snakemake's own benchmark of it), from step 0 (the
    job resumes from the checkpoints a run before it left: they are removed)."""
    shutil.rmtree(root / "work" / "nmt" / "cs-en", ignore_errors=True)
    _snakemake(root, "--configfile", "config.yaml", "steps.yaml", "--forcerun", "nmt_train",
               "--until", "nmt_train", "--set-threads", f"nmt_train={threads}")
    header, row = (root / "logs/benchmarks/nmt/nmt_train.cs-en.tsv").read_text().splitlines()[:2]
    return float(dict(zip(header.split("\t"), row.split("\t")))["s"])


def embed_train(root: Path, pairs: Path, threads: int) -> float:
    """Seconds of `paramill embed train` from nothing (no model or resume file left)."""
    tool = Path(sys.executable).parent / "paramill"
    for old in root.glob("word.pt*"):
        old.unlink()
    start = time.perf_counter()
    subprocess.run([str(tool), "--threads", str(threads), "embed", "train", str(pairs),
                    "--out", str(root / "word.pt"),
                    "--spec", json.dumps({"components": ["word"], "dim": 300}),
                    "--settings", json.dumps({"epochs": 1, "batch_size": 100, "megabatch": 20})],
                   check=True, env=_env(), capture_output=True)
    return time.perf_counter() - start


def measure(job, busy: bool, threads: int, repeats: int) -> dict[str, float]:
    competitor = subprocess.Popen([sys.executable, "-c", BUSY]) if busy else None
    try:
        time.sleep(0.5 if busy else 0)
        seconds = sorted(job(threads) for _ in range(repeats))
    finally:
        if competitor:
            competitor.kill()
            competitor.wait()
    return {"threads": threads, "seconds": round(seconds[len(seconds) // 2], 2),
            "runs": [round(s, 2) for s in seconds]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(SHARED), help="the shared data folder")
    parser.add_argument("--nmt-steps", type=int, default=100, help="nmt_train steps")
    parser.add_argument("--repeats", type=int, default=1, help="runs per condition (the median is reported)")
    parser.add_argument("--jobs", default="nmt_train,embed_train")
    parser.add_argument("--out", help="also write the JSON report here")
    args = parser.parse_args()
    cpus = len(os.sched_getaffinity(0))
    if cpus < 2:
        raise SystemExit("needs at least 2 CPUs: one for the competitor, one for the job")
    report = {"benchmark": "training jobs beside one busy process: pools sized to the machine "
                           "vs to the allocation", "machine": machine(),
              "competitor": f"one process running `{BUSY}`", "jobs": {}}
    with tempfile.TemporaryDirectory(prefix="paramill-bench-threads-") as tmp:
        root = copy_project(Path(tmp))
        jobs = {}
        if "nmt_train" in args.jobs:
            (root / "steps.yaml").write_text(json.dumps(
                {"nmt": {"train": {"train_steps": args.nmt_steps, "valid_steps": args.nmt_steps,
                                   "save_checkpoint_steps": args.nmt_steps}}}))
            _snakemake(root, "--configfile", "config.yaml", "steps.yaml", "--until", "nmt_data")
            jobs["nmt_train"] = (lambda n: nmt_train(root, n),
                                 f"sample CS->EN Transformer, {args.nmt_steps} steps")
        if "embed_train" in args.jobs:
            pairs = root / "twitter-positives.tsv"
            n = twitter_positives(Path(args.data), pairs)
            jobs["embed_train"] = (lambda t: embed_train(root, pairs, t),
                                   f"WORD 300d, 1 epoch, {n} Twitter URL train positives")
        for name, (job, what) in jobs.items():
            idle = measure(job, False, cpus, args.repeats)
            machine_sized = measure(job, True, cpus, args.repeats)
            allocation = measure(job, True, cpus - 1, args.repeats)
            report["jobs"][name] = {
                "input": what, "idle": idle, "busy_pools_machine": machine_sized,
                "busy_pools_allocation": allocation,
                "slowdown_vs_idle": {
                    "pools_machine": round(machine_sized["seconds"] / idle["seconds"], 2),
                    "pools_allocation": round(allocation["seconds"] / idle["seconds"], 2)},
                "speedup_allocation_over_machine": round(machine_sized["seconds"] / allocation["seconds"], 2),
            }
    emit(report, args.out)


if __name__ == "__main__":
    main()
