#!/usr/bin/env python3
"""Does the acceptance threshold keep its precision on pairs with another share of
paraphrases? The identifier is trained as the pipeline trains it (``train_identifier``: the
threshold for ``target_precision`` chosen on grouped out-of-fold scores) on the first four
fifths of a labelled set's source tweets, and the held-out last fifth is scored (as
``benchmarks/twitter/paraid.py --holdout 0.2``); the held-out fifth's share of paraphrases differs
from training's. Each model is trained twice: with the threshold chosen at the training
data's share (``expected_share: null``, the default) and at the held-out fifth's true share
(``expected_share``, what a user who labelled a sample of their pairs would give). Reported:
the precision and recall that each threshold gives on the held-out fifth.

    python benchmarks/twitter/paraid_share.py --out benchmarks/records/paraid_share-cpu.json
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _report
from _report import REPO, SHARED, emit, machine  # noqa: E402

sys.path.insert(0, str(REPO / "src"))

from paramill.run import device  # noqa: E402
from paramill.twitter.identify import (  # noqa: E402
    IdentifySettings,
    LabelledData,
    holdout,
    read_labelled,
    train_identifier,
)


def write_toks(directory: Path, pairs, labels) -> LabelledData:
    directory.mkdir(parents=True)
    (directory / "a.toks").write_text("".join(a + "\n" for a, _ in pairs))
    (directory / "b.toks").write_text("".join(b + "\n" for _, b in pairs))
    (directory / "sim.txt").write_text("".join(f"{y}\n" for y in labels))
    return LabelledData(path=str(directory), format="toks")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url-corpus", default=str(SHARED / "twitter-url-corpus/castorini-twitterPPDB/train"))
    parser.add_argument("--pit", default=str(SHARED / "pit-2015/dev.data"))
    parser.add_argument("--datasets", nargs="+", default=["url", "pit"], choices=["url", "pit"])
    parser.add_argument("--models", nargs="+", default=["extended", "encoder"],
                        choices=["lr", "extended", "encoder"])
    parser.add_argument("--target", type=float, default=IdentifySettings().target_precision)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args()
    device.limit_threads(args.threads)
    sets = {"url": (args.url_corpus, "toks"), "pit": (args.pit, "pit2015")}
    report = {"benchmark": "the acceptance threshold's precision on a held-out fifth with another "
                           "share of paraphrases, chosen at the training share and at the "
                           "held-out share", "machine": machine(), "threads": args.threads,
              "target_precision": args.target, "holdout": 0.2, "datasets": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for key in args.datasets:
            pairs, labels, _ = read_labelled(*sets[key])
            (kp, ky), (hp, hy) = holdout(pairs, labels, 0.2)
            kept = write_toks(Path(tmp) / key / "kept", kp, ky)
            held = write_toks(Path(tmp) / key / "held", hp, hy)
            share = round(sum(hy) / len(hy), 4)
            row = report["datasets"][key] = {"kept_pairs": len(kp), "kept_share": round(sum(ky) / len(ky), 4),
                                             "held_pairs": len(hp), "held_share": share, "models": {}}
            for model in args.models:
                for label, expected in (("training share", None), ("held-out share", share)):
                    settings = IdentifySettings(model=model, target_precision=args.target,
                                                expected_share=expected)
                    out = Path(tmp) / key / f"{model}-{expected}"
                    result = train_identifier([kept], [held], out.with_suffix(".npz"),
                                              out.with_suffix(".json"), settings)
                    got = result["evaluations"][1]
                    row["models"].setdefault(model, {})[label] = {
                        "expected_share": expected, "threshold": result["threshold"]["threshold"],
                        "held_out_at_threshold": got["at_threshold"], "held_out_max_f1": got[model]["f1"]}
                    print(key, model, label, got["at_threshold"], file=sys.stderr)
    emit(report, args.out)


if __name__ == "__main__":
    main()
