#!/usr/bin/env python3
"""Real-data check of the embeddings: WORD trained on Twitter URL corpus paraphrases.

Trains a WORD model (ParaNMT settings, 300 dims) on the positive pairs (label 1) of the
Twitter URL corpus train split (tokenised distribution: a.toks, b.toks, sim.txt) and
reports Pearson/Spearman x100 on the STS Benchmark dev set, training pairs/s, and the same
figures for the untrained model (random initialisation) so the gain is visible.

    python benchmarks/embeddings.py --out benchmarks/out/embeddings.json
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

from _report import emit  # noqa: E402  (benchmarks/ is on sys.path when run)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from paramill import device  # noqa: E402
from paramill.embed.model import ModelSpec, build  # noqa: E402
from paramill.embed.train import TrainSettings, train  # noqa: E402
from paramill.evaluate.sts import read, score  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", default=str(SHARED / "twitter-url-corpus/castorini-twitterPPDB/train"))
    parser.add_argument("--sts", default=str(SHARED / "stsbenchmark/sts-dev.csv"))
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--out")
    args = parser.parse_args()
    train_dir = Path(args.train)
    a = (train_dir / "a.toks").read_text().splitlines()
    b = (train_dir / "b.toks").read_text().splitlines()
    labels = (train_dir / "sim.txt").read_text().splitlines()
    pairs = [(x, y) for x, y, s in zip(a, b, labels) if s.strip() == "1" and x != y]
    sts = read("stsbenchmark-dev", "dev", "stsbenchmark", args.sts)
    spec = ModelSpec(components=("word",), dim=300)
    untrained = build(spec, [s for p in pairs for s in p])
    before = score(untrained, sts)
    with tempfile.TemporaryDirectory() as tmp:
        summary = train(pairs, Path(tmp) / "word.pt", spec, TrainSettings(epochs=args.epochs))
        from paramill.embed.model import load_model

        after = score(load_model(Path(tmp) / "word.pt"), sts)
    report = {
        "benchmark": "WORD embeddings trained on Twitter URL corpus positives",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "device": device.pick("auto")},
        "train_pairs": len(pairs), "epochs": args.epochs,
        "training_pairs_per_second": summary["pairs_per_second"],
        "sts_benchmark_dev": {"n": after["n"], "skipped": after["skipped"],
                              "trained": {"pearson": after["pearson"], "spearman": after["spearman"]},
                              "untrained": {"pearson": before["pearson"], "spearman": before["spearman"]}},
        "loss_by_epoch": [round(h["loss"], 4) for h in summary["history"]],
    }
    emit(report, args.out)


if __name__ == "__main__":
    main()
