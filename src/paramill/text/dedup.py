"""Exact deduplication in bounded memory, shared by ``clean``, ``pairs ingest`` and ``select``.

Rows get stable 64-bit keys (BLAKE2b of their normalised text). The keys of the rows that
reach deduplication are spilled to disk with each row's position, bucketed by their top
bits so that one bucket (about ``bucket_rows`` keys) is in memory at a time, and a
one-byte-per-row mark says which rows to keep: the first occurrence of a key is kept, later
ones are :data:`DUP_HERE`, and a key already in an earlier corpus's sorted key file is
:data:`DUP_EARLIER`.
"""

from __future__ import annotations

import functools
import hashlib
import math
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from paramill.io.arrowcols import column
from paramill.io.tableread import iter_parquet_batches, parquet_rows, scan_scratch, schema_of
from paramill.io.tablewrite import TableWriter

KEEP, DUP_HERE, DUP_EARLIER = 0, 1, 2
#: Dedup keys of kept pairs, sorted, so later corpora can skip pairs already kept (the
#: ``.keys.parquet`` beside every cleaned or ingested corpus).
KEYS = pa.schema([pa.field("key", pa.uint64(), nullable=False)])


def pair_keys(left: pl.Series | list[str], right: pl.Series | list[str]) -> np.ndarray:
    """Stable 64-bit keys of normalised pairs (BLAKE2b; independent of library versions): the
    first 8 bytes of the BLAKE2b digest of ``left \t right`` in UTF-8, read little-endian
    (a null side hashed as the text ``None``, as Python's formatting wrote it). The joined
    text is built and encoded by polars, the digests gathered into one buffer: 1.5x the
    speed of formatting, encoding and converting each pair in Python."""
    if not len(left):
        return np.zeros(0, dtype=np.uint64)
    sides = pl.DataFrame({"l": left, "r": right}, schema={"l": pl.String, "r": pl.String})
    joined = sides.select(pl.concat_str(pl.col("l").fill_null("None"), pl.lit("\t"),
                                        pl.col("r").fill_null("None")).cast(pl.Binary))
    digest = functools.partial(hashlib.blake2b, digest_size=8)
    return np.frombuffer(b"".join([digest(text).digest() for text in joined.to_series().to_list()]),
                         dtype="<u8").astype(np.uint64)


def bucket_bits(rows: int, bucket_rows: int) -> int:
    """Top key bits that split ``rows`` keys into buckets of at most about ``bucket_rows``."""
    return max(0, math.ceil(math.log2(max(1, math.ceil(rows / bucket_rows)))))


def spill(keys: np.ndarray, positions: np.ndarray, bits: int, handles: list) -> None:
    """Append ``(key, position)`` pairs to the open bucket file of each key's top bits."""
    data = np.column_stack((keys.astype(np.uint64), positions.astype(np.uint64)))
    which = (data[:, 0] >> np.uint64(64 - bits)) if bits else np.zeros(len(data), np.uint64)
    for b in np.unique(which):
        data[which == b].tofile(handles[int(b)])


def check_key_files(paths: list[Path]) -> None:
    """Each file of earlier corpora's keys must be a Parquet file with an unsigned 64-bit
    ``key`` column (what ``keys_out`` writes); anything else is an InputError naming it."""

    from paramill.errors import InputError, check_regular_file

    for path in paths:
        check_regular_file(path)
        schema = schema_of(path)
        if "key" not in schema.names:
            raise InputError(path, None, f"a key file needs a `key` column; it has {schema.names}")
        if schema.field("key").type != pa.uint64():
            raise InputError(path, None, f"column key holds {schema.field('key').type}, not uint64 "
                                         "pair keys")


def _prior_keys(paths: list[Path], lo: int, hi: int | None) -> np.ndarray:
    """Keys in [lo, hi) from the sorted key files of earlier corpora (row groups skipped by stats)."""
    if not paths:
        return np.empty(0, dtype=np.uint64)
    cond = pl.col("key") >= pl.lit(lo, dtype=pl.UInt64)
    if hi is not None:
        cond = cond & (pl.col("key") < pl.lit(hi, dtype=pl.UInt64))
    parts = [scan_scratch(p).filter(cond).collect()["key"].to_numpy() for p in paths]
    return np.unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.uint64)


def dedup_buckets(bucket_files: list[Path], bits: int, marks: np.ndarray,
                  prior_key_files: list[Path] = (), keys_out: TableWriter | None = None) -> None:
    """Mark duplicates bucket by bucket (deleting each bucket file); write the kept keys
    sorted to ``keys_out`` when given."""
    for b, path in enumerate(bucket_files):
        data = np.fromfile(path, dtype=np.uint64).reshape(-1, 2) if path.stat().st_size else \
            np.empty((0, 2), dtype=np.uint64)
        keys, pos = data[:, 0], data[:, 1]
        shift = 64 - bits
        lo = (b << shift) if bits else 0
        hi = ((b + 1) << shift) if bits and b + 1 < (1 << bits) else None
        prior = _prior_keys(list(prior_key_files), lo, hi)
        order = np.lexsort((pos, keys))
        keys, pos = keys[order], pos[order]
        first = np.ones(len(keys), dtype=bool)
        first[1:] = keys[1:] != keys[:-1]
        marks[pos[~first]] = DUP_HERE
        if len(prior):
            seen = np.isin(keys, prior, assume_unique=False) & first
            marks[pos[seen]] = DUP_EARLIER
            first &= ~seen
        kept = keys[first]
        if keys_out is not None and len(kept):
            keys_out.write(pa.table({"key": kept}, schema=KEYS))
        path.unlink()


class KeySpill:
    """Keys added in row order while their total is unknown; :meth:`marks` buckets them
    once it is known and returns the keep/duplicate mark of every row added."""

    def __init__(self, directory: str | Path, bucket_rows: int) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.bucket_rows = bucket_rows
        self.pending: list[Path] = []
        self.rows = 0

    def add(self, keys: np.ndarray) -> None:
        """Keys of the next ``len(keys)`` rows."""
        if not len(keys):
            return
        path = self.directory / f"pending-{len(self.pending):06d}.u64"
        positions = np.arange(self.rows, self.rows + len(keys), dtype=np.uint64)
        np.column_stack((keys.astype(np.uint64), positions)).tofile(path)
        self.pending.append(path)
        self.rows += len(keys)

    def marks(self, prior_key_files: list[Path] = (), keys_out: TableWriter | None = None,
              prior_rows: int = 0) -> np.ndarray:
        """:data:`KEEP` / :data:`DUP_HERE` / :data:`DUP_EARLIER` per row added, in order."""
        marks = np.zeros(self.rows, dtype=np.uint8)
        bits = bucket_bits(self.rows + prior_rows, self.bucket_rows)
        buckets = [self.directory / f"bucket-{b:05d}.u64" for b in range(1 << bits)]
        handles = [open(p, "wb") for p in buckets]
        try:
            for path in self.pending:
                data = np.fromfile(path, dtype=np.uint64).reshape(-1, 2)
                spill(data[:, 0], data[:, 1], bits, handles)
                path.unlink()
        finally:
            for fh in handles:
                fh.close()
        self.pending = []
        dedup_buckets(buckets, bits, marks, prior_key_files, keys_out)
        return marks


def drop_marked(parts: list[Path], marks: np.ndarray, batch_rows: int = 65536) -> int:
    """Rewrite each Parquet part without the rows ``marks`` (one a row of the parts, in
    order) does not :data:`KEEP`, a batch at a time; the rows left."""
    offset = left = 0
    for part in parts:
        n = parquet_rows([part])
        keep = marks[offset:offset + n] == KEEP
        offset += n
        if not keep.all():
            writer, at = TableWriter(part.with_suffix(".kept"), schema_of(part)), 0
            for batch in iter_parquet_batches([part], batch_rows):
                writer.write(batch.filter(column(keep[at:at + batch.num_rows], pa.bool_())))
                at += batch.num_rows
            writer.close().replace(part)
        left += int(keep.sum())
    if offset != len(marks):
        raise RuntimeError(f"{offset} rows in the parts, {len(marks)} marks")
    return left
