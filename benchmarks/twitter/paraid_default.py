#!/usr/bin/env python3
"""The identifier's default model, chosen by measurement: each candidate trained as the
pipeline trains it (``paramill twitter identify``: 5-fold grouped cross-validation on the
training set, the threshold for 80% precision, every model refitted on all of it), on the
Twitter URL corpus train split, and scored on a set from elsewhere that nothing of training
saw: PIT-2015 dev (other tweets, other annotators, other guidelines). Per candidate: the
training command's wall seconds and peak memory (the process and its children), the report's
cross-validation and PIT-2015 dev metrics (max F1 with P/R, AUC, AP, and what the chosen
threshold gives on PIT-2015 dev), and the trained identifier's scoring pairs/s on the PIT
pairs (loaded from its file, as ``twitter month`` does).

Candidates: ``extended`` (overlap, character and IDF features: seconds, no sentence encoder)
and ``encoder`` with the packaged all-MiniLM-L6-v2 whole and as trained
(``encoder_layers: 0``, ``finetune_epochs: 0``: no fine-tuning, nothing to cross-fit), with
its token alignment (``token_alignment``, the default) and without (``encoder-cosine``). Students and fine-tuning cost half an hour to hours on
CPU (``benchmarks/paraid.py``); the cross-encoder hours.

    python benchmarks/twitter/paraid_default.py --out benchmarks/records/paraid_default-cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _report
from _report import REPO, SHARED, TreePeak, emit, machine  # noqa: E402

sys.path.insert(0, str(REPO / "src"))

from paramill.twitter.identify import Identifier, read_labelled  # noqa: E402

#: the child: `paramill --threads T twitter identify --out O --report R --settings S`'s work
CHILD = """import json, sys
from paramill.run import device
from paramill.twitter.identify import IdentifySettings, train_identifier
device.limit_threads(int(sys.argv[1]))
settings = IdentifySettings.from_dict(json.loads(sys.argv[4]))
train_identifier(list(settings.train), list(settings.evaluate), sys.argv[2], sys.argv[3], settings)
"""

CANDIDATES = {
    "extended": {"model": "extended"},
    "encoder": {"model": "encoder", "encoder_layers": 0, "finetune_epochs": 0},
    "encoder-cosine": {"model": "encoder", "encoder_layers": 0, "finetune_epochs": 0,
                       "token_alignment": False},
}


def train(name: str, extra: dict, train_set: dict, evaluate: dict, threads: int, work: Path,
          precision: str) -> dict:
    settings = {**extra, "train": [train_set], "evaluate": [evaluate], "encoder_precision": precision}
    out, report = work / f"{name}.npz", work / f"{name}.json"
    # what `paramill twitter identify` runs, in a child of its own (its peak memory), without the
    # command line's imports of every stage (polars): the GPU machine's suite carries none
    command = [sys.executable, "-c", CHILD, str(threads), str(out), str(report), json.dumps(settings)]
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with TreePeak(proc.pid) as peak:
        _, err = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"{name}: paramill twitter identify failed:\n{err[-3000:]}")
    seconds = time.perf_counter() - started
    result = json.loads(report.read_text())
    cv, held = result["evaluations"]
    model = extra["model"]
    return {"settings": extra, "train_seconds": round(seconds, 1), "peak_rss_mb": round(peak.mb),
            "cv": cv[model], "cv_at_threshold": cv["at_threshold"],
            "pit_dev": held[model], "pit_dev_at_threshold": held["at_threshold"],
            "threshold": result["threshold"]["threshold"],
            "sentence_encoder": result.get("sentence_encoder"), "model_file": out}


def scoring(path: Path, pairs: list[tuple[str, str]], repeats: int) -> float:
    """Pairs/s of the saved identifier on ``pairs`` (best of ``repeats``; a fresh load each
    time, the encoder's loading included, as a month's job pays it)."""
    best = 0.0
    for _ in range(repeats):
        started = time.perf_counter()
        Identifier.load(path).score(pairs)
        best = max(best, len(pairs) / (time.perf_counter() - started))
    return round(best, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url-corpus", default=str(SHARED / "twitter-url-corpus/castorini-twitterPPDB/train"))
    parser.add_argument("--pit", default=str(SHARED / "pit-2015/dev.data"))
    parser.add_argument("--models", nargs="+", default=list(CANDIDATES), choices=list(CANDIDATES))
    parser.add_argument("--precision", default="auto", choices=["auto", "float32", "bfloat16"],
                        help="twitter.identify.encoder_precision of the encoder candidate")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--repeats", type=int, default=2, help="scoring runs; the best is kept")
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args()
    from paramill.run import device

    device.limit_threads(args.threads)
    train_set = {"path": args.url_corpus, "format": "toks"}
    evaluate = {"path": args.pit, "format": "pit2015"}
    pit_pairs = read_labelled(args.pit, "pit2015")[0]
    report = {"benchmark": "the identifier's default model: trained on the URL corpus train split "
                           "as the pipeline trains it, scored on PIT-2015 dev",
              "machine": machine(), "threads": args.threads, "train": train_set,
              "scored_on": {**evaluate, "pairs": len(pit_pairs)}, "candidates": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            row = train(name, CANDIDATES[name], train_set, evaluate, args.threads, Path(tmp),
                        args.precision)
            row["scoring_pairs_per_s"] = scoring(row.pop("model_file"), pit_pairs, args.repeats)
            report["candidates"][name] = row
            print(name, row["cv"]["f1"], row["pit_dev"]["f1"], row["train_seconds"],
                  row["scoring_pairs_per_s"], file=sys.stderr)
    emit(report, args.out)


if __name__ == "__main__":
    main()
