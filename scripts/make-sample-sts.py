#!/usr/bin/env python3
"""Generate paramill's sample STS-style data from the sample bitext's English phrase grammar.

Pairs get graded similarity by construction: 5 = the same content with other synonyms
(a paraphrase), 4 = one adverbial added or dropped, 3 = another object, 2 = the same
subject only, 1 = the same object only, 0 = nothing shared. Written in three of the
layouts paramill reads (score TSV, SentEval input/gold with some unscored pairs, and
STS Benchmark with stray extra fields). Seeded: the same command writes the same bytes.

    python scripts/make-sample-sts.py --out data/sample/sts --seed 17
"""

from __future__ import annotations

import argparse
import importlib.util
import random
from pathlib import Path

_spec = importlib.util.spec_from_file_location("grammar", Path(__file__).with_name("make-sample-bitext.py"))
grammar = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(grammar)  # type: ignore[union-attr]


def content(rng: random.Random) -> dict:
    verb = rng.randrange(len(grammar.VERBS))
    return {"subj": rng.choice(list(grammar.SUBJECTS)), "verb": verb,
            "obj": rng.choice(list(grammar.VERBS[verb][3])),
            "place": rng.choice(list(grammar.PLACE)) if rng.random() < 0.5 else None}


def render(c: dict, rng: random.Random) -> str:
    _, forms, progressive, objects = grammar.VERBS[c["verb"]]
    base, s3, ing = rng.choice(forms)
    verb = f"is {ing}" if progressive and ing and rng.random() < 0.4 else s3
    words = [rng.choice(grammar.SUBJECTS[c["subj"]]), verb, rng.choice(objects[c["obj"]])]
    if c["place"]:
        words.append(rng.choice(grammar.PLACE[c["place"]]))
    return grammar.cap(" ".join(words)) + "."


def pair(rng: random.Random) -> tuple[float, str, str]:
    a = content(rng)
    level = rng.choice([5, 4, 3, 2, 1, 0])
    b = dict(a)
    if level == 4:
        b["place"] = None if a["place"] else rng.choice(list(grammar.PLACE))
    elif level == 3:
        objects = [o for o in grammar.VERBS[a["verb"]][3] if o != a["obj"]]
        b["obj"] = rng.choice(objects)
    elif level < 3:
        for _ in range(10000):
            b = content(rng)
            if b["subj"] == a["subj"] or b["verb"] == a["verb"]:
                continue
            if level == 2:
                b["subj"] = a["subj"]
                break
            if level == 1 and a["obj"] in grammar.VERBS[b["verb"]][3]:
                b["obj"] = a["obj"]
                break
            if level == 0 and b["obj"] != a["obj"]:
                break
    return float(level), render(a, rng), render(b, rng)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="data/sample/sts")
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = [pair(rng) for _ in range(300)]
    (out / "sts-sample.tsv").write_text("".join(f"{s:.1f}\t{a}\t{b}\n" for s, a, b in rows))
    senteval = [pair(rng) for _ in range(150)]
    (out / "STS.input.grammar.txt").write_text("".join(f"{a}\t{b}\n" for _, a, b in senteval))
    (out / "STS.gs.grammar.txt").write_text(
        "".join(("" if i % 15 == 7 else f"{s:.1f}") + "\n" for i, (s, _, _) in enumerate(senteval)))
    bench = [pair(rng) for _ in range(200)]
    (out / "sts-dev.csv").write_text("".join(
        f"main-grammar\tsample\t2026dev\t{i:04d}\t{s:.3f}\t{a}\t{b}" + ("\tstray\textra" if i % 9 == 0 else "")
        + "\n" for i, (s, a, b) in enumerate(bench)))
    print(f"wrote {len(rows) + len(senteval) + len(bench)} STS pairs to {out}")


if __name__ == "__main__":
    main()
