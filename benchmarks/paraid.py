#!/usr/bin/env python3
"""Real-data check of the tweet paraphrase identifier: max F1 (with its precision and
recall) of logistic regression on the 18 overlap features and of the extended model, by
5-fold cross-validation on the Twitter URL corpus train split (castorini tokenised form)
and on PIT-2015 dev. Lan et al. 2017 report LR F1 0.683 on the URL corpus test set.

    python benchmarks/paraid.py --out benchmarks/out/paraid.json
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

from _report import emit  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from paramill.twitter.identify import IdentifySettings, cross_validate, read_labelled  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url-corpus", default=str(SHARED / "twitter-url-corpus/castorini-twitterPPDB/train"))
    parser.add_argument("--pit", default=str(SHARED / "pit-2015/dev.data"))
    parser.add_argument("--embed-model", help="a paramill embedding model for the cosine feature")
    parser.add_argument("--out")
    args = parser.parse_args()
    encoder = None
    if args.embed_model:
        from paramill.embed.model import load_model

        encoder = load_model(args.embed_model)
    settings = IdentifySettings()
    report = {"benchmark": "paraphrase identification, 5-fold cross-validation",
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
              "cosine_feature": bool(encoder), "datasets": []}
    for name, path, fmt in (("twitter-url-corpus train", args.url_corpus, "toks"),
                            ("pit-2015 dev", args.pit, "pit2015")):
        pairs, labels, dropped = read_labelled(path, fmt)
        start = time.perf_counter()
        lr = cross_validate(pairs, labels, False, settings)
        ext = cross_validate(pairs, labels, True, settings, encoder=encoder)
        report["datasets"].append({"name": name, "pairs": len(pairs), "positive": sum(labels),
                                   "dropped": dropped, "lr": lr, "extended": ext,
                                   "seconds": round(time.perf_counter() - start, 1)})
    emit(report, args.out)


if __name__ == "__main__":
    main()
