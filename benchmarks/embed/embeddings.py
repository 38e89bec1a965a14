#!/usr/bin/env python3
"""Real-data check of the embeddings: models trained on Twitter URL corpus paraphrases.

Trains each variant on the positive pairs (label 1, identical pairs left out) of the
Twitter URL corpus train split (tokenised distribution: a.toks, b.toks, sim.txt) with one
set of settings (300 dimensions, margin 0.4, batch 100, mega-batch 20, Adam 0.001, seed 13;
15 epochs unless ``--epochs``) and reports, per variant, Pearson/Spearman x100 on the STS
Benchmark dev set, training pairs/s and seconds per epoch; plus the untrained WORD model
(random initialisation), so the gain is visible.

Variants, each naming its units (a variant never inherits the default's): ``word`` (WORD
over words), ``word-sp`` (WORD over SentencePiece units that paramill trains on the
training sentences: unigram, 50,000 soft limit, as the authors' at-scale code),
``trigram``, ``word-trigram`` (concatenated, word units), ``gran-sp`` (GRAN over
SentencePiece units; recurrent); and, only when named, ``lstm-sp`` and ``blstm-sp`` (the
other recurrent models, hidden 300 as the spec's default). ``--pairs N`` trains on the
first N pairs (quick speed comparisons; its STS figures are not the full runs').

    python benchmarks/embed/embeddings.py [--variants word word-sp ...] [--epochs 15] \\
        [--recurrent-epochs N] [--device auto|cpu|cuda] --out benchmarks/out/embeddings.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _report import REPO, SHARED, emit, machine, twitter_positive_pairs  # noqa: E402

sys.path.insert(0, str(REPO / "src"))

from paramill.run import device  # noqa: E402
from paramill.embed.model import RNG, ModelSpec, build, load_model  # noqa: E402
from paramill.embed.train import EmbedTrainSettings, skips_linked, train  # noqa: E402
from paramill.evaluate.sts import read, score  # noqa: E402

VARIANTS = {  # units named in every variant: the default (sp) must not change what a row means
    "word": {"components": ("word",), "units": "word"},
    "word-sp": {"components": ("word",), "units": "sp"},
    "trigram": {"components": ("trigram",), "units": "word"},
    "word-trigram": {"components": ("word", "trigram"), "units": "word"},
    "gran-sp": {"components": ("gran",), "units": "sp"},
    "lstm-sp": {"components": ("lstm",), "units": "sp"},
    "blstm-sp": {"components": ("blstm",), "units": "sp"},
}
DEFAULT = ["word", "word-sp", "trigram", "word-trigram", "gran-sp"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=DEFAULT)
    parser.add_argument("--sts", default=str(SHARED / "stsbenchmark/sts-dev.csv"))
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--recurrent-epochs", type=int,
                        help="epochs of recurrent variants (default: --epochs); said in the row")
    parser.add_argument("--megabatch", type=int, default=20)
    parser.add_argument("--recurrent-pass-rows", type=int,
                        help="rows a recurrent model takes in one pass of a step (default 0: "
                             "embed.train's, the batch size, four passes, and one pass in a "
                             "--recurrent-graph row; 400: one; the same arithmetic, scrambles "
                             "included); said in the report")
    parser.add_argument("--pairs", type=int, default=0,
                        help="train on the first N pairs (0: all); said in the report")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="where the models train (auto: cuda when a GPU is visible)")
    parser.add_argument("--cuda-graph", action="store_true",
                        help="also train each averaging variant with embed.train.cuda_graph "
                             "(a row named VARIANT+graph; on CUDA only)")
    parser.add_argument("--recurrent-graph", action="store_true",
                        help="also train each recurrent variant with "
                             "embed.train.recurrent_cuda_graph (a row named VARIANT+graph; on "
                             "CUDA only; one pass a step: --recurrent-pass-rows 0 or 400)")
    parser.add_argument("--linked-negatives", choices=["auto", "keep", "skip"], default="auto",
                        help="embed.train.linked_negatives (auto: skip for recurrent variants, "
                             "keep, the papers' rule, for averaging ones); said in each row")
    parser.add_argument("--tf32", action="store_true",
                        help="train with embed.train.tf32 (CUDA's matrix products outside cuDNN "
                             "in TF32; rows named VARIANT+tf32)")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.recurrent_graph and 0 < (args.recurrent_pass_rows or 0) < 400:
        parser.error("--recurrent-graph replays one pass a step: give --recurrent-pass-rows 400 (or none)")
    device.limit_threads(args.threads)
    pairs = [(x, y) for x, y in twitter_positive_pairs(SHARED) if x != y]
    pairs = pairs[:args.pairs] if args.pairs else pairs
    sts = read("stsbenchmark-dev", "dev", "stsbenchmark", args.sts)
    # the untrained baseline's random vectors seeded as training seeds its models, so the row
    # is the same number every run
    RNG(EmbedTrainSettings().seed).seed_all()
    untrained = score(build(ModelSpec(components=("word",), dim=300), [s for p in pairs for s in p]), sts)
    rows = []
    report = {"benchmark": "embedding variants trained on Twitter URL corpus positives",
              "machine": {**machine(), "device": device.pick(args.device), "threads": args.threads},
              "train_pairs": len(pairs), "megabatch": args.megabatch,
              "recurrent_pass_rows": args.recurrent_pass_rows, "tf32": args.tf32,
              "sts_benchmark_dev_n": untrained["n"],
              "untrained_word": {"pearson": untrained["pearson"], "spearman": untrained["spearman"]},
              "variants": rows, "complete": False}
    # averaging variants first (and their graph rows), the slow recurrent ones last
    averaging = [name for name in args.variants if not ModelSpec(**VARIANTS[name]).recurrent]
    runs = [(name, False) for name in averaging]
    runs += [(name, True) for name in averaging if args.cuda_graph]
    runs += [(name, graph) for name in args.variants if name not in averaging
             for graph in (False, True)[:1 + args.recurrent_graph]]
    with tempfile.TemporaryDirectory() as tmp:
        for name, graph in runs:
            spec = ModelSpec(dim=300, **VARIANTS[name])
            epochs = args.recurrent_epochs if spec.recurrent and args.recurrent_epochs else args.epochs
            label = name + ("+graph" if graph else "") + ("+tf32" if args.tf32 else "")
            settings = EmbedTrainSettings(epochs=epochs, megabatch=args.megabatch,
                                          device=args.device, cuda_graph=graph,
                                          recurrent_cuda_graph=graph and spec.recurrent,
                                          linked_negatives=args.linked_negatives,
                                          recurrent_pass_rows=args.recurrent_pass_rows or 0,
                                          tf32=args.tf32)
            summary = train(pairs, Path(tmp) / f"{label}.pt", spec, settings)
            model = load_model(Path(tmp) / f"{label}.pt")
            result = score(model, sts)
            rows.append({"variant": label,
                         "components": list(spec.components), "units": spec.units,
                         "cuda_graph": summary["cuda_graph"],
                         "graph_recordings": summary["graph_recordings"],
                         "cuda_peak_mb": summary.get("cuda_peak_mb"),
                         "linked_negatives": "skip" if skips_linked(settings, spec) else "keep",
                         "vocabulary": {u: len(v) for u, v in model.vocabs.items()},
                         "epochs": epochs, "pearson": result["pearson"],
                         "spearman": result["spearman"],
                         "pairs_per_second": summary["pairs_per_second"],
                         # the epochs without their checkpoints: what a large corpus runs at
                         "epoch_pairs_per_second": summary["epoch_pairs_per_second"],
                         # of the epochs' seconds, those the steps waited for a buffer's reading
                         "buffer_wait_seconds": summary["buffer_wait_seconds"],
                         "seconds_per_epoch": round(summary["seconds"] / epochs, 1)})
            print(rows[-1], file=sys.stderr)
            if args.out:  # a run stopped at its time limit keeps the variants it finished
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    report["complete"] = True
    emit(report, args.out)


if __name__ == "__main__":
    main()
