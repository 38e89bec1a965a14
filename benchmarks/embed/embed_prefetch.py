#!/usr/bin/env python3
"""Reading an epoch's buffers while the steps run, against reading each where the steps ask.

The real ``paramill.embed.train.train`` (by default WORD over SentencePiece, 300 dimensions,
batch 100, mega-batch 20, ``buffer_pairs`` 100,000) on synthetic pairs (``embed_scale.py``'s
generator), twice a round: as training runs (each buffer read, mapped and shuffled in a
thread while the one before trains, the next epoch's first while the last of the one before
does: ``paramill.embed.data.prefetched``) and inline (each read in the training loop, timed
the same way). Each run reports its epochs' seconds, the seconds its steps waited for a
buffer (``buffer_wait_seconds``; inline, every buffer's reading), those seconds taken off
(``steps_seconds``: what the steps took while, read ahead, a thread read beside them) and
epoch pairs/s; the order of the two alternates round by round, and both must end with the
same weights (else the script exits 1). On a GPU the steps of a buffer take well under the
CPU's seconds, so the share of reading grows: run it there with ``--device cuda``.
``--twitter`` trains on the Twitter URL corpus's 11,167 train positives instead (one buffer
an epoch, the embedding benchmarks' corpus; ``--model trigram`` for TRIGRAM over words):
whether a thread reading the next epoch beside the steps slows them (Python's lock).

    python benchmarks/embed/embed_prefetch.py [--pairs 400000] [--epochs 2] [--rounds 2] [--device auto]
        [--model word|trigram] [--twitter]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _report import REPO, SHARED, emit, machine, twitter_positives  # noqa: E402

sys.path.insert(0, str(REPO / "src"))


def inline(items, waited=None):
    """Each item made where it is asked for, the wait timed as :func:`prefetched` times it;
    every item passed on, the ``None`` that ends each epoch too (until 2026-12-01 this ended at
    the first ``None``: since da052ba's read-ahead across epochs, inline runs trained their
    first epoch only, and reported the others' rate as that of no steps)."""
    it, done = iter(items), object()
    while True:
        began = time.perf_counter()
        item = next(it, done)
        waited.seconds += time.perf_counter() - began
        if item is done:
            return
        yield item


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=400_000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--model", choices=["word", "trigram"], default="word",
                        help="word: WORD over SentencePiece (default); trigram: TRIGRAM over words")
    parser.add_argument("--twitter", action="store_true",
                        help="the Twitter URL corpus's train positives (one buffer an epoch), not --pairs synthetic ones")
    parser.add_argument("--out")
    args = parser.parse_args()
    from paramill.run import device

    device.limit_threads(args.threads)
    import torch

    import paramill.embed.train as training
    from embed_scale import synthetic
    from paramill.embed.data import PairSource
    from paramill.embed.model import ModelSpec

    spec = (ModelSpec(components=("trigram",), units="word", dim=300) if args.model == "trigram"
            else ModelSpec(components=("word",), dim=300))
    settings = training.EmbedTrainSettings(epochs=args.epochs, batch_size=100, megabatch=20,
                                           buffer_pairs=100_000, device=args.device)
    real = training.prefetched
    runs = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        data = tmp / ("pairs.tsv" if args.twitter else "pairs.parquet")
        if args.twitter:  # identical pairs are dropped as training reads them
            twitter_positives(SHARED, data)
        else:
            synthetic(data, args.pairs)
        weights = {}
        for r in range(args.rounds):
            for mode in (("prefetch", "inline") if r % 2 else ("inline", "prefetch")):
                training.prefetched = real if mode == "prefetch" else inline
                out = tmp / f"{mode}-{r}.pt"
                summary = training.train(PairSource.from_files([str(data)]), out, spec, settings)
                runs.append({"round": r, "mode": mode, **{k: summary[k] for k in (
                    "pairs", "device", "epoch_seconds", "buffer_wait_seconds",
                    "epoch_pairs_per_second")},
                    "steps_seconds": round(sum(summary["epoch_seconds"]) - summary["buffer_wait_seconds"], 6)})
                print(runs[-1], file=sys.stderr, flush=True)
                weights[mode] = torch.load(out, weights_only=True)["state_dict"]
        training.prefetched = real
    same = all(torch.equal(weights["inline"][k], weights["prefetch"][k]) for k in weights["inline"])

    def mean(mode, key):
        values = [r[key] for r in runs if r["mode"] == mode]
        return round(sum(values) / len(values), 4)

    emit({"benchmark": "embedding training: buffers read ahead in a thread vs inline",
          "machine": machine(), "threads": args.threads,
          "settings": {"model": args.model, "units": spec.units, "dim": 300, "batch": 100,
                       "megabatch": 20, "buffer_pairs": 100_000,
                       "pairs": runs[0]["pairs"], "data": "twitter" if args.twitter else "synthetic",
                       "epochs": args.epochs},
          "runs": runs, "same_weights": same,
          **{f"mean_{key}": {m: mean(m, key) for m in ("inline", "prefetch")}
             for key in ("buffer_wait_seconds", "steps_seconds", "epoch_pairs_per_second")}}, args.out)
    if not same:
        sys.exit("embed_prefetch: the inline and read-ahead runs ended with other weights")


if __name__ == "__main__":
    main()
