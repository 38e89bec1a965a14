#!/usr/bin/env python3
"""Generate paramill's sample paraphrase-pair corpora from the sample bitext's grammar.

The grammar (scripts/make-sample-bitext.py) renders a Czech sentence in several correct
English ways; two different renderings of the same Czech sentence are a paraphrase pair.
This writes, into --out:

- ``grammar.paranmt.txt.gz``: ParaNMT-50M layout, ``reference \\t paraphrase \\t score``,
  with dirty lines (wrong column counts, a non-numeric score, exact and punctuation-only
  duplicates, text outside latin-1) so the reader and cleaning have work to do;
- ``refs.en`` and ``hyp.<system>.en``: the WMT layout, one reference file and two
  line-aligned "system outputs" (other renderings; one system copies some references).

Seeded: the same command writes the same bytes.

    python scripts/make-sample-pairs.py --out data/sample/pairs --seed 17
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import random
from collections import defaultdict
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "grammar", Path(__file__).with_name("make-sample-bitext.py"))
grammar = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(grammar)


def renderings(rng: random.Random, draws: int) -> list[list[str]]:
    """English renderings grouped by their Czech sentence (groups of two or more)."""
    by_cs: dict[str, set[str]] = defaultdict(set)
    for _ in range(draws):
        cs, en = grammar.sentence(rng)
        by_cs[cs].add(en)
    return [sorted(v) for _, v in sorted(by_cs.items()) if len(v) > 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="data/sample/pairs", help="output directory")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--pairs", type=int, default=2000, help="clean ParaNMT-layout pairs")
    parser.add_argument("--references", type=int, default=300, help="reference lines")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    groups = renderings(rng, 60000)
    rng.shuffle(groups)

    pairs = [(g[0], g[1]) for g in groups[: args.pairs]]
    lines = [f"{a}\t{b}\t{0.4 + 0.6 * rng.random():.4f}" for a, b in pairs]
    lines += [lines[i] for i in rng.sample(range(len(pairs)), 30)]  # exact duplicates
    lines += [f"{a.replace(' ', '  ', 1).replace(chr(39), chr(0x2019))}\t{b}\t0.9000"
              for a, b in rng.sample(pairs, 20)]  # duplicates once spaces and quotes are normal
    lines += [f"{a}\t{b}" for a, b in rng.sample(pairs, 5)]  # no score column
    lines += [f"{a}\t{b}\thigh" for a, b in rng.sample(pairs, 5)]  # a score that is no number
    lines += [f"{a[:-1]} for 20 \u20ac{a[-1]}\t{b}\t0.8000" for a, b in rng.sample(pairs, 5)]
    rng.shuffle(lines)
    with open(out / "grammar.paranmt.txt.gz", "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as fh:
        fh.write("".join(line + "\n" for line in lines).encode("utf-8"))

    rest = [g for g in groups[args.pairs:] if len(g) >= 3][: args.references]
    (out / "refs.en").write_text("".join(g[0] + "\n" for g in rest))
    (out / "hyp.system-a.en").write_text("".join(g[1] + "\n" for g in rest))
    (out / "hyp.system-b.en").write_text(
        "".join((g[0] if rng.random() < 0.2 else g[2]) + "\n" for g in rest))
    print(f"wrote {len(lines)} ParaNMT-layout lines and {len(rest)} references x 2 systems "
          f"to {out}")


if __name__ == "__main__":
    main()
