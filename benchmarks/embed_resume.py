#!/usr/bin/env python3
"""What a checkpoint within an epoch costs, and what it saves when a job is killed.

``paramill embed train`` (the command a job runs; WORD, 300 dimensions, batch 100, mega-batch
20, buffers of ``--buffer-pairs``) on ``--pairs`` synthetic pairs (``embed_scale.py``'s
generator), four runs in child processes:

1. uninterrupted, ``checkpoint_minutes: 0`` (epochs' ends only);
2. uninterrupted, a checkpoint after every buffer (``checkpoint_minutes`` tiny): the
   seconds the writes take, and the epochs' rate against run 1;
3. the same, killed with SIGKILL ``--kill-after`` seconds after it printed its first
   checkpoint within its second epoch (the job's time limit);
4. run 3's command again: it resumes within that epoch.

The report: each run's wall and epoch seconds, run 2's checkpoint writes, the pairs run 3 had
done when killed and how many of them the resumed run did again (those after its last
checkpoint), and whether run 4's model is run 1's weight for weight (it must be: the script
exits 1 otherwise).

    python benchmarks/embed_resume.py [--pairs 400000] [--buffer-pairs 100000] [--epochs 2]
        [--units word|sp] [--threads N] [--out FILE]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=400_000)
    parser.add_argument("--buffer-pairs", type=int, default=100_000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--units", choices=["word", "sp"], default="word")
    parser.add_argument("--kill-after", type=float, default=5.0,
                        help="seconds after the second epoch's first checkpoint within it to kill run 3")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--out")
    args = parser.parse_args()
    import torch

    from embed_scale import synthetic

    env = {**os.environ, "PARAMILL_PROGRESS": "0", "PYTHONPATH": str(REPO / "src")}
    every = 1e-9  # minutes: due after every buffer
    report = {"benchmark": "embedding training: checkpoints within an epoch, and a killed job resumed",
              "machine": machine(), "threads": args.threads,
              "settings": {"model": "word", "units": args.units, "dim": 300, "batch": 100,
                           "megabatch": 20, "buffer_pairs": args.buffer_pairs, "pairs": args.pairs,
                           "epochs": args.epochs}}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        pairs = tmp / "pairs.parquet"
        synthetic(pairs, args.pairs)
        runs = {}
        for name, minutes in (("epochs_only", 0), ("every_buffer", every)):
            out = tmp / f"{name}.pt"
            wall, _ = run(command(pairs, out, args, minutes), env)
            s = summary(out)
            runs[name] = {"wall_seconds": round(wall, 2), "epoch_seconds": s["epoch_seconds"],
                          "epoch_pairs_per_second": s["epoch_pairs_per_second"],
                          "checkpoints_within_epochs": s["checkpoints_within_epochs"],
                          "checkpoints_within_epochs_seconds": s["checkpoints_within_epochs_seconds"]}
            print(name, runs[name], file=sys.stderr, flush=True)
        killed = command(pairs, tmp / "killed.pt", args, every)
        proc = subprocess.Popen(killed, env=env, stderr=subprocess.PIPE, text=True)
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
            if marks():
                time.sleep(args.kill_after)
            proc.send_signal(signal.SIGKILL)
            killed_at = time.perf_counter()
            proc.wait(timeout=60)
        finally:
            proc.kill()
        reader.join(timeout=10)
        if not marks():
            sys.exit("embed_resume: run 3 ended before a checkpoint within its second epoch")
        kept = torch.load(tmp / "killed.pt.resume.pt", weights_only=True)
        runs["killed"] = {"wall_seconds": round(killed_at - began, 2), "epoch_done": kept["epoch"],
                          "within_epoch": kept["within_epoch"],
                          # the work lost: from its last checkpoint to the kill
                          "seconds_after_last_checkpoint": round(killed_at - marks()[-1], 2)}
        wall, log = run(killed, env)
        s = summary(tmp / "killed.pt")
        runs["resumed"] = {"wall_seconds": round(wall, 2), "epoch_seconds": s["epoch_seconds"],
                           "resumed_line": next((x for x in log.splitlines() if "resuming" in x), None)}
        a = torch.load(tmp / "epochs_only.pt", weights_only=True)
        b = torch.load(tmp / "killed.pt", weights_only=True)
        same = a["history"] == b["history"] and all(torch.equal(a["state_dict"][k], b["state_dict"][k])
                                                    for k in a["state_dict"])
    base, each = runs["epochs_only"], runs["every_buffer"]
    report.update({"runs": runs, "resumed_is_uninterrupted_model": same,
                   "checkpoint_seconds_each": round(each["checkpoints_within_epochs_seconds"]
                                                    / max(1, each["checkpoints_within_epochs"]), 3),
                   "epoch_rate_every_buffer_vs_epochs_only": round(
                       each["epoch_pairs_per_second"] / base["epoch_pairs_per_second"], 3)})
    emit(report, args.out)
    if not same:
        sys.exit("embed_resume: the resumed run's model is not the uninterrupted run's")


if __name__ == "__main__":
    main()
