#!/usr/bin/env python3
"""The pairs branch at scale: synthetic lines in the ParaNMT-50M layout streamed through
``pairs ingest`` -> the token stage -> length, overlap and BLEU scoring (reading the token
table) -> selection, as the pipeline runs them
(one process per job, shard by shard, each with the threads given), at 1M and 10M lines.

Reports, per size and stage: seconds, pairs/s and peak RSS of the stage's process; and the
ratio of peak RSS at the largest size to the smallest (goal: flat, within 1.5x).

    python benchmarks/pairs/pairs_scale.py --sizes 1000000 10000000 --out benchmarks/out/pairs_scale.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _report
from _report import PEAK_RSS_MB, emit  # noqa: E402

SRC = str(Path(__file__).resolve().parents[2] / "src")

STAGE = """
import json, resource, sys, time
sys.path.insert(0, {src!r})
start = time.perf_counter()
{code}
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "peak_rss_mb": {peak_rss}}}))
"""

INGEST = """
from paramill.pairs.ingest import PairCleanSettings, PairIngestSettings, ingest_pairs
from paramill.pairs.readers import PairCorpusSpec
spec = PairCorpusSpec.from_dict("synthetic", {{"format": "paranmt", "path": {path!r}}})
stats = ingest_pairs(spec, {out!r}, PairCleanSettings(),
                     PairIngestSettings(shard_size={shard_size}, batch_rows=200000))
"""

SCORE = """
from paramill import filters
from paramill.filters.base import score_shard
score_shard(filters.make({name!r}), {shard!r}, {out!r}, threads={threads}, batch_size=50000,
            tokens={tokens!r})
"""

TOKENS = """
from paramill.filters.tokens import count_shard
count_shard({shard!r}, {out!r}, threads={threads}, batch_size=50000)
"""

SELECT = """
import glob
from paramill.filters.select import SelectSettings, select
cands = sorted(glob.glob({cands!r}))
scores = sorted(glob.glob({scores!r}))
select(cands, scores, {out!r} + "/corpus.parquet", {out!r} + "/corpus.tsv",
       {out!r} + "/selection.json",
       SelectSettings(bounds={{"overlap_1": [0.1, 0.9], "bleu": [None, 60]}}, size=0),
       out_paranmt={out!r} + "/corpus.paranmt.txt")
"""


def write_synthetic(path: Path, n: int, seed: int = 11) -> None:
    """``reference \\t paraphrase \\t score`` lines: Zipf-ish words, 5-30 tokens, the paraphrase
    an edited copy (substitutions, a drop, a swap)."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(30000)]
    cum = []
    total = 0.0
    for i in range(len(vocab)):
        total += 1 / (i + 1)
        cum.append(total)
    with open(path, "w", encoding="utf-8") as fh:
        block = []
        for i in range(n):
            words = rng.choices(vocab, cum_weights=cum, k=rng.randint(5, 30))
            para = list(words)
            for _ in range(rng.randint(1, 4)):
                para[rng.randrange(len(para))] = vocab[rng.randrange(2000)]
            if len(para) > 6 and rng.random() < 0.5:
                del para[rng.randrange(len(para))]
            block.append(f"{' '.join(words)}\t{' '.join(para)}\t{rng.random():.4f}\n")
            if len(block) == 100000:
                fh.writelines(block)
                block.clear()
        fh.writelines(block)


def stage(code: str, threads: int) -> dict:
    env = {**os.environ, "PARAMILL_PROGRESS": "0", "OMP_NUM_THREADS": str(threads),
           "POLARS_MAX_THREADS": str(threads)}
    done = subprocess.run([sys.executable, "-c", STAGE.format(src=SRC, code=code, peak_rss=PEAK_RSS_MB)], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_size(n: int, work: Path, shard_size: int, threads: int) -> dict:
    src = work / f"synthetic-{n}.txt"
    start = time.perf_counter()
    write_synthetic(src, n)
    generated = time.perf_counter() - start
    pairs_dir = work / f"pairs-{n}" / "synthetic"  # the folder names the corpus
    result = {"lines": n, "input_mb": round(src.stat().st_size / 2**20, 1),
              "generate_seconds": round(generated, 1), "stages": {}}
    ingest = stage(INGEST.format(path=str(src), out=str(pairs_dir), shard_size=shard_size), threads)
    stats = json.loads((pairs_dir / "stats.json").read_text())
    kept = stats["kept"]
    result["kept"], result["rejected"] = kept, stats["rejected"]
    result["stages"]["pairs_ingest"] = {**ingest, "pairs_per_s": n / ingest["seconds"]}
    shards = sorted(pairs_dir.glob("shard-*.parquet"))
    tokens = {s: work / f"tokens-{n}" / "synthetic" / s.name for s in shards}
    for path in tokens.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    # as the pipeline runs them: the token stage once per shard, then each filter reading it
    for name in ("tokens", "length", "overlap", "bleu"):
        runs = [stage(TOKENS.format(shard=str(s), out=str(tokens[s]), threads=threads) if name == "tokens"
                      else SCORE.format(name=name, shard=str(s), tokens=str(tokens[s]),
                                        out=str(work / f"scores-{n}" / name / "synthetic" / s.name),
                                        threads=threads), threads) for s in shards]
        seconds = sum(r["seconds"] for r in runs)
        result["stages"][f"score_{name}"] = {
            "jobs": len(runs), "seconds": seconds, "pairs_per_s": kept / seconds,
            "peak_rss_mb": max(r["peak_rss_mb"] for r in runs)}
    sel = stage(SELECT.format(cands=str(pairs_dir / "shard-*.parquet"),
                              scores=str(work / f"scores-{n}" / "*" / "synthetic" / "*.parquet"),
                              out=str(work / f"release-{n}")), threads)
    result["stages"]["select"] = {**sel, "pairs_per_s": kept / sel["seconds"]}
    total = sum(s["seconds"] for s in result["stages"].values())
    result["total_seconds"] = total
    result["pairs_per_s_end_to_end"] = n / total
    result["peak_rss_mb"] = max(s["peak_rss_mb"] for s in result["stages"].values())
    for path in [src]:
        path.unlink()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--shard-size", type=int, default=500_000,
                        help="pairs.ingest.shard_size (one scoring job per shard and filter)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work", help="scratch folder (default: a temporary one)")
    parser.add_argument("--out", help="also write the JSON report here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        results = [run_size(n, Path(tmp), args.shard_size, args.threads) for n in args.sizes]
    report = {
        "benchmark": "pairs branch at scale (ParaNMT layout): ingest -> tokens -> length/overlap/BLEU -> select",
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version()},
        "threads": args.threads, "shard_size": args.shard_size, "sizes": results,
        "peak_rss_ratio_largest_to_smallest": round(
            results[-1]["peak_rss_mb"] / results[0]["peak_rss_mb"], 3) if len(results) > 1 else None,
        "per_stage_peak_rss_ratio": {
            name: round(results[-1]["stages"][name]["peak_rss_mb"]
                        / results[0]["stages"][name]["peak_rss_mb"], 3)
            for name in results[0]["stages"]} if len(results) > 1 else None,
    }
    emit(report, args.out)


if __name__ == "__main__":
    main()
