#!/usr/bin/env python3
"""Time and peak memory of the back-translation summaries over growing candidate tables:
``paramill nmt stats`` (``backtranslation_stats``) and ``paramill nmt diversity``
(``diversity_stats``), each in a child process, at each ``--sizes`` (candidate rows).

The tables are synthetic: ``--ranks`` candidates a source (ParaBank 2's sampling keeps 5),
5-25 words from a 5,000-word Zipf-like vocabulary, the candidates shuffled, partly replaced
copies of the reference; shards of 200,000 rows, as a corpus's back-translation is. A
SentencePiece model (at most 4,000 pieces) is trained on the first 20,000 references. Memory that
stays flat as the corpus grows is the goal: the ratio of the largest size's peak to the
smallest's is reported.

    python benchmarks/nmt/nmt_stats.py [--sizes 200000 2000000] [--parts stats diversity] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _report import emit, machine, run_paramill as run  # noqa: E402

SHARD_ROWS = 200_000


def write_tables(where: Path, rows: int, ranks: int, seed: int = 5) -> list[Path]:
    """Candidate shards of ``rows`` rows in all (``ranks`` a source, adjacent, as the
    decoders write them)."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(5000)])
    weights = 1 / np.arange(1, 5001)
    weights /= weights.sum()
    files, done, source = [], 0, 0
    while done < rows:
        n = min(SHARD_ROWS, rows - done) // ranks * ranks or ranks
        pair_id, ref, cand, rank = [], [], [], []
        for _ in range(n // ranks):
            words = rng.choice(vocab, size=int(rng.integers(5, 26)), p=weights)
            reference = " ".join(words)
            for r in range(1, ranks + 1):
                other = words.copy()
                swap = rng.random(len(other)) < 0.3
                other[swap] = rng.choice(vocab, size=int(swap.sum()), p=weights)
                rng.shuffle(other)
                pair_id.append(f"c-{source}")
                ref.append(reference)
                cand.append(" ".join(other))
                rank.append(r)
            source += 1
        table = pa.table({"pair_id": pair_id, "candidate_id": [f"{p}:sample:{r}" for p, r in zip(pair_id, rank)],
                          "en_ref": ref, "candidate": cand, "method": ["sample"] * len(rank),
                          "rank": pa.array(rank, pa.int32()), "fwd_nll": rng.random(len(rank)) * 3,
                          "bwd_nll": rng.random(len(rank)) * 3})
        path = where / f"shard-{len(files):05d}.parquet"
        pq.write_table(table, path)
        files.append(path)
        done += len(rank)
    return files


def train_spm(where: Path, files: list[Path]) -> Path:
    import sentencepiece as spm

    refs = pq.read_table(files[0], columns=["en_ref"]).column(0).to_pylist()[:20000]
    text = where / "refs.txt"
    text.write_text("\n".join(refs) + "\n")
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(where / "en"), vocab_size=4000, hard_vocab_limit=False,
                                   model_type="unigram", character_coverage=1.0, num_threads=2,
                                   minloglevel=2)
    return where / "en.model"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000, 2_000_000])
    parser.add_argument("--ranks", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--parts", nargs="+", choices=["stats", "diversity"], default=["stats", "diversity"])
    parser.add_argument("--out")
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="paramill-nmt-stats-") as tmp:
        for size in args.sizes:
            where = Path(tmp) / str(size)
            where.mkdir()
            files = write_tables(where, size, args.ranks)
            spm = train_spm(where, files)
            paths = [str(f) for f in files]
            common = ["--threads", str(args.threads), "nmt"]
            row: dict = {"candidates": size, "shards": len(files)}
            if "stats" in args.parts:
                row["stats"] = run([*common, "stats", *paths, "--out", str(where / "stats.json")])
            if "diversity" in args.parts:
                row["diversity"] = run([*common, "diversity", *paths, "--spm", str(spm), "--tsv",
                                        str(where / "d.tsv"), "--json", str(where / "d.json")])
                row["diversity_collective"] = json.loads((where / "d.json").read_text())["collective"]
            for part in args.parts:
                row[part]["candidates_per_second"] = round(size / row[part]["seconds"])
            runs.append(row)
    first, last = runs[0], runs[-1]
    emit({"benchmark": "back-translation summaries: time and peak memory vs candidates",
          "machine": machine(), "threads": args.threads, "ranks": args.ranks, "runs": runs,
          "peak_ratio_largest_to_smallest": {
              k: round(last[k]["peak_rss_mb"] / first[k]["peak_rss_mb"], 2) for k in args.parts},
          }, args.out)


if __name__ == "__main__":
    main()
