#!/usr/bin/env python3
"""Throughput and peak memory of ingest + clean on synthetic CzEng-style bitext.

Generates N synthetic pairs (CzEng 1.x plain-text format, gzip, ~3% exact duplicates,
~2% dirty lines), then runs `paramill ingest` and `paramill clean` each in a fresh
process and measures wall time and peak RSS (from the kernel's rusage of that process).
Prints one JSON object. Targets (issue "1 · Foundation"): >= 1M pairs/minute on 2 cores;
peak RSS at 10M no more than 1.5x that at 1M.

    python benchmarks/bitext/clean.py --sizes 1000000 10000000 --out benchmarks/out/clean.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _report
from _report import emit  # noqa: E402  (benchmarks/ is on sys.path when run)

CS_WORDS = ("muž žena dům pes kočka město řeka kniha dopis auto vlak práce škola strom "
            "čte píše vidí kupuje hledá potřebuje opravuje vaří dnes ráno večer doma "
            "rychle pomalu velký malý nový starý dobrý krásný").split()
EN_WORDS = ("man woman house dog cat city river book letter car train work school tree "
            "reads writes sees buys looks needs repairs cooks today morning evening home "
            "quickly slowly big small new old good beautiful the a in at on").split()


def generate(path: Path, n: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    recent: list[str] = []
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as fh:
        for i in range(n):
            r = rng.random()
            if r < 0.03 and recent:
                body = rng.choice(recent)  # exact duplicate
            elif r < 0.04:
                body = "\t" + " ".join(rng.choices(EN_WORDS, k=8)).capitalize() + "."  # empty cs
            elif r < 0.05:
                body = " ".join(rng.choices(CS_WORDS, k=3)) + ".\t" + " ".join(
                    rng.choices(EN_WORDS, k=30)) + "."  # length ratio
            else:
                k = rng.randint(4, 22)
                cs = " ".join(rng.choices(CS_WORDS, k=k)).capitalize() + "."
                en = " ".join(rng.choices(EN_WORDS, k=k + rng.randint(0, 4))).capitalize() + "."
                body = f"{cs}\t{en}"
                if len(recent) < 5000:
                    recent.append(body)
                else:
                    recent[rng.randrange(5000)] = body
            fh.write(f"b-{i}\t0.9\t{body}\n")


def measure(cmd: list[str]) -> dict:
    env = {**os.environ, "PARAMILL_PROGRESS": "0"}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err}")
    return {"seconds": round(seconds, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}


def run_size(n: int, work: Path, shard_size: int) -> dict:
    src = work / f"synthetic-{n}.tsv.gz"
    t0 = time.perf_counter()
    generate(src, n)
    gen_s = time.perf_counter() - t0
    paramill = [sys.executable, "-m", "paramill.cli"]
    settings = json.dumps({"shard_size": shard_size, "batch_rows": 50000})
    ingest = measure([*paramill, "bitext", "ingest", "--corpus", "syn", "--spec",
                      json.dumps({"format": "czeng1", "path": str(src)}), "--settings", settings, "--out", str(work / "ingest")])
    clean = measure([*paramill, "bitext", "clean", "--corpus", "syn", "--ingested", str(work / "ingest"),
                     "--shards", str(work / "shards"), "--rejected", str(work / "rej.parquet"),
                     "--keys", str(work / "keys.parquet"), "--stats", str(work / "stats.json"),
                     "--ingest-settings", settings])
    stats = json.loads((work / "stats.json").read_text())
    total = ingest["seconds"] + clean["seconds"]
    for p in (work / "ingest", work / "shards"):
        shutil.rmtree(p)
    src.unlink()
    return {
        "pairs": n,
        "generate_seconds": round(gen_s, 1),
        "ingest": ingest,
        "clean": clean,
        "kept": stats["kept"],
        "rejected": stats["rejected"],
        "pairs_per_second": round(n / total),
        "pairs_per_minute": round(60 * n / total),
        "peak_rss_mb": max(ingest["peak_rss_mb"], clean["peak_rss_mb"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--shard-size", type=int, default=500_000)
    parser.add_argument("--out", help="also write the JSON here")
    parser.add_argument("--tmp", help="scratch directory (default: system temp)")
    args = parser.parse_args()
    results = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix="paramill-bench-", dir=args.tmp) as tmp:
            results.append(run_size(n, Path(tmp), args.shard_size))
            print(json.dumps(results[-1]), file=sys.stderr)
    report = {
        "benchmark": "ingest+clean",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "runs": results,
    }
    if len(results) >= 2:
        report["rss_ratio_largest_to_smallest"] = round(
            results[-1]["peak_rss_mb"] / results[0]["peak_rss_mb"], 3)
    emit(report, args.out)


if __name__ == "__main__":
    main()
