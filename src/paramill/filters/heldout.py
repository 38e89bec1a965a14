"""Held-out reference/translation pairs: training data of the KenLM, classifier and
bootstrapped paraphrase-score models (Wieting 2017 §5.5: 40k train, 5k valid, 5k test).

A seeded hash of ``pair_id`` picks the pairs, one pass over the candidate shards keeping a
heap of the ``size`` smallest hashes, so memory is bounded by ``size`` whatever the corpus.
Only best candidates (rank 1) that differ from their reference are eligible. Selection
leaves held-out pairs out of the released corpus (``select.exclude_heldout``).
"""

from __future__ import annotations

import hashlib
import sys
import heapq
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from paramill.io.tableread import iter_parquet_batches, parquet_rows
from paramill.io.tablewrite import TableWriter
from paramill.run.job import output_job
from paramill.run.progress import progress
from paramill.provenance import Run
from paramill.io.tableread import read_frame
from paramill.config.typed import setting, Settings

HELDOUT = pa.schema([
    pa.field("pair_id", pa.string(), nullable=False),
    pa.field("candidate_id", pa.string(), nullable=False),
    pa.field("en_ref", pa.string(), nullable=False),
    pa.field("candidate", pa.string(), nullable=False),
    pa.field("split", pa.string(), nullable=False),  # train | valid | test
])


@dataclass(frozen=True)
class HeldoutSettings(Settings):
    corpora: list[str] = setting(
        factory=list,
        doc="Corpora the pairs are drawn from ([] = all). Name them so a new corpus does not retrain the filter models and re-score every shard.",
        items={'type': 'string', 'pattern': '^[A-Za-z0-9][A-Za-z0-9_-]*$'})
    size: int = setting(
        50000, "Pairs held out (Wieting 2017: 40k train + 5k valid + 5k test).", minimum=1)
    max_share: float = setting(
        0.25, "At most this share of the eligible pairs (best candidates that differ from their "
        "reference) is held out, whatever size says, so that a small corpus still leaves pairs "
        "to release. 1 holds out up to size.", exclusiveMinimum=0, maximum=1)
    valid: float = setting(0.1, "Fraction for validation.", minimum=0, maximum=0.5)
    test: float = setting(0.1, "Fraction for test.", minimum=0, maximum=0.5)
    seed: int = setting(13, "Seed of the hash that picks them.")


def pair_hash(pair_id: str, seed: int) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}:{pair_id}".encode(), digest_size=8).digest(), "big")


def select_heldout(candidate_files: list[str | Path], out: str | Path,
                   settings: HeldoutSettings = HeldoutSettings(), rule: str = "heldout"
                   ) -> dict[str, Any]:
    if settings.valid + settings.test >= 1:
        raise ValueError("heldout valid + test fractions must leave some training pairs")
    run = Run(rule=rule, params=asdict(settings), inputs=list(candidate_files))
    heap: list[tuple[int, str, str, str, str]] = []  # max-heap by -hash of the kept pairs
    eligible = 0
    bar = progress("heldout", unit="pairs", total=parquet_rows(candidate_files))
    for batch in iter_parquet_batches(candidate_files, columns=["pair_id", "candidate_id", "en_ref",
                                                                "candidate", "rank"]):
        frame = pl.from_arrow(batch).filter((pl.col("rank") == 1)
                                            & (pl.col("en_ref") != pl.col("candidate")))
        for pid, cid, ref, cand in frame.select("pair_id", "candidate_id", "en_ref",
                                                "candidate").iter_rows():
            eligible += 1
            h = pair_hash(pid, settings.seed)
            item = (-h, pid, cid, ref, cand)
            if len(heap) < settings.size:
                heapq.heappush(heap, item)
            elif -heap[0][0] > h:
                heapq.heapreplace(heap, item)
        bar.update(batch.num_rows)
    bar.close()
    chosen = sorted(heap, reverse=True)  # smallest hash first
    n = min(len(chosen), int(eligible * settings.max_share))
    if n == 0:
        raise ValueError(
            f"filters heldout: {eligible} eligible pairs (best candidates that differ from their "
            f"reference); filters.heldout.max_share {settings.max_share} of them leaves none to "
            "train the filters' models: give more data or raise filters.heldout.max_share"
            + ("" if eligible else " (every best candidate is identical to its reference, or "
               "the shards are empty)"))
    if n < min(settings.size, eligible):  # the share, not size, set the number
        print(f"paramill filters heldout: {n:,} pairs held out, filters.heldout.max_share "
              f"({settings.max_share}) of the {eligible:,} eligible, where size asks for "
              f"{settings.size:,}", file=sys.stderr)
    chosen = chosen[:n]
    n_test = round(n * settings.test)
    n_valid = round(n * settings.valid)
    splits = ["train"] * (n - n_valid - n_test) + ["valid"] * n_valid + ["test"] * n_test
    rows = [{"pair_id": p, "candidate_id": c, "en_ref": r, "candidate": t, "split": s}
            for (_, p, c, r, t), s in zip(chosen, splits)]
    with output_job(run, out) as job:
        (tmp,) = job.paths
        writer = TableWriter(tmp, HELDOUT)
        writer.write(pa.Table.from_pylist(rows, schema=HELDOUT))
        writer.close()
        counts = {s: splits.count(s) for s in ("train", "valid", "test")}
        job.rows_in = eligible
        job.rows_out = n
        job.extra = {"splits": counts}
    return {"eligible": eligible, "heldout": n, **counts}


def heldout_texts(path: str | Path, split: str, column: str) -> list[str]:
    """One column of one split of a held-out table (held-out tables are small)."""
    return read_frame(path, ["split", column]).filter(pl.col("split") == split).get_column(column).to_list()
