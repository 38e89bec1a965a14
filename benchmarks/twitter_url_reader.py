"""The raw ``twitter-url`` reader on the Twitter URL corpus's own files, checked against the
labels of the independent tokenised release of the whole train split.

Reads ``Twitter_URL_Corpus_{train,test}_sample.txt`` (the raw layout, ``s1 \\t s2 \\t (n,6) \\t
url``) with the pair corpora's reader (``paramill.pairs.readers.read_pairs``, layout ``twitter-url``, ``keep: all``), counts lines per
outcome, and looks every labelled train-sample pair up in castorini's ``twitterPPDB/train``
(tokenised and lowercased, n == 3 removed, 0/1 labels): a pair matches when both sentences
agree letters and digits only, lowercased. Prints JSON.

    .venv/bin/python benchmarks/twitter_url_reader.py [--out benchmarks/out/twitter_url.json]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import SHARED, emit, machine  # noqa: E402

from paramill.pairs.readers import PairCorpusSpec, read_pairs  # noqa: E402


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def outcomes(path: Path) -> tuple[Counter, list]:
    counts: Counter[str] = Counter()
    labelled = []
    spec = PairCorpusSpec.from_dict("url", {"format": "twitter-url", "path": str(path),
                                            "keep": "all"})
    for row in read_pairs(spec):
        counts[row.reason or f"label {row.label}"] += 1
        if not row.reason:
            labelled.append(row)
    return counts, labelled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="also write the JSON report here")
    args = parser.parse_args()
    corpus = SHARED / "twitter-url-corpus"
    start = time.perf_counter()
    report: dict = {"machine": machine(), "files": {}}
    train = corpus / "castorini-twitterPPDB" / "train"
    released: dict[tuple[str, str], set[str]] = {}
    for a, b, label in zip((train / "a.toks").read_text(encoding="utf-8").splitlines(),
                           (train / "b.toks").read_text(encoding="utf-8").splitlines(),
                           (train / "sim.txt").read_text().split()):
        released.setdefault((_key(a), _key(b)), set()).add(label)
    for name in ("Twitter_URL_Corpus_train_sample.txt", "Twitter_URL_Corpus_test_sample.txt"):
        counts, labelled = outcomes(corpus / name)
        entry: dict = {"lines": sum(counts.values()), "outcomes": dict(sorted(counts.items()))}
        if "train" in name:
            agree = disagree = absent = 0
            for row in labelled:
                found = released.get((_key(row.en_ref), _key(row.candidate)))
                if found is None:
                    absent += 1
                elif found == {str(row.label)}:
                    agree += 1
                else:
                    disagree += 1
            entry["against_castorini_train_labels"] = {
                "labelled": len(labelled), "agree": agree, "disagree": disagree,
                "not_found": absent}
        report["files"][name] = entry
    report["seconds"] = round(time.perf_counter() - start, 2)
    emit(report, args.out)


if __name__ == "__main__":
    main()
