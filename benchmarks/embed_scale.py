#!/usr/bin/env python3
"""Peak memory of embedding training from 1M to 10M synthetic pairs (flat: within 1.2x?).

For each size, a Parquet file of synthetic pairs (``s1``/``s2``; 5-25 words from a 20,000-word
Zipf-like vocabulary, the paraphrase a shuffled, partly replaced copy) is written in chunks,
then a child process runs the real ``paramill.embed.train.train`` on it (WORD, 300 dims,
batch 100, mega-batch 20, ``buffer_pairs`` 100,000): the whole counting pass and id store,
then training steps until ``--train-seconds`` after the id store is complete, when the child
stops the run (SIGALRM) and reports its own peak RSS (VmHWM). The parent also samples the
peak of the child and its featurising workers together (``peak_tree_rss_mb``, every 0.2 s:
what a SLURM job's memory limit counts). Training memory does not depend on how far an
epoch has gone (one buffer at a time), so stopping it early measures the same peak; a full
epoch of 10M pairs at the measured rate would take over an hour here.

    python benchmarks/embed_scale.py [--sizes 1000000 10000000] [--out benchmarks/out/embed_scale.json]
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
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import PEAK_RSS_MB, REPO, TreePeak, emit, machine  # noqa: E402

CHILD = """
import json, signal, sys, threading, time
from pathlib import Path
sys.path.insert(0, {src!r})
from paramill import device
device.limit_threads({threads})
from paramill.embed.data import PairSource
from paramill.embed.model import ModelSpec
from paramill.embed.train import EmbedTrainSettings, train

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
          EmbedTrainSettings(epochs=1, batch_size=100, megabatch=20, buffer_pairs=100000,
                        device={device!r}))
    stopped = False
except Stop:
    stopped = True
finally:
    signal.setitimer(signal.ITIMER_REAL, 0)
print("RESULT", json.dumps({{"data_seconds": marks["store_ready"] - start, "stopped": stopped,
                            "peak_rss_mb": {peak}}}))
"""


#: the data phases as ``paramill.embed.train.train`` logs them
PHASES = {"sentencepiece": r"SentencePiece model trained in ([0-9.]+) s",
          "counting": r"units counted in ([0-9.]+) s",
          "id_store": r"id store of \d+ pairs ready in ([0-9.]+) s"}


def synthetic(path: Path, n: int, seed: int = 0, chunk: int = 500_000) -> None:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(20_000)])
    p = 1.0 / np.arange(1, len(vocab) + 1)
    p /= p.sum()
    writer = None
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        lengths = rng.integers(5, 26, size=m)
        words = rng.choice(len(vocab), size=int(lengths.sum()), p=p)
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        s1, s2 = [], []
        for i in range(m):
            w = words[bounds[i]:bounds[i + 1]]
            s1.append(" ".join(vocab[w]))
            v = w.copy()
            rng.shuffle(v[: max(1, len(v) // 3)])
            v[rng.random(len(v)) < 0.2] = rng.integers(0, len(vocab))
            s2.append(" ".join(vocab[v]))
        table = pa.table({"s1": s1, "s2": s2})
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
    parser.add_argument("--out")
    args = parser.parse_args()
    report: dict = {"benchmark": "embedding training peak RSS vs corpus size",
                    "machine": machine(), "threads": args.threads,
                    "settings": {"model": "word", "units": args.units, "dim": 300, "batch": 100, "megabatch": 20,
                                 "buffer_pairs": 100_000, "train_seconds": args.train_seconds},
                    "runs": []}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for n in args.sizes:
            data = tmp / f"pairs-{n}.parquet"
            t0 = time.perf_counter()
            synthetic(data, n)
            made = time.perf_counter() - t0
            child = CHILD.format(src=str(REPO / "src"), threads=args.threads, out=str(tmp / f"m{n}.pt"),
                                 pairs=str(data), train_seconds=args.train_seconds, peak=PEAK_RSS_MB,
                                 device=args.device, units=args.units)
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
            phases = {name: float(m.group(1)) for name, pattern in PHASES.items()
                      if (m := re.search(pattern, done.stderr))}
            report["runs"].append({
                "pairs": n, "generate_seconds": round(made, 1), "wall_seconds": round(wall, 1),
                "count_and_id_store_seconds": round(result["data_seconds"], 1),
                "count_and_id_store_pairs_per_second": round(n / result["data_seconds"]),
                "phase_seconds": phases,  # from train()'s log: the SentencePiece model (units sp), counting, id store
                "stopped_after_train_seconds": result["stopped"],
                "peak_rss_mb": round(result["peak_rss_mb"]),
                # the trainer and its featurising workers together, sampled every 0.2 s
                "peak_tree_rss_mb": round(tree.mb),
                # the workers alone (their anonymous memory, together), and how many ran at once
                "peak_workers_rss_mb": round(tree.children_mb), "workers_seen": tree.children})
            for f in tmp.glob(f"m{n}.pt*"):
                subprocess.run(["rm", "-rf", str(f)])
            data.unlink()
    runs = report["runs"]
    for key in ("peak_rss_mb", "peak_tree_rss_mb"):
        report[key.replace("_mb", "_ratio_largest_to_smallest")] = round(runs[-1][key] / runs[0][key], 2)
    emit(report, args.out)


if __name__ == "__main__":
    main()
