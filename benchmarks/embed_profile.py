#!/usr/bin/env python3
"""Where embedding training spends its time: cProfile of one epoch of ``paramill.embed.train``
on the first ``--pairs`` Twitter URL train positives (batch 100, mega-batch 20), reported
as the seconds in torch's LSTM forward, autograd's backward, the optimiser step, padding
(``Buffer.tensors``) and the hardest-negative search, against the total. Prints JSON.

    python benchmarks/embed_profile.py [--component blstm] [--pairs 3000] [--out ...]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import REPO, SHARED, emit, machine, twitter_positive_pairs  # noqa: E402

sys.path.insert(0, str(REPO / "src"))

#: (label, how cProfile names the function: a substring of "file:function", which time):
#: torch's C functions by their own time (Python called back from inside them, e.g. from
#: autograd, is not theirs), paramill's Python functions with what they call
PARTS = [("lstm_forward", "torch.lstm", "own"), ("backward", "run_backward", "own"),
         ("optimizer_step", "adam.py:step", "cumulative"), ("padding", "data.py:tensors", "cumulative"),
         ("hardest_negatives", "megabatch.py:hardest_negatives", "cumulative")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--component", default="blstm")
    parser.add_argument("--pairs", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    from paramill import device
    device.limit_threads(args.threads)
    from paramill.embed.model import ModelSpec
    from paramill.embed.train import EmbedTrainSettings, train

    pairs = [(a, b) for a, b in twitter_positive_pairs(SHARED) if a != b][:args.pairs]
    profile = cProfile.Profile()
    with tempfile.TemporaryDirectory() as tmp:
        profile.enable()
        train(pairs, Path(tmp) / "m.pt", ModelSpec(components=(args.component,), dim=300, hidden=150),
              EmbedTrainSettings(epochs=1, batch_size=100, megabatch=20, scramble_rate=0.0))
        profile.disable()
    stats = pstats.Stats(profile).stats  # (file, line, function) -> (cc, nc, tottime, cumtime, callers)
    total = sum(v[2] for v in stats.values())
    parts = {}
    for label, pattern, which in PARTS:
        column = 2 if which == "own" else 3
        parts[label] = round(sum(v[column] for (file, _, func), v in stats.items()
                                 if pattern in f"{Path(file).name}:{func}"), 2)
    emit({"benchmark": "where embedding training spends its time", "machine": machine(),
          "component": args.component, "pairs": len(pairs), "threads": args.threads,
          "total_seconds": round(total, 2), "seconds": parts,
          "share": {k: round(v / total, 3) for k, v in parts.items()}}, args.out)


if __name__ == "__main__":
    main()
