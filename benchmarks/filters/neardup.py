#!/usr/bin/env python3
"""The near-duplicate step (paramill.text.neardup): what it catches, how fast, in how much
memory.

quality: real pairs (each WMT21 cs-en reference with one system's English output; Tatoeba's
English sentence with the reference as its own pair for short text), each beside
  - an edit: the same pair with one word of one side replaced by a word of another pair
    (must be caught), and
  - a reorder: the same words, each side's words shuffled (different sentences of shared
    words: must not be caught),
the share caught, by the shingle size and the Jaccard threshold, from the exact Jaccard of
the shingle sets and from the marks NearDuplicates gives (MinHash, LSH, the check).

scale: pairs per second and peak RSS of a child process that adds N synthetic pairs (12-word
sentences over a 30,000-word vocabulary; 5% of them an earlier pair with one word changed)
and marks them, at --sizes (default 1M and 10M) with --threads (default 2): memory must
not grow with N beyond the marks (2 bytes a pair). The time is adding and marking, not
making the synthetic text.

reference: datasketch's MinHash (the library's update_batch, 128 permutations) on the same
shingles, pairs per second on one core, against paramill's signatures on one core.

    python benchmarks/filters/neardup.py --out benchmarks/records/neardup-cpu.json
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _report
from _report import PEAK_RSS_MB, SHARED, emit, machine  # noqa: E402

SRC = Path(__file__).resolve().parents[2] / "src"
sys.path.insert(0, str(SRC))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from paramill.text.neardup import NEAR, NearDuplicates, shingle_hashes  # noqa: E402


def real_pairs() -> list[tuple[str, str]]:
    wmt = SHARED / "wmt21-newstest-cs-en"
    refs = (wmt / "newstest2021.cs-en.ref.A.en").read_text().splitlines()
    system = sorted((wmt / "system-outputs").glob("*.en"))[0].read_text().splitlines()
    tat = (SHARED / "tatoeba-ces-eng" / "tatoeba.ces-eng.eng").read_text().splitlines()
    pairs = [(r, s) for r, s in zip(refs, system) if r.strip() and s.strip()]
    pairs += [(t, t.rstrip(".!?") + " .") for t in tat if len(t.split()) >= 4]
    return pairs


def edit(pair: tuple[str, str], rng: random.Random, words: list[str]) -> tuple[str, str]:
    side = rng.randrange(2)
    toks = pair[side].split()
    toks[rng.randrange(len(toks))] = rng.choice(words)
    return (" ".join(toks), pair[1]) if side == 0 else (pair[0], " ".join(toks))


def reorder(pair: tuple[str, str], rng: random.Random) -> tuple[str, str]:
    out = []
    for side in pair:
        toks = side.split()
        for _ in range(10):
            rng.shuffle(toks)
            if " ".join(toks) != side:
                break
        out.append(" ".join(toks))
    return out[0], out[1]


def jaccard(a: tuple[str, str], b: tuple[str, str], ngram: int) -> float:
    sets = []
    for pair in (a, b):
        h, _ = shingle_hashes(pl.Series([pair[0]]), pl.Series([pair[1]]), ngram)
        sets.append(set(h.tolist()))
    return len(sets[0] & sets[1]) / len(sets[0] | sets[1])


def caught_by_marks(originals, others, threshold, ngram) -> float:
    """Share of ``others`` marked NEAR when each follows its original."""
    left = [x for o, t in zip(originals, others) for x in (o[0], t[0])]
    right = [x for o, t in zip(originals, others) for x in (o[1], t[1])]
    with tempfile.TemporaryDirectory() as work:
        near = NearDuplicates(work, threshold, ngram)
        near.add(pl.Series(left), pl.Series(right))
        marks = np.zeros(len(left), dtype=np.uint8)
        near.mark(marks)
    return float((marks[1::2] == NEAR).mean())


def quality(thresholds, ngrams, seed: int = 5) -> dict:
    rng = random.Random(seed)
    pairs = [p for p in real_pairs() if min(len(p[0].split()), len(p[1].split())) >= 4]
    words = sorted({w for p in pairs for s in p for w in s.split() if w.isalpha()})
    edits = [edit(p, rng, words) for p in pairs]
    reorders = [reorder(p, rng) for p in pairs]
    out = {"pairs": len(pairs), "by_ngram": {}}
    for n in ngrams:
        je = np.array([jaccard(p, e, n) for p, e in zip(pairs, edits)])
        jr = np.array([jaccard(p, r, n) for p, r in zip(pairs, reorders)])
        rows = {}
        for t in thresholds:
            rows[str(t)] = {"edits_caught_exact": round(float((je >= t).mean()), 4),
                            "reorders_caught_exact": round(float((jr >= t).mean()), 4),
                            "edits_caught": round(caught_by_marks(pairs, edits, t, n), 4),
                            "reorders_caught": round(caught_by_marks(pairs, reorders, t, n), 4)}
        out["by_ngram"][str(n)] = {"edit_jaccard_median": round(float(np.median(je)), 3),
                                   "reorder_jaccard_median": round(float(np.median(jr)), 3),
                                   "thresholds": rows}
    return out


CHILD = """
import sys, time, tempfile
sys.path.insert(0, {src!r})
import numpy as np, polars as pl
from paramill.text.neardup import NearDuplicates, NEAR
n, threads, batch = {n}, {threads}, 65536
rng = np.random.default_rng(3)
vocab = pl.Series([f"w{{i}}" for i in range(30000)])
seconds = 0.0  # adding and marking; not making the synthetic pairs
with tempfile.TemporaryDirectory(dir={scratch!r}) as work:
    near = NearDuplicates(work, {threshold}, {ngram}, threads=threads)
    done = 0
    while done < n:
        m = min(batch, n - done)
        ids = rng.integers(0, 30000, size=(m, 24))
        copy = rng.random(m) < 0.05  # an earlier row of the batch, one word changed
        src = rng.integers(0, m, size=m)
        ids[copy] = ids[src[copy]]
        ids[copy, rng.integers(0, 24, size=int(copy.sum()))] = rng.integers(0, 30000, size=int(copy.sum()))
        words = vocab.gather(ids.reshape(-1)).to_numpy().reshape(m, 24)
        left = pl.Series([" ".join(r) for r in words[:, :12]])
        right = pl.Series([" ".join(r) for r in words[:, 12:]])
        start = time.perf_counter()
        near.add(left, right)
        seconds += time.perf_counter() - start
        done += m
    start = time.perf_counter()
    marks = np.zeros(n, dtype=np.uint8)
    found = near.mark(marks)
    seconds += time.perf_counter() - start
import json
print(json.dumps({{"pairs": n, "seconds": round(seconds, 1), "pairs_per_s": round(n / seconds),
                  "near_duplicates": found, "peak_rss_mb": round({peak_rss})}}))
"""


def scale(sizes, threads, threshold, ngram, scratch) -> list[dict]:
    out = []
    for n in sizes:
        code = CHILD.format(src=str(SRC), n=n, threads=threads, threshold=threshold, ngram=ngram,
                            scratch=scratch, peak_rss=PEAK_RSS_MB)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(proc.stderr[-3000:])
        out.append(json.loads(proc.stdout))
        print(out[-1], file=sys.stderr)
    return out


def reference(n: int = 20000) -> dict:
    """datasketch's MinHash against paramill's signatures, one core, same shingles."""
    from importlib import metadata

    from paramill.text.neardup import signatures

    pairs = real_pairs()
    pairs = (pairs * (n // len(pairs) + 1))[:n]
    left, right = pl.Series([p[0] for p in pairs]), pl.Series([p[1] for p in pairs])
    start = time.perf_counter()
    hashes, rows = shingle_hashes(left, right, 2)
    signatures(hashes, rows, n, threads=1)
    ours = time.perf_counter() - start
    try:
        from datasketch import MinHash
    except ImportError as exc:
        return {"paramill_pairs_per_s": round(n / ours), "datasketch": f"not installed: {exc}"}
    per_row = np.split(hashes, np.flatnonzero(np.r_[False, rows[1:] != rows[:-1]]))
    start = time.perf_counter()
    for shingles in per_row:  # datasketch hashes bytes itself (SHA-1): give it the shingles' bytes
        m = MinHash(num_perm=128, seed=1)
        m.update_batch([int(x).to_bytes(8, "little") for x in shingles])
    theirs = time.perf_counter() - start
    return {"pairs": n, "paramill_pairs_per_s": round(n / ours),
            "datasketch_pairs_per_s": round(n / theirs), "datasketch": metadata.version("datasketch"),
            "speedup": round(theirs / ours, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1_000_000, 10_000_000])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--threshold", type=float, default=0.7)
    ap.add_argument("--ngram", type=int, default=2)
    ap.add_argument("--thresholds", type=float, nargs="*", default=[0.6, 0.7, 0.8])
    ap.add_argument("--ngrams", type=int, nargs="*", default=[1, 2, 3])
    ap.add_argument("--scratch", default=tempfile.gettempdir())
    ap.add_argument("--skip", nargs="*", default=[], choices=["quality", "scale", "reference"])
    ap.add_argument("--out")
    args = ap.parse_args()
    report = {"machine": machine(), "threshold": args.threshold, "ngram": args.ngram}
    if "quality" not in args.skip:
        report["quality"] = quality(args.thresholds, args.ngrams)
    if "reference" not in args.skip:
        report["reference"] = reference()
    if "scale" not in args.skip:
        runs = scale(args.sizes, args.threads, args.threshold, args.ngram, args.scratch)
        report["scale"] = {"threads": args.threads, "runs": runs}
        if len(runs) > 1:
            report["scale"]["peak_rss_ratio"] = round(runs[-1]["peak_rss_mb"] / runs[0]["peak_rss_mb"], 3)
    emit(report, args.out)


if __name__ == "__main__":
    main()
