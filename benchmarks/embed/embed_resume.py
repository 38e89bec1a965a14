#!/usr/bin/env python3
"""What checkpoints within an epoch cost, and what they save when a job is killed or stopped.

``paramill embed train`` (the command a job runs; WORD, 300 dimensions, batch 100, mega-batch
20, buffers of ``--buffer-pairs``) on ``--pairs`` synthetic pairs (``embed_scale.py``'s
generator), in child processes:

1. uninterrupted, ``checkpoint_minutes: 0`` (epochs' ends only): the reference model;
2. uninterrupted, ``checkpoint_minutes: --minutes``: the checkpoints' writes, and the
   epochs' rate against run 1;
3. as run 2, killed with SIGKILL ``--kill-after`` seconds after its first checkpoint within
   its second epoch (a node lost, or a kill with no warning), then run again: it resumes
   after that checkpoint;
4. as run 2, sent SIGTERM at the same point (SLURM's time limit, ``scancel``): it writes a
   checkpoint at the end of the mega-batch it came in and ends (status 143), then is run
   again.

The report: each run's wall and epoch seconds, the checkpoints' writes, where each stopped
run's checkpoint left its epoch and the seconds of work after it (lost), and whether each
resumed model is run 1's weight for weight (it must be: the script exits 1 otherwise).

    python benchmarks/embed/embed_resume.py [--pairs 400000] [--buffer-pairs 100000] [--epochs 2]
        [--minutes 0.1] [--kill-after 5] [--units word|sp] [--threads N] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _report import REPO, emit, machine  # noqa: E402

sys.path.insert(0, str(REPO / "src"))


def command(pairs: Path, out: Path, args, minutes: float) -> list[str]:
    settings = {"epochs": args.epochs, "batch_size": 100, "megabatch": 20, "buffer_pairs": args.buffer_pairs}
    return [sys.executable, "-m", "paramill.cli", "--threads", str(args.threads), "embed", "train", str(pairs),
            "--out", str(out), "--settings", json.dumps(settings),
            "--spec", json.dumps({"components": ["word"], "units": args.units, "dim": 300}),
            "--launch", json.dumps({"embed.train": {"checkpoint_minutes": minutes}})]


def summary(out: Path) -> dict:
    """The training summary the model's provenance record holds."""
    return json.loads(out.with_name(out.name + ".prov.json").read_text())["training"]


def run(cmd: list[str], env: dict) -> tuple[float, str]:
    began = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"embed_resume: {' '.join(cmd[:6])} ... failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - began, done.stderr


def stop_and_resume(cmd: list[str], out: Path, env: dict, how: int, after: float) -> dict:
    """``cmd`` started, sent signal ``how`` ``after`` seconds after its first checkpoint within
    its second epoch, then run again to the end: where its checkpoint left it, the work after
    that checkpoint, and the run that resumed."""
    import torch

    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    lines: list[tuple[float, str]] = []  # each stderr line as it came
    reader = threading.Thread(target=lambda: lines.extend((time.perf_counter(), x) for x in proc.stderr),
                              daemon=True)
    began = time.perf_counter()
    reader.start()

    def marks() -> list[float]:  # when each checkpoint within the second epoch was written
        return [when for when, x in list(lines) if x.startswith("embed train: checkpoint in epoch 2 after")]

    try:
        while not marks() and proc.poll() is None:
            time.sleep(0.05)
        if not marks():
            sys.exit("embed_resume: the run ended before a checkpoint within its second epoch")
        time.sleep(after)
        first = len(marks())
        proc.send_signal(how)
        sent = time.perf_counter()
        proc.wait(timeout=120)
    finally:
        proc.kill()
    reader.join(timeout=10)
    kept = torch.load(out.with_name(out.name + ".resume.pt"), weights_only=True)
    last = marks()[-1]
    stopped = {"signal": signal.Signals(how).name, "returncode": proc.returncode,
               "wall_seconds": round(time.perf_counter() - began, 2), "epoch_done": kept["epoch"],
               "within_epoch": {k: v for k, v in kept["within_epoch"].items() if k != "loss_total"},
               # the work lost: from the last checkpoint to the signal (0 where the signal's own
               # checkpoint came after it)
               "seconds_after_last_checkpoint": round(max(0.0, sent - last), 2),
               "checkpoint_after_the_signal": len(marks()) > first}
    wall, log = run(cmd, env)
    s = summary(out)
    return {"stopped": stopped, "resumed": {
        "wall_seconds": round(wall, 2), "epoch_seconds": s["epoch_seconds"],
        "resumed_line": next((x for x in log.splitlines() if "resuming" in x), None)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=400_000)
    parser.add_argument("--buffer-pairs", type=int, default=100_000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--units", choices=["word", "sp"], default="word")
    parser.add_argument("--minutes", type=float, default=0.1,
                        help="checkpoint_minutes of runs 2-4 (0.1: every 6 s)")
    parser.add_argument("--kill-after", type=float, default=5.0,
                        help="seconds after the second epoch's first checkpoint within it to stop runs 3 and 4")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--out")
    args = parser.parse_args()
    import torch

    from embed_scale import synthetic

    env = {**os.environ, "PARAMILL_PROGRESS": "0", "PYTHONPATH": str(REPO / "src")}
    report = {"benchmark": "embedding training: checkpoints within an epoch; a job killed or stopped, resumed",
              "machine": machine(), "threads": args.threads,
              "settings": {"model": "word", "units": args.units, "dim": 300, "batch": 100,
                           "megabatch": 20, "buffer_pairs": args.buffer_pairs, "pairs": args.pairs,
                           "epochs": args.epochs, "checkpoint_minutes": args.minutes}}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        pairs = tmp / "pairs.parquet"
        synthetic(pairs, args.pairs)
        runs = {}
        for name, minutes in (("epochs_only", 0), ("periodic", args.minutes)):
            out = tmp / f"{name}.pt"
            wall, _ = run(command(pairs, out, args, minutes), env)
            s = summary(out)
            runs[name] = {"wall_seconds": round(wall, 2), "pairs": s["pairs"], "epoch_seconds": s["epoch_seconds"],
                          "epoch_pairs_per_second": s["epoch_pairs_per_second"],
                          "checkpoints_within_epochs": s["checkpoints_within_epochs"],
                          "checkpoints_within_epochs_seconds": s["checkpoints_within_epochs_seconds"]}
            print(name, runs[name], file=sys.stderr, flush=True)
        same = {}
        for name, how in (("sigkill", signal.SIGKILL), ("sigterm", signal.SIGTERM)):
            out = tmp / f"{name}.pt"
            runs[name] = stop_and_resume(command(pairs, out, args, args.minutes), out, env, how, args.kill_after)
            print(name, runs[name], file=sys.stderr, flush=True)
            a = torch.load(tmp / "epochs_only.pt", weights_only=True)
            b = torch.load(out, weights_only=True)
            same[name] = a["history"] == b["history"] and all(
                torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])
    base, each = runs["epochs_only"], runs["periodic"]
    report.update({"runs": runs, "resumed_is_uninterrupted_model": same,
                   "checkpoint_seconds_each": round(each["checkpoints_within_epochs_seconds"]
                                                    / max(1, each["checkpoints_within_epochs"]), 3),
                   "epoch_rate_periodic_vs_epochs_only": round(
                       each["epoch_pairs_per_second"] / base["epoch_pairs_per_second"], 3)})
    emit(report, args.out)
    if not all(same.values()):
        sys.exit(f"embed_resume: a resumed run's model is not the uninterrupted run's: {same}")


if __name__ == "__main__":
    main()
