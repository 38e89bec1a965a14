#!/usr/bin/env python3
"""Does the identifier's cross-encoder gain from reading a pair both ways?

A pair has no order, but the cross-encoder reads ``[CLS] s1 [SEP] s2 [SEP]``: trained on the
URL corpus, where ``s1`` is always the news account's tweet, it may lean on the order. This
measures, on a held-out part of the Twitter URL corpus train split (the last ``--holdout``
of source tweets in file order, as ``benchmarks/paraid.py --holdout``; nothing of it reaches
training), the cross-encoder alone (its probability, not stacked with the overlap features):

- trained as given, or ``both_orders`` (each pair swapped in a seeded half of its steps:
  the same cost);
- each scored as given, reversed, and both ways (the mean of the two logits: twice the cost).

Each variant is fine-tuned from the same packaged weights on the same first
``--train-pairs`` pairs of the kept part, once per ``--seeds``; max F1, AUC and AP on the
held-out pairs; training seconds and scoring pairs/s.

    python benchmarks/cross_order.py [--train-pairs 12000] [--seeds 13 14] [--out F.json]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import SHARED, emit, machine  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from paramill import device  # noqa: E402
from paramill.twitter.identify import IdentifySettings, holdout, metrics, read_labelled  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url-corpus", default=str(SHARED / "twitter-url-corpus/castorini-twitterPPDB/train"),
                        help="the URL corpus train split, tokenised form (a.toks, b.toks, sim.txt)")
    parser.add_argument("--holdout", type=float, default=0.2, metavar="FRACTION",
                        help="the last FRACTION of source tweets, held out (default 0.2)")
    parser.add_argument("--train-pairs", type=int, default=12_000,
                        help="fine-tune on the first N labelled pairs of the kept part (0: all)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seeds", type=int, nargs="+", default=[IdentifySettings().seed])
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--out")
    args = parser.parse_args()
    if not 0 < args.holdout < 1:
        parser.error(f"--holdout: a fraction between 0 and 1, not {args.holdout}")
    device.limit_threads(args.threads)
    from paramill.twitter.cross import CrossEncoder, cross_state

    settings = IdentifySettings(model="cross", finetune_epochs=args.epochs)
    pairs, labels, _ = read_labelled(args.url_corpus, "toks", None)
    (train, y), (held, held_y) = holdout(pairs, labels, args.holdout)
    if args.train_pairs:
        train, y = train[:args.train_pairs], y[:args.train_pairs]
    swapped = [(b, a) for a, b in held]
    report = {"benchmark": "cross-encoder: pair order in training and scoring",
              "machine": machine(), "threads": args.threads, "device": device.pick("auto"),
              "sentence_encoder": settings.sentence_encoder,
              "settings": {"epochs": args.epochs, "lr": settings.finetune_lr,
                           "batch": settings.finetune_batch, "precision": settings.encoder_precision},
              "train": {"pairs": len(train), "positive": int(sum(y))},
              "held_out": {"fraction": args.holdout, "pairs": len(held), "positive": int(sum(held_y))},
              "runs": []}
    for seed in args.seeds:
        for both in (False, True):
            started = time.perf_counter()
            state = cross_state(settings.sentence_encoder, train, y, epochs=args.epochs,
                                lr=settings.finetune_lr, batch=settings.finetune_batch,
                                precision=settings.encoder_precision, seed=seed, both_orders=both,
                                desc=f"cross-encoder, seed {seed}, {'both orders' if both else 'as given'}")
            trained = time.perf_counter() - started
            encoder = CrossEncoder(settings.sentence_encoder, settings.encoder_batch,
                                   settings.encoder_precision, state)
            started = time.perf_counter()
            forward = encoder.logits(held)
            scoring = time.perf_counter() - started
            backward = encoder.logits(swapped)
            scores = {"given": forward, "reversed": backward, "both": (forward + backward) / 2}
            run = {"seed": seed, "trained": "both orders" if both else "as given",
                   "train_seconds": round(trained, 1),
                   "scoring_pairs_per_second": round(len(held) / scoring, 1),
                   "held_out": {name: metrics(held_y, 1 / (1 + np.exp(-logit)))
                                for name, logit in scores.items()}}
            report["runs"].append(run)
            print(f"seed {seed}, trained {run['trained']}: "
                  + ", ".join(f"{k} F1 {v['f1']:.4f} AUC {v['auc']:.4f}" for k, v in run["held_out"].items()),
                  file=sys.stderr)
    emit(report, args.out)


if __name__ == "__main__":
    main()
