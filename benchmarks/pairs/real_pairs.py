#!/usr/bin/env python3
"""The pairs branch on real data, end to end through Snakemake, no NMT:

- WMT21 cs-en: reference A against the 8 systems' outputs (8,000 reference/MT pairs,
  format ``references``);
- the Twitter URL corpus train positives (11,167 pairs; only the tokenised, lowercased
  release of the full train split is available, so it is read as ``tsv`` with a label);

scored (length, overlap, BLEU, KenLM, para-score), selected, WORD and TRIGRAM embeddings
trained and evaluated on STS Benchmark dev, the lexicon built and scored on SimLex-999.
Reports rows kept and rejected per reason, each score's mean per MT system (para-score and
BLEU side by side), STS dev per model, the lexicon's SimLex figures and the wall time.

    python benchmarks/pairs/real_pairs.py --out benchmarks/out/real_pairs.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _report
from _report import SHARED as DATA  # noqa: E402
from _report import copy_project, emit, twitter_positives  # noqa: E402


def config(data: Path, twitter_tsv: Path, epochs: int) -> str:
    wmt = data / "wmt21-newstest-cs-en"
    return json.dumps({
        "pairs": {"corpora": {
            # every system on every sentence: identical outputs of two systems stay two pairs
            "wmt21": {"format": "references", "reference": str(wmt / "newstest2021.cs-en.ref.A.en"),
                      "hypotheses": [str(wmt / "system-outputs" / "newstest2021.cs-en.hyp.*.en")],
                      "dedup": False},
            "twitter-url": {"format": "tsv", "path": str(twitter_tsv), "header": True,
                            "method": "twitter-url"}},
            "ingest": {"shard_size": 5000}},
        "filters": {"enabled": ["length", "overlap", "bleu", "kenlm", "parascore"],
                    "heldout": {"size": 2000}},
        "embed": {"model": {"dim": 300},
                  "models": {"word": {"components": ["word"]},
                             "trigram": {"components": ["trigram"]}},
                  "train": {"epochs": epochs, "batch_size": 100, "margin": 0.4,
                            "learning_rate": 0.001}},
        "evaluate": {"sts": [{"name": "sts-benchmark", "year": "dev", "format": "stsbenchmark",
                              "path": str(data / "stsbenchmark" / "sts-dev.csv")}]},
        "lexicon": {"min_count": 3, "simlex": str(data / "simlex-999" / "SimLex-999.txt")},
        "twitter": {"enabled": False},
        "resources": {"embed_train": {"threads": 2}, "parascore_model": {"threads": 2},
                      "score_parascore": {"threads": 2}},
    }, indent=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DATA), help="the shared data folder")
    parser.add_argument("--epochs", type=int, default=5, help="embedding training epochs")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--keep", help="keep the project in this folder (default: temporary)")
    parser.add_argument("--out", help="also write the JSON report here")
    args = parser.parse_args()
    data = Path(args.data)
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="real-pairs-"))
    copy_project(root)
    tweets = root / "twitter-url-train-positives.tsv"
    positives = twitter_positives(data, tweets)
    (root / "real.yaml").write_text(config(data, tweets, args.epochs))
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
           "PARAMILL_PROGRESS": "0"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "snakemake", "--cores", str(args.cores),
                           "--configfile", "real.yaml"], cwd=root, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"snakemake failed in {root}:\n{done.stderr[-5000:]}")
    results = root / "results"
    stats = json.loads((results / "pairs/stats.json").read_text())
    methods = json.loads((results / "pairs/scores_by_method.json").read_text())["methods"]
    selection = json.loads((results / "corpus/default/selection.json").read_text())
    sts = {m: json.loads((results / f"embed/{m}/sts.json").read_text()) for m in ("word", "trigram")}
    simlex = json.loads((results / "lexicon/simlex.json").read_text())
    timings = {}
    for bench in sorted((root / "logs/benchmarks").rglob("*.tsv")):
        lines = bench.read_text().splitlines()
        if len(lines) > 1:
            rule = bench.relative_to(root / "logs/benchmarks").parts[1].split(".")[0] \
                if len(bench.relative_to(root / "logs/benchmarks").parts) > 1 else bench.stem
            timings[rule] = round(timings.get(rule, 0.0) + float(lines[1].split("\t")[0]), 1)
    report = {
        "benchmark": "pairs branch on real data (WMT21 cs-en MT outputs, Twitter URL train positives)",
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version(), "cores_given": args.cores},
        "inputs": {"wmt21_systems": 8, "wmt21_references": 1000, "twitter_url_positives": positives},
        "wall_seconds": round(wall, 1),
        "job_seconds": timings,
        "rows": {c: {k: v[k] for k in ("rows_in", "kept", "rejected")}
                 for c, v in stats["corpora"].items()},
        "by_method": {m: {"candidates": v["candidates"],
                          **{c: v[c]["mean"] for c in ("parascore", "bleu", "kenlm_ppl",
                                                       "overlap_1") if c in v}}
                      for m, v in methods.items()},
        "selection_steps": selection["steps"],
        "sts_benchmark_dev": {m: [{k: r[k] for k in ("dataset", "year", "n", "pearson", "spearman")}
                                  for r in v["datasets"]] for m, v in sts.items()},
        "embedding_epochs": args.epochs,
        "simlex": simlex.get("results", simlex),
        "project": str(root),
    }
    emit(report, args.out)


if __name__ == "__main__":
    main()
