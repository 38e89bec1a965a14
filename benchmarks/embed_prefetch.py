#!/usr/bin/env python3
"""Reading an epoch's buffers while the steps run, against reading each where the steps ask.

The real ``paramill.embed.train.train`` (WORD over SentencePiece, 300 dimensions, batch 100,
mega-batch 20, ``buffer_pairs`` 100,000) on synthetic pairs (``embed_scale.py``'s generator),
twice a round: as training runs (each buffer read, mapped and shuffled in a thread while the
one before trains: ``paramill.embed.data.prefetched``) and inline (each read in the training
loop, timed the same way). Each run reports its epochs' seconds, the seconds its steps waited
for a buffer (``buffer_wait_seconds``; inline, every buffer's reading) and epoch pairs/s; the
order of the two alternates round by round, and both must end with the same weights. On a
GPU the steps of a buffer take well under the CPU's seconds, so the share of reading grows:
run it there with ``--device cuda``.

    python benchmarks/embed_prefetch.py [--pairs 400000] [--epochs 2] [--rounds 2] [--device auto]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import REPO, emit, machine  # noqa: E402

sys.path.insert(0, str(REPO / "src"))


def inline(items, waited=None):
    """Each item made where it is asked for, the wait timed as :func:`prefetched` times it."""
    it = iter(items)
    while True:
        began = time.perf_counter()
        item = next(it, None)
        waited.seconds += time.perf_counter() - began
        if item is None:
            return
        yield item


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=400_000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--out")
    args = parser.parse_args()
    from paramill import device

    device.limit_threads(args.threads)
    import torch

    import paramill.embed.train as training
    from embed_scale import synthetic
    from paramill.embed.data import PairSource
    from paramill.embed.model import ModelSpec

    spec = ModelSpec(components=("word",), dim=300)
    settings = training.EmbedTrainSettings(epochs=args.epochs, batch_size=100, megabatch=20,
                                           buffer_pairs=100_000, device=args.device)
    real = training.prefetched
    runs = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        data = tmp / "pairs.parquet"
        synthetic(data, args.pairs)
        weights = {}
        for r in range(args.rounds):
            for mode in (("prefetch", "inline") if r % 2 else ("inline", "prefetch")):
                training.prefetched = real if mode == "prefetch" else inline
                out = tmp / f"{mode}-{r}.pt"
                summary = training.train(PairSource.from_files([str(data)]), out, spec, settings)
                runs.append({"round": r, "mode": mode, **{k: summary[k] for k in (
                    "pairs", "device", "epoch_seconds", "buffer_wait_seconds",
                    "epoch_pairs_per_second")}})
                print(runs[-1], file=sys.stderr, flush=True)
                weights[mode] = torch.load(out, weights_only=True)["state_dict"]
        training.prefetched = real
    same = all(torch.equal(weights["inline"][k], weights["prefetch"][k]) for k in weights["inline"])

    def mean(mode, key):
        values = [r[key] for r in runs if r["mode"] == mode]
        return round(sum(values) / len(values), 4)

    emit({"benchmark": "embedding training: buffers read ahead in a thread vs inline",
          "machine": machine(), "threads": args.threads,
          "settings": {"model": "word", "units": "sp", "dim": 300, "batch": 100, "megabatch": 20,
                       "buffer_pairs": 100_000, "pairs": args.pairs, "epochs": args.epochs},
          "runs": runs, "same_weights": same,
          "mean_buffer_wait_seconds": {m: mean(m, "buffer_wait_seconds") for m in ("inline", "prefetch")},
          "mean_epoch_pairs_per_second": {m: mean(m, "epoch_pairs_per_second")
                                          for m in ("inline", "prefetch")}}, args.out)


if __name__ == "__main__":
    main()
