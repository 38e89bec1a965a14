#!/usr/bin/env python3
"""Candidate features for the identifier's default model (``extended``): the 22 extended
features of before alone, then with each candidate group added, under the same logistic
regression.

Candidates:
- ``idf``: unigram overlap weighted by inverse document frequency, precision, recall and F1
  (adopted after this measurement: ``twitter.identify.idf_overlap``, on by default; the
  columns here are the package's, :func:`paramill.twitter.identify.idf_overlap`). The
  document frequencies are counted on the training sentences only (without labels): on
  each cross-validation fold's training part, on the kept part for the holdout, so nothing of
  the sentences scored reaches them.
- ``char``: character 3- and 4-gram overlap of the lower-cased words, precision, recall, F1.
- ``numbers``: the two sides' tokens with digits share none; only one side has any.
- ``unmatched``: the IDF mass of each side's words the other side lacks.

Reported per data set and variant: max F1 of grouped 5-fold cross-validation (folds by source
tweet) and of the later-fifth holdout (every pair of the last fifth of source tweets; as
``benchmarks/paraid.py --holdout 0.2``). Both are development figures on train and dev data.

    python benchmarks/paraid_features.py --out benchmarks/records/paraid_features-cpu.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from _report import SHARED, emit, machine  # noqa: E402  (benchmarks/ is on sys.path when run)

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from paramill import formats  # noqa: E402
from paramill.twitter import identify  # noqa: E402
from paramill.twitter.identify.featurise import (  # noqa: E402
    DocumentFrequencies,
    features,
    idf_overlap,
    prf,
    word_sets,
    words,
)

GROUPS = {"char": slice(0, 6), "numbers": slice(6, 8), "unmatched": slice(8, 10)}
VARIANTS = {"extended": [], "+idf": ["idf"], "+idf+char": ["idf", "char"],
            "+all": ["idf", "char", "numbers", "unmatched"]}


def candidates(a: str, b: str, idf) -> list[float]:
    """The groups after ``idf`` (whose columns :func:`matrix` takes from the package)."""
    wa, wb = words(a), words(b)
    sa, sb = set(wa), set(wb)
    out = []
    ca, cb = list(" ".join(wa)), list(" ".join(wb))
    for n in (3, 4):  # the n-gram overlap of the baseline features, over characters
        out += prf(ca, cb, n)
    da = {w for w in sa if any(c.isdigit() for c in w)}
    db = {w for w in sb if any(c.isdigit() for c in w)}
    out += [float(bool(da) and bool(db) and not da & db), float(bool(da) != bool(db))]
    return out + [sum(map(idf, sa - sb)), sum(map(idf, sb - sa))]


def matrix(base: np.ndarray, pairs, train_rows, variant: str) -> np.ndarray:
    if not VARIANTS[variant]:
        return base
    df = DocumentFrequencies.count(s for i in train_rows for s in pairs[i])
    extra = np.asarray([candidates(a, b, df.weight) for a, b in pairs])
    columns = {"idf": idf_overlap(word_sets(pairs), df)} | {g: extra[:, cut] for g, cut in GROUPS.items()}
    return np.hstack([base] + [columns[g] for g in VARIANTS[variant]])


def measure(pairs, labels, settings) -> dict:
    y, groups = np.asarray(labels), identify.source_groups(pairs)
    base = features(pairs, extended=True)  # the 22 of before; no embedding model: cosine 0
    cut = int(round((int(groups.max()) + 1) * 0.8))
    kept, held = np.where(groups < cut)[0], np.where(groups >= cut)[0]
    out = {}
    for variant in VARIANTS:
        started = time.perf_counter()
        scores = np.zeros(len(y))
        for train, test in identify.grouped_folds(y, groups, settings):
            x = matrix(base, pairs, train, variant)
            scores[test] = identify.fit(x[train], y[train].tolist(), settings).predict_proba(x[test])[:, 1]
        x = matrix(base, pairs, kept, variant)
        held_scores = identify.fit(x[kept], y[kept].tolist(), settings).predict_proba(x[held])[:, 1]
        out[variant] = {"cv": identify.max_f1(y, scores), "holdout": identify.max_f1(y[held], held_scores),
                        "seconds": round(time.perf_counter() - started, 1)}
        print(variant, out[variant]["cv"]["f1"], out[variant]["holdout"]["f1"], file=sys.stderr)
    return {"pairs": len(pairs), "positive": int(y.sum()), "holdout_pairs": len(held), "variants": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url-corpus", default=str(SHARED / "twitter-url-corpus/castorini-twitterPPDB/train"))
    parser.add_argument("--pit", default=str(SHARED / "pit-2015/dev.data"))
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args()
    settings = identify.IdentifySettings()
    sets = {"twitter-url-corpus train": (args.url_corpus, "toks"), "pit-2015 dev": (args.pit, "pit2015")}
    report = {"benchmark": "candidate features of the identifier's extended model (LR)",
              "machine": machine(), "folds": settings.folds, "holdout": 0.2, "data": {}}
    for name, (path, fmt) in sets.items():
        pairs, labels, _ = formats.reader("labelled", fmt)(path)
        report["data"][name] = measure(pairs, labels, settings)
    emit(report, args.out)


if __name__ == "__main__":
    main()
