"""Plain-text training data for OpenNMT-py, written from bitext shards.

A deterministic held-out validation set (``valid_size`` pairs chosen by a seeded hash of
``pair_id``, so it does not depend on file order or memory) is kept out of training.

OpenNMT-py reads U+FFE8 (HALFWIDTH FORMS LIGHT VERTICAL, ``￨``) in a line as the separator of
a token's features, and a corpus without features stops at the first line holding one
(``AssertionError: The number of fetures does not match``, after the vocabulary was built).
It is written as U+2502 (``│``, what NFKC makes of it) and the lines so changed are counted
(``separators`` in ``stats.json``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from paramill.io.tableread import iter_parquet_batches, parquet_rows
from paramill.io.jsonfiles import write_json
from paramill.run.job import output_job
from paramill.provenance import Run

FILES = ("train.cs", "train.en", "valid.cs", "valid.en")
#: OpenNMT-py's feature separator, and what a line holds in its place
FEATURE_SEPARATOR, IN_ITS_PLACE = "\uffe8", "\u2502"


def _in_valid(pair_id: str, seed: int, threshold: int) -> bool:
    digest = hashlib.blake2b(f"{seed}:{pair_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") < threshold


def write_training_text(shards: list[str | Path], out_dir: str | Path, valid_size: int = 200,
                        seed: int = 13, rule: str = "nmt_data") -> dict[str, Any]:
    """Write ``train.{cs,en}`` and ``valid.{cs,en}`` (one sentence a line) into ``out_dir``."""
    total = parquet_rows(shards)
    share = min(1.0, valid_size / total) if total else 0.0
    threshold = int(share * 2**64) if share < 1 else 2**64
    run = Run(rule=rule, params={"valid_size": valid_size, "seed": seed}, inputs=list(shards))
    counts = {"train": 0, "valid": 0}
    separators = 0
    with output_job(run, out_dir) as job:
        (tmp,) = job.paths
        tmp.mkdir()
        handles = {name: open(tmp / name, "w", encoding="utf-8") for name in FILES}
        try:
            for batch in iter_parquet_batches(shards, columns=["pair_id", "cs", "en"]):
                for pair_id, cs, en in zip(*(c.to_pylist() for c in batch.columns)):
                    part = "valid" if (counts["valid"] < valid_size
                                       and _in_valid(pair_id, seed, threshold)) else "train"
                    if "\n" in cs or "\n" in en:  # cleaned text has none; guard the format
                        cs, en = cs.replace("\n", " "), en.replace("\n", " ")
                    if FEATURE_SEPARATOR in cs or FEATURE_SEPARATOR in en:
                        cs = cs.replace(FEATURE_SEPARATOR, IN_ITS_PLACE)
                        en = en.replace(FEATURE_SEPARATOR, IN_ITS_PLACE)
                        separators += 1
                    handles[f"{part}.cs"].write(cs + "\n")
                    handles[f"{part}.en"].write(en + "\n")
                    counts[part] += 1
        finally:
            for fh in handles.values():
                fh.close()
        if counts["train"] == 0:
            raise ValueError("no training pairs: the shards are empty")
        stats = {"pairs": total, **counts, "separators": separators}
        write_json(tmp / "stats.json", stats)
        job.rows_in = total
        job.rows_out = total
    return stats
