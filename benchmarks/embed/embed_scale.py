#!/usr/bin/env python3
"""Peak memory of embedding training from 1M to 10M synthetic pairs (flat: within 1.2x?).

For each size, a Parquet file of synthetic pairs (``s1``/``s2``; 5-25 words from a 20,000-word
Zipf-like vocabulary, the paraphrase a shuffled, partly replaced copy) is written in chunks,
then a child process runs the real ``paramill.embed.train.train`` on it (WORD, 300 dims,
batch 100, mega-batch 20, ``buffer_pairs`` 100,000): the whole counting pass and id store,
then training steps until ``--train-seconds`` after the id store is complete, when the child
stops the run (SIGALRM) and reports its own peak RSS (VmHWM) and the pairs its steps trained
from the first step to the stop (``train_pairs_per_second``: the rate at this corpus size,
buffers read from the id store included; on CUDA after the steps queued have run). The parent also samples the
peak of the child and its featurising workers together (``peak_tree_rss_mb``, every 0.2 s:
what a SLURM job's memory limit counts). Training memory does not depend on how far an
epoch has gone (one buffer at a time), so stopping it early measures the same peak; a full
epoch of 10M pairs at the measured rate would take over an hour here. Each phase also
reports the CPU seconds of the trainer and of its workers: the trainer's share of counting
and the id store is serial, so ``count_and_id_store_trainer_bound_pairs_per_second`` is what
those phases could reach with unlimited cores.

    python benchmarks/embed/embed_scale.py [--sizes 1000000 10000000] [--out benchmarks/out/embed_scale.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _report import PEAK_RSS_MB, REPO, TreePeak, emit, machine  # noqa: E402

CHILD = """
import json, signal, sys, threading, time
from pathlib import Path
sys.path.insert(0, {src!r})
from paramill.run import device
device.limit_threads({threads})
from paramill.embed.data import PairSource
from paramill.embed.model import ModelSpec
from paramill.embed.train import EmbedTrainSettings, train
import paramill.embed.train as training

steps = {{"pairs": 0, "first": None}}  # the steps queued, from the first
real_stepper = training._stepper
def counting_stepper(*args, **kw):
    step = real_stepper(*args, **kw)
    over = step.over
    def counted(runs, count):
        if steps["first"] is None:
            steps["first"] = time.perf_counter()
        over(runs, count)
        steps["pairs"] += count * 100
    step.over = counted  # a WORD model's steps come in blocks (an averaging model)
    return step
training._stepper = counting_stepper

class Stop(Exception):
    pass

def stop(*_):
    raise Stop

marks = {{}}
out = Path({out!r})
def watch():
    store = out.with_name(out.name + ".ids") / "meta.json"
    while not store.exists():
        time.sleep(0.2)
    marks["store_ready"] = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, {train_seconds})

signal.signal(signal.SIGALRM, stop)
threading.Thread(target=watch, daemon=True).start()
start = time.perf_counter()
try:
    train(PairSource.from_files([{pairs!r}]), out, ModelSpec(components=("word",), dim=300, units={units!r}),
          EmbedTrainSettings(epochs={epochs}, batch_size=100, megabatch=20, buffer_pairs=100000,
                        device={device!r}))
    stopped = False
except Stop:
    stopped = True
finally:
    signal.setitimer(signal.ITIMER_REAL, 0)
import torch
if torch.cuda.is_available():
    torch.cuda.synchronize()  # the steps queued have run
ended = time.perf_counter()
print("RESULT", json.dumps({{"data_seconds": marks["store_ready"] - start, "stopped": stopped,
                            "peak_rss_mb": {peak}, "trained_pairs": steps["pairs"],
                            "train_seconds": ended - steps["first"] if steps["first"] else None}}))
"""


#: the data phases as ``paramill.embed.train.train`` logs them: wall seconds, then the CPU
#: seconds of the trainer (all its threads) and of its featurising workers
CPU = r" in ([0-9.]+) s \(CPU: trainer ([0-9.]+) s, workers ([0-9.]+) s\)"
PHASES = {"sentencepiece": "SentencePiece model trained" + CPU,
          "counting": "units counted" + CPU,
          "id_store": r"id store of \d+ pairs ready" + CPU}


def synthetic(path: Path, n: int, seed: int = 0, chunk: int = 1_000_000) -> None:
    """``n`` pairs: s1 5-25 words drawn from a Zipf-like vocabulary of 20,000; s2 the same
    words with the first third shuffled, then each word replaced with probability 0.2 by one
    word drawn for the sentence. Built with numpy and Arrow, not a Python loop a pair (10M
    pairs in about a minute, not five: the GPU machine's run has minutes, not hours)."""
    rng = np.random.default_rng(seed)
    size = 20_000
    vocab = pa.array([f"w{i}" for i in range(size)])
    p = 1.0 / np.arange(1, size + 1)
    p /= p.sum()
    writer = None
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        lengths = rng.integers(5, 26, size=m)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        words = rng.choice(size, size=int(offsets[-1]), p=p)
        row = np.repeat(np.arange(m), lengths)  # each word's sentence, and its place in it
        place = np.arange(len(words)) - offsets[:-1][row]
        head = place < np.maximum(1, lengths // 3)[row]
        # sorted by sentence, then a random key in the first third and the place after it
        shuffled = words[np.argsort(row * 32.0 + np.where(head, rng.random(len(words)), place + 1.0))]
        replaced = rng.random(len(words)) < 0.2
        shuffled[replaced] = rng.integers(0, size, size=m)[row[replaced]]
        table = pa.table({side: pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets),
                                                                        vocab.take(pa.array(ids))), " ")
                          for side, ids in (("s1", words), ("s2", shuffled))})
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema, compression="zstd")
        writer.write_table(table)
    writer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--train-seconds", type=float, default=60)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="where the training steps run (auto: cuda when a GPU is visible)")
    parser.add_argument("--units", choices=["sp", "word"], default="sp",
                        help="units of the WORD model: sp (SentencePiece, trained on the pairs: "
                             "the default) or word")
    parser.add_argument("--data", metavar="DIR",
                        help="keep the synthetic pairs in DIR (pairs-N.parquet) and reuse those "
                             "already there: a GPU call makes them while its GPU steps run")
    parser.add_argument("--generate-only", action="store_true",
                        help="write the synthetic pairs into --data and stop")
    parser.add_argument("--epochs", type=int, default=1,
                        help="epochs to train (the run stops after --train-seconds of steps "
                             "anyway; more than one lets a small corpus's steps fill the window)")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.generate_only:
        if not args.data:
            parser.error("--generate-only needs --data")
        for n in args.sizes:
            path = Path(args.data) / f"pairs-{n}.parquet"
            if path.exists():  # made by an earlier call on the same machine
                print(f"{path}: already there", flush=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(path.name + ".part")
            t0 = time.perf_counter()
            synthetic(part, n)
            part.rename(path)
            print(f"{path}: {n} pairs in {time.perf_counter() - t0:.1f} s", flush=True)
        return
    report: dict = {"benchmark": "embedding training peak RSS vs corpus size",
                    "machine": machine(), "threads": args.threads,
                    "settings": {"model": "word", "units": args.units, "dim": 300, "batch": 100, "megabatch": 20,
                                 "buffer_pairs": 100_000, "train_seconds": args.train_seconds,
                                 "epochs": args.epochs},
                    "runs": []}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for n in args.sizes:
            data = (Path(args.data) if args.data else tmp) / f"pairs-{n}.parquet"
            t0 = time.perf_counter()
            made = None  # generated earlier (--data): not timed here
            if not data.exists():
                data.parent.mkdir(parents=True, exist_ok=True)
                synthetic(data, n)
                made = round(time.perf_counter() - t0, 1)
            child = CHILD.format(src=str(REPO / "src"), threads=args.threads, out=str(tmp / f"m{n}.pt"),
                                 pairs=str(data), train_seconds=args.train_seconds, peak=PEAK_RSS_MB,
                                 device=args.device, units=args.units, epochs=args.epochs)
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True,
                                    env={**os.environ, "PARAMILL_PROGRESS": "0"})
            with TreePeak(proc.pid) as tree:
                stdout, stderr = proc.communicate()
            done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
            wall = time.perf_counter() - t0
            if done.returncode:
                sys.exit(f"child failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
            result = json.loads(re.search(r"RESULT (.*)", done.stdout).group(1))
            phases = {name: [float(x) for x in m.groups()] for name, pattern in PHASES.items()
                      if (m := re.search(pattern, done.stderr))}
            # what the trainer itself spends on counting + id store per pair: more cores do
            # not shorten it, so it bounds the pairs/s of those two phases on any machine
            serial = sum(phases[p][1] for p in ("counting", "id_store") if p in phases)
            report["runs"].append({
                "pairs": n, "generate_seconds": made, "wall_seconds": round(wall, 1),
                "count_and_id_store_seconds": round(result["data_seconds"], 1),
                "count_and_id_store_pairs_per_second": round(n / result["data_seconds"]),
                # from train()'s log: the SentencePiece model (units sp), counting, id store
                "phase_seconds": {p: v[0] for p, v in phases.items()},
                "phase_trainer_cpu_seconds": {p: v[1] for p, v in phases.items()},
                "phase_workers_cpu_seconds": {p: v[2] for p, v in phases.items()},
                "count_and_id_store_trainer_bound_pairs_per_second": round(n / serial) if serial else None,
                "stopped_after_train_seconds": result["stopped"],
                # the steps' rate at this corpus size: buffers of 100,000 pairs read from the
                # id store as the steps go (one read ahead), from the first step to the stop
                "train_pairs": result["trained_pairs"],
                "train_pairs_per_second": round(result["trained_pairs"] / result["train_seconds"])
                if result["train_seconds"] else None,
                "peak_rss_mb": round(result["peak_rss_mb"]),
                # the trainer and its featurising workers together, sampled every 0.2 s
                "peak_tree_rss_mb": round(tree.mb),
                # the workers alone (their anonymous memory, together), and how many ran at once
                "peak_workers_rss_mb": round(tree.children_mb), "workers_seen": tree.children})
            for f in tmp.glob(f"m{n}.pt*"):
                subprocess.run(["rm", "-rf", str(f)])
            if not args.data:
                data.unlink()
    runs = report["runs"]
    for key in ("peak_rss_mb", "peak_tree_rss_mb"):
        report[key.replace("_mb", "_ratio_largest_to_smallest")] = round(runs[-1][key] / runs[0][key], 2)
    emit(report, args.out)


if __name__ == "__main__":
    main()
