#!/usr/bin/env python3
"""ParaBank 2 sample-score-cluster throughput, each step on its own, and end to end.

Uses the translation models that `make run` trains on the sample (work/nmt/...; or give
your own). On N sources of a cleaned shard: sampling (5 constraint sets x 30 samples,
top-10; both call strategies), dual scoring (forward + backward score_batch) and clustering
(k=8 + reference) are timed separately in one process; then `sample_shard` end to end with
--threads worker processes. Reports candidates/s per step, seconds per source, and a
CzEng-size extrapolation (--sources, default 19.7M: ParaBank 2's filtered CzEng) in CPU
core-hours; GPU-hours = that divided by --gpu-speedup, an assumption you supply (no GPU
was measured here).

    python benchmarks/diverse.py --out benchmarks/out/diverse.json
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from _report import emit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import ctranslate2  # noqa: E402
import polars as pl  # noqa: E402

from paramill.nmt.cluster import cluster_units, kmedoids  # noqa: E402
from paramill.nmt.sampling import (  # noqa: E402
    SampleSettings,
    constraint_tokens,
    sample_set,
    sample_shard,
    suppressions,
)
from paramill.nmt.score import load_scorer, nll_per_token  # noqa: E402
from paramill.nmt.subwords import Segmenter  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shard", default=str(ROOT / "work/shards/grammar/shard-00000.parquet"))
    parser.add_argument("--fwd", default=str(ROOT / "work/nmt/cs-en/ct2"))
    parser.add_argument("--bwd", default=str(ROOT / "work/nmt/en-cs/ct2"))
    parser.add_argument("--cs-spm", default=str(ROOT / "work/nmt/spm/cs.model"))
    parser.add_argument("--en-spm", default=str(ROOT / "work/nmt/spm/en.model"))
    parser.add_argument("--n", type=int, default=100, help="sources")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sources", type=float, default=19_723_003, help="sources to extrapolate to")
    parser.add_argument("--gpu-speedup", type=float, default=None,
                        help="assumed speed of one GPU relative to --threads CPU cores")
    parser.add_argument("--out")
    args = parser.parse_args()
    os.environ["PARAMILL_PROGRESS"] = "0"
    rows = pl.read_parquet(args.shard).head(args.n)
    settings = SampleSettings()
    cs_seg, en_seg = Segmenter(args.cs_spm), Segmenter(args.en_spm)
    sources = cs_seg.encode(rows["cs"].to_list())
    report = {"benchmark": "ParaBank 2 sampling, dual scoring, clustering",
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
              "sources": len(sources), "settings": {"constraint_sets": 5, "samples": 30, "k": 10},
              "steps": {}}
    # sampling, both strategies, one process, one thread
    hyps_by_source = []
    for strategy in ("per_call", "replicate"):
        translator = ctranslate2.Translator(args.fwd, device="cpu", inter_threads=1, intra_threads=1)
        s = SampleSettings(strategy=strategy)
        start = time.perf_counter()
        count = 0
        for pid, src, ref in zip(rows["pair_id"], sources, rows["en"]):
            found = {}
            for tokens in constraint_tokens(ref, s.constraint_sets, s.constraint_fraction, s.seed, pid):
                for h in sample_set(translator, src, suppressions(tokens, en_seg), s):
                    count += 1
                    found[" ".join(h)] = h
            if strategy == "per_call":
                hyps_by_source.append(list(found.values()))
        seconds = time.perf_counter() - start
        report["steps"][f"sampling_{strategy}"] = {"candidates": count,
                                                   "candidates_per_second": round(count / seconds, 1)}
    # dual scoring of the unique candidates
    fwd, bwd = load_scorer(args.fwd, "cpu"), load_scorer(args.bwd, "cpu")
    start = time.perf_counter()
    scored = 0
    scores_by_source = []
    for src, hyps in zip(sources, hyps_by_source):
        f = nll_per_token(fwd, [src] * len(hyps), hyps, 64)
        b = nll_per_token(bwd, hyps, [src] * len(hyps), 64)
        scores_by_source.append([x + y for x, y in zip(f, b)])
        scored += len(hyps)
    seconds = time.perf_counter() - start
    report["steps"]["dual_scoring"] = {"candidates": scored, "candidates_per_second": round(scored / seconds, 1)}
    # clustering of the candidates under the threshold
    start = time.perf_counter()
    clustered = 0
    for ref, hyps, scores in zip(rows["en"], hyps_by_source, scores_by_source):
        kept = [h for h, sc in zip(hyps, scores) if sc <= settings.threshold]
        units = [cluster_units([p.lower() for p in h]) for h in kept]
        kmedoids(units, cluster_units(en_seg.encode([ref.lower()])[0]), settings.clusters)
        clustered += len(kept)
    seconds = time.perf_counter() - start
    report["steps"]["clustering"] = {"candidates": clustered,
                                     "candidates_per_second": round(clustered / seconds, 1)}
    # end to end with worker processes
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "shard.parquet"
        rows.write_parquet(small)
        start = time.perf_counter()
        stats = sample_shard(small, args.fwd, args.bwd, args.cs_spm, args.en_spm, Path(tmp) / "out.parquet",
                             SampleSettings(block=max(1, args.n // (2 * args.threads))), threads=args.threads)
        seconds = time.perf_counter() - start
    per_source = seconds / len(sources)
    report["end_to_end"] = {"threads": args.threads, "seconds": round(seconds, 2),
                            "seconds_per_source": round(per_source, 4),
                            "sources_per_second": round(len(sources) / seconds, 2), **stats}
    core_hours = per_source * args.threads * args.sources / 3600
    report["extrapolation"] = {"sources": args.sources, "cpu_core_hours": round(core_hours),
                               "note": "model size as measured here; a Transformer-base model "
                                       "costs more per candidate"}
    if args.gpu_speedup:
        report["extrapolation"]["gpu_hours_assuming_speedup"] = round(
            per_source * args.sources / 3600 / args.gpu_speedup)
    emit(report, args.out)


if __name__ == "__main__":
    main()
