#!/usr/bin/env python3
"""The paraphrase lexicon: SimLex-999 Spearman on a real corpus, and time and peak memory at
scale.

1. Real data: the positive pairs (label 1) of the Twitter URL corpus train split
   (castorini tokenised form) as the corpus (no paraphrase-score filter; both sides <= 30
   tokens), lexicon with min_count 10 (and 2, the corpus being small), Spearman x100 of
   cross and adjusted PMI on SimLex-999 with the pair coverage. ParaNMT-50M's adjusted PMI
   reached 61.59 (50M pairs).
2. Scale: synthetic pairs (Zipf vocabulary of 50k words, 5-30 tokens) at the sizes given
   (default 1M and 5M), each counted in a fresh process; wall time, peak RSS and the peak
   disk use of the spill (with the corpus file).

    python benchmarks/lexicon/lexicon.py --out benchmarks/out/lexicon.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _report
from _report import PEAK_RSS_MB, emit  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
SHARED = ROOT.parent / "shared" / "data"

GENERATE = r"""
import os, numpy as np, pyarrow as pa, pyarrow.parquet as pq
n, path = {n}, {path!r}
rng = np.random.default_rng(5)
vocab = np.array([f"w{{i}}" for i in range(50000)])
p = 1.0 / np.arange(1, 50001); p /= p.sum()
writer = None
for start in range(0, n, 500000):
    m = min(500000, n - start)
    lens = rng.integers(5, 31, size=m)
    words = rng.choice(vocab, size=int(lens.sum()), p=p)
    cuts = np.cumsum(lens)[:-1]
    s1 = [" ".join(x) for x in np.split(words, cuts)]
    swap = rng.choice(vocab, size=int(lens.sum()), p=p)
    mask = rng.random(int(lens.sum())) < 0.3
    s2w = np.where(mask, swap, words)
    s2 = [" ".join(x) for x in np.split(s2w, cuts)]
    table = pa.table({{"s1": s1, "s2": s2}})
    writer = writer or pq.ParquetWriter(path, table.schema)
    writer.write_table(table)
writer.close()
"""

# the count runs in its own process: peak RSS is the lexicon's alone; a thread samples
# the size of the spill directory for the peak disk use
SCALE = r"""
import json, os, resource, sys, threading, time
sys.path.insert(0, {src!r})
from paramill.lexicon.pmi import LexiconSettings, count_and_score
root = {root!r}
peak_disk, peak_files, done = [0], [0], threading.Event()
def watch():
    while not done.wait(2.0):
        size = count = 0
        for d, _, files in os.walk(root):
            count += len(files)
            for f in files:
                try:
                    size += os.path.getsize(os.path.join(d, f))
                except OSError:
                    pass
        peak_disk[0] = max(peak_disk[0], size)
        peak_files[0] = max(peak_files[0], count)
threading.Thread(target=watch, daemon=True).start()
start = time.perf_counter()
stats = count_and_score([os.path.join(root, "corpus.parquet")], os.path.join(root, "lex.tsv"),
                        os.path.join(root, "nb.tsv"), os.path.join(root, "stats.json"),
                        LexiconSettings(min_parascore=None, **{settings}))
seconds = time.perf_counter() - start
done.set()
peak = {peak_rss}
print(json.dumps({{"pairs": {n}, "seconds": round(seconds, 1), "peak_rss_mb": round(peak),
                  "peak_disk_mb": round(peak_disk[0] / 2**20), "peak_files": peak_files[0],
                  "settings": {settings}, "lexicon_pairs": stats["lexicon_pairs"],
                  "cross_total": stats["cross_total"]}}))
"""


def real(args) -> dict:
    import polars as pl

    from paramill.lexicon.pmi import LexiconSettings, count_and_score
    from paramill.lexicon.simlex import evaluate

    d = Path(args.train)
    a = (d / "a.toks").read_text().splitlines()
    b = (d / "b.toks").read_text().splitlines()
    y = (d / "sim.txt").read_text().splitlines()
    pairs = [(x, z) for x, z, s in zip(a, b, y) if s.strip() == "1"]
    out = {"corpus": "twitter-url-corpus train positives", "pairs": len(pairs), "results": {}}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "c.parquet"
        pl.DataFrame({"s1": [p[0] for p in pairs], "s2": [p[1] for p in pairs]}).write_parquet(corpus)
        for min_count in (10, 2):
            settings = LexiconSettings(min_parascore=None, min_count=min_count)
            stats = count_and_score([corpus], Path(tmp) / "l.tsv", Path(tmp) / "n.tsv", Path(tmp) / "s.json", settings)
            result = evaluate(Path(tmp) / "l.tsv", args.simlex, Path(tmp) / "r.tsv", Path(tmp) / "r.json")
            out["results"][f"min_count_{min_count}"] = {"lexicon_pairs": stats["lexicon_pairs"],
                                                        "simlex": result["results"]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", default=str(SHARED / "twitter-url-corpus/castorini-twitterPPDB/train"))
    parser.add_argument("--simlex", default=str(SHARED / "simlex-999/SimLex-999.txt"))
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000_000, 5_000_000])
    parser.add_argument("--spill-rows", type=int, help="lexicon.spill_rows (default: the setting's)")
    parser.add_argument("--skip-real", action="store_true", help="only the scale runs")
    parser.add_argument("--out")
    args = parser.parse_args()
    os.environ["PARAMILL_PROGRESS"] = "0"
    report = {"benchmark": "paraphrase lexicon", "machine": {"cpus": os.cpu_count(),
                                                             "python": platform.python_version()},
              "real": None if args.skip_real else real(args), "scale": []}
    settings = {} if args.spill_rows is None else {"spill_rows": args.spill_rows}
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "PARAMILL_PROGRESS": "0"}
            gen = subprocess.run([sys.executable, "-c", GENERATE.format(n=n, path=os.path.join(tmp, "corpus.parquet"))],
                                 capture_output=True, text=True, env=env)
            if gen.returncode != 0:
                raise SystemExit(gen.stderr[-3000:])
            proc = subprocess.run([sys.executable, "-c", SCALE.format(src=str(ROOT / "src"), n=n, root=tmp, settings=settings,
                                                                        peak_rss=PEAK_RSS_MB)],
                                  capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise SystemExit(proc.stderr[-3000:])
            report["scale"].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    emit(report, args.out)


if __name__ == "__main__":
    main()
