#!/usr/bin/env python3
"""Filter throughput on synthetic pairs: pairs/s per filter on N pairs (default 1M) in
100k-pair shards, one process per filter as in the pipeline (polars and torch use the
cores given by --threads), and peak RSS.

Length, overlap and BLEU are the cheap text filters (goal: >= 100k pairs/s together on 2
cores); KenLM and the classifier are reported separately, on a subset (default 200k) since
they need trained models (KenLM 3-gram on 40k held-out references; word-averaging
classifier, 2 epochs). BLEU is also timed against sacrebleu.sentence_bleu on the same
pairs (the reference tool), single process.

    python benchmarks/filters/filters.py --out benchmarks/out/filters.json
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

import pyarrow as pa
import pyarrow.parquet as pq
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _report
from _report import PEAK_RSS_MB, emit  # noqa: E402

SRC = Path(__file__).resolve().parents[2] / "src"
sys.path.insert(0, str(SRC))

from paramill.nmt.tables import CANDIDATES  # noqa: E402

RUN = """
import json, resource, sys, time
sys.path.insert(0, {src!r})
from paramill import filters
from paramill.filters.base import score_shard
from paramill.filters.tokens import count_shard
tokens = {tokens!r}
start = time.perf_counter()
rows = 0
if {name!r} == "tokens":  # the token stage: one table per shard, read by the filters after it
    for shard, table in zip({shards!r}, tokens):
        rows += count_shard(shard, table, threads={threads}, batch_size=20000)["rows"]
else:
    filt = filters.make({name!r}, **{options!r})
    for i, shard in enumerate({shards!r}):
        rows += score_shard(filt, shard, {out!r} + f"/{{i}}.parquet", threads={threads}, batch_size=20000,
                            tokens=tokens[i] if tokens else None)["rows"]
seconds = time.perf_counter() - start
print(json.dumps({{"rows": rows, "seconds": seconds, "peak_rss_mb": {peak_rss}}}))
"""


def synthetic(n: int, seed: int = 7) -> list[tuple[str, str]]:
    """Reference/candidate pairs: Zipf-ish words, 5-30 tokens, candidates with edits."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(20000)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    pairs = []
    pool = rng.choices(vocab, weights, k=n * 20)
    pos = 0
    for _ in range(n):
        k = rng.randint(5, 30)
        ref = pool[pos:pos + k]
        pos = (pos + k) % (len(pool) - 40)
        cand = list(ref)
        for _ in range(rng.randint(0, k // 2)):
            j = rng.randrange(len(cand))
            cand[j] = rng.choice(vocab[:2000])
        if rng.random() < 0.3:
            rng.shuffle(cand)
        pairs.append((" ".join(ref) + " .", " ".join(cand) + " ."))
    return pairs


def write_shards(pairs, root: Path, size: int) -> list[str]:
    shards = []
    for s in range(0, len(pairs), size):
        rows = [{"pair_id": f"p{s + i}", "candidate_id": f"p{s + i}:beam:1", "en_ref": r,
                 "candidate": c, "method": "beam", "rank": 1, "fwd_nll": 0.5, "bwd_nll": None,
                 "n_tokens": len(c.split()), "constraint_set": None, "cluster": None}
                for i, (r, c) in enumerate(pairs[s:s + size])]
        path = root / "candidates" / "bench" / f"shard-{s // size:05d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=CANDIDATES), path)
        shards.append(str(path))
    return shards


def run_filter(name, options, shards, threads, root: Path, tokens: list[str] | None = None) -> dict:
    out = root / ("scores-from-tokens" if tokens else "scores") / name
    out.mkdir(parents=True, exist_ok=True)
    code = RUN.format(src=str(SRC), name=name, options=options, shards=shards, out=str(out),
                      threads=threads, tokens=tokens, peak_rss=PEAK_RSS_MB)
    env = {**os.environ, "PARAMILL_PROGRESS": "0", "OMP_NUM_THREADS": str(threads),
           "POLARS_MAX_THREADS": str(threads)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["pairs_per_second"] = round(result["rows"] / result["seconds"])
    result["seconds"] = round(result["seconds"], 2)
    result["peak_rss_mb"] = round(result["peak_rss_mb"], 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--model-pairs", type=int, default=200_000,
                        help="pairs scored by KenLM and the classifier")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    os.environ["PARAMILL_PROGRESS"] = "0"  # training bars would flood the JSON output
    from paramill.filters.bleu import sentence_bleu
    from paramill.filters.classifier import ClassifierSettings, train_classifier
    from paramill.filters.kenlm import KenlmSettings, train_lm
    from paramill.text import tokenize

    pairs = synthetic(args.pairs)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shards = write_shards(pairs, root, 100_000)
        report = {"benchmark": "filter scoring throughput (synthetic pairs)",
                  "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                  "pairs": args.pairs, "threads": args.threads, "filters": {}}
        for name in ("length", "overlap", "bleu"):
            report["filters"][name] = run_filter(name, {}, shards, args.threads, root)
        cheap = sum(report["filters"][n]["seconds"] for n in ("length", "overlap", "bleu"))
        report["length_overlap_bleu_together_pairs_per_second"] = round(args.pairs / cheap)
        # as the pipeline runs them now: the token stage once per shard, then the three jobs
        # reading its table (same shards, same run)
        tables = [str(root / "tokens" / Path(s).name) for s in shards]
        (root / "tokens").mkdir()
        staged = {"tokens": run_filter("tokens", {}, shards, args.threads, root, tables)}
        for name in ("length", "overlap", "bleu"):
            staged[name] = run_filter(name, {}, shards, args.threads, root, tables)
        for name in ("length", "overlap", "bleu"):
            for i in range(len(shards)):  # the same scores as tokenising in the job
                plain = pq.read_table(root / "scores" / name / f"{i}.parquet")
                assert plain.equals(pq.read_table(root / "scores-from-tokens" / name / f"{i}.parquet")), name
        staged_seconds = sum(v["seconds"] for v in staged.values())
        report["with_token_stage"] = {
            "jobs": staged, "tokens_length_overlap_bleu_pairs_per_second": round(args.pairs / staged_seconds),
            "speedup_over_tokenising_in_each_job": round(cheap / staged_seconds, 2)}
        # model-based filters on a subset, models trained on held-out synthetic references
        subset = [s for s in shards][: max(1, args.model_pairs // 100_000)]
        held = synthetic(50_000, seed=11)
        lm = root / "lm.binary"
        start = time.perf_counter()
        train_lm([r for r, _ in held[:40_000]], lm, KenlmSettings())
        lm_train = time.perf_counter() - start
        report["filters"]["kenlm"] = {**run_filter("kenlm", {"model": str(lm)}, subset, 1, root),
                                      "train_seconds_40k": round(lm_train, 2)}
        clf = root / "clf.pt"
        data = [(r, 1.0) for r, _ in held[:20_000]] + [(c, 0.0) for _, c in held[:20_000]]
        start = time.perf_counter()
        train_classifier(data, data[:2000], data[-2000:], clf, ClassifierSettings(epochs=2))
        clf_train = time.perf_counter() - start
        report["filters"]["classifier"] = {**run_filter("classifier", {"model": str(clf)}, subset,
                                                        args.threads, root),
                                           "train_seconds_40k_sentences_2_epochs": round(clf_train, 2)}
        # reference tool: sacrebleu's sentence_bleu on the same pairs, single process
        import sacrebleu

        sample = pairs[:50_000]
        start = time.perf_counter()
        for ref, cand in sample:
            sacrebleu.sentence_bleu(cand, [ref], smooth_method="exp")
        ref_rate = len(sample) / (time.perf_counter() - start)
        start = time.perf_counter()
        for ref, cand in sample:
            sentence_bleu(tokenize(cand.lower()), tokenize(ref.lower()), "exp")
        own_rate = len(sample) / (time.perf_counter() - start)
        # the filter's own batch path, one thread, same pairs and smoothing
        import polars as pl

        from paramill import filters
        from paramill.filters.base import Batch

        frame = pl.DataFrame({"en_ref": [r for r, _ in sample], "candidate": [c for _, c in sample]})
        start = time.perf_counter()
        filters.make("bleu", method="exp").score(Batch(frame, threads=1))
        batch_rate = len(sample) / (time.perf_counter() - start)
        report["bleu_vs_sacrebleu_single_process"] = {
            "sacrebleu_pairs_per_second": round(ref_rate), "paramill_pair_by_pair_per_second": round(own_rate),
            "paramill_batch_one_thread_per_second": round(batch_rate),
            "ratio_pair_by_pair": round(own_rate / ref_rate, 2), "ratio_batch": round(batch_rate / ref_rate, 2)}
    emit(report, args.out)


if __name__ == "__main__":
    main()
