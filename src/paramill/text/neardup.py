"""Near-duplicate pairs in bounded memory: MinHash over word shingles, banded into LSH keys
(Broder 1997; Leskovec, Rajaraman & Ullman, *Mining of Massive Datasets* ch. 3), the
candidates checked against the signatures' estimate of their Jaccard similarity.

A pair's shingles are the word n-grams (``ngram``, lower-cased words of the normalised text,
each sentence framed by a start and an end mark) of both its sentences together, so a pair
and its swap have one set. Its signature holds :data:`NUM_PERM` minima of hashes of those
shingles; bands of ``rows`` minima make the LSH keys, ``rows`` and the number of bands
chosen for the Jaccard ``threshold`` (:func:`bands_for`).

A pair is a near-duplicate when the Jaccard similarity of its shingles to an earlier *kept*
pair's is at least ``threshold``; the first of a group is kept, as in exact deduplication.
LSH finds the candidates; their Jaccard similarity is then computed from the shingles
themselves (32-bit hashes), not estimated, so the step does not miss a pair just above the
threshold by the estimate's noise. Memory does not grow with the corpus beyond two bytes a
pair: the band keys are spilled to disk in hash buckets (:mod:`paramill.text.dedup`'s), one
bucket in memory at a time; the shingles wait on disk for the check (4 bytes a shingle);
the candidate links between pairs are as many as the near-duplicates found, not as the
pairs.

Shingles are hashed in numpy by a polynomial hash of their UTF-8 bytes mixed by SplitMix64,
so the marks are the same with any library version; the permutations are seeded.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import polars as pl

from paramill.text import normalize_expr
from paramill.text.dedup import KEEP, bucket_bits, spill

#: minima per signature
NUM_PERM = 128
#: mark of a near-duplicate (beside :data:`paramill.text.dedup.KEEP` and the exact ones)
NEAR = 3

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)
_P = np.uint64(0x100000001B3)  # the polynomial's base (FNV's 64-bit prime)
_RNG_SEED = 20261202
_WORD = r"\w+"


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, element-wise (uint64 arithmetic wraps)."""
    x = x.copy()
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def _permutations() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(_RNG_SEED)
    a = rng.integers(1, 2 ** 63, NUM_PERM, dtype=np.uint64) | np.uint64(1)  # odd multipliers
    b = rng.integers(0, 2 ** 63, NUM_PERM, dtype=np.uint64)
    return a, b


_A, _B = _permutations()


def bands_for(threshold: float) -> tuple[int, int]:
    """(bands, rows per band), bands x rows <= NUM_PERM, whose LSH catches a pair at the
    threshold with probability at least 0.99 and admits the fewest pairs below it (the
    area under the S-curve 1 - (1 - J^rows)^bands from 0 to the threshold, which the check
    then has to rule out)."""
    best = None
    grid = np.linspace(0, threshold, 200)
    for rows in range(1, NUM_PERM + 1):
        bands = NUM_PERM // rows
        if 1 - (1 - threshold ** rows) ** bands < 0.99:
            continue
        below = float(np.trapezoid(1 - (1 - grid ** rows) ** bands, grid))
        if best is None or below < best[0]:
            best = (below, bands, rows)
    assert best is not None  # rows = 1 always catches it
    return best[1], best[2]


def shingle_hashes(left: pl.Series, right: pl.Series, ngram: int) -> tuple[np.ndarray, np.ndarray]:
    """(hash of each shingle, the row it belongs to), rows in order, for the pairs
    ``(left[i], right[i])``: word ``ngram``-grams of each side, lower-cased and normalised,
    framed by start and end marks (a side of fewer words gives one shingle of all it has)."""
    sides = pl.DataFrame({"l": left, "r": right}, schema={"l": pl.String, "r": pl.String})

    def grams(column: str) -> pl.Expr:
        words = pl.concat_list(pl.lit(["\x02"]), normalize_expr(pl.col(column).fill_null(""))
                               .str.to_lowercase().str.extract_all(_WORD), pl.lit(["\x03"]))
        if ngram == 1:
            return words
        parts = [pl.element().shift(-k) for k in range(ngram)]
        return words.list.eval(pl.concat_str(parts, separator=" ").drop_nulls())

    table = (sides.with_row_index("row")
             .select("row", pl.concat_list(grams("l"), grams("r")).alias("s"))
             .explode("s").drop_nulls("s"))
    rows = table["row"].to_numpy().astype(np.int64)
    arrow = table["s"].cast(pl.Binary).to_arrow().cast("large_binary")
    offsets = np.frombuffer(arrow.buffers()[1], dtype=np.int64)[arrow.offset:arrow.offset + len(arrow) + 1]
    data = np.frombuffer(arrow.buffers()[2], dtype=np.uint8)
    return _poly_hash(data, offsets), rows


def _poly_hash(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """sum(byte_j * P^(len - 1 - j)) mod 2^64 of each string, mixed: vectorised over all."""
    starts, ends = offsets[:-1], offsets[1:]
    lengths = ends - starts
    if not len(lengths):
        return np.zeros(0, dtype=np.uint64)
    span = data[offsets[0]:offsets[-1]].astype(np.uint64)
    # each byte's distance to its string's end
    owner = np.repeat(np.arange(len(lengths)), lengths)
    back = (ends[owner] - offsets[0] - 1 - np.arange(len(span))).astype(np.int64)
    powers = np.cumprod(np.full(int(lengths.max()) + 1, _P, dtype=np.uint64))
    powers = np.concatenate(([np.uint64(1)], powers[:-1]))
    weighted = span * powers[back]
    sums = np.add.reduceat(weighted, (starts - offsets[0])[lengths > 0]) if len(span) else np.zeros(0, np.uint64)
    out = np.zeros(len(lengths), dtype=np.uint64)
    out[lengths > 0] = sums
    return _mix(out ^ lengths.astype(np.uint64))


def signatures(hashes: np.ndarray, rows: np.ndarray, n_rows: int, threads: int = 1) -> np.ndarray:
    """(n_rows, NUM_PERM) uint32 MinHash signatures: per permutation ``(a h + b) mod 2^64``,
    its top 32 bits, the minimum over each row's shingles (every row has at least its marks)."""
    out = np.empty((n_rows, NUM_PERM), dtype=np.uint32)
    if not n_rows:
        return out
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    if len(starts) != n_rows:
        raise ValueError(f"{n_rows} rows, shingles for {len(starts)}")

    def block(ks: range) -> None:
        for k in ks:
            values = ((hashes * _A[k] + _B[k]) >> np.uint64(32)).astype(np.uint32)
            out[:, k] = np.minimum.reduceat(values, starts)

    step = math.ceil(NUM_PERM / max(1, threads))
    chunks = [range(i, min(NUM_PERM, i + step)) for i in range(0, NUM_PERM, step)]
    if len(chunks) == 1:
        block(chunks[0])
    else:
        with ThreadPoolExecutor(len(chunks)) as pool:  # numpy's loops let go of the GIL
            list(pool.map(block, chunks))
    return out


def band_keys(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """(n, bands) uint64 keys: each band's minima hashed together with the band's number."""
    keys = np.empty((len(sig), bands), dtype=np.uint64)
    for j in range(bands):
        h = np.full(len(sig), ((j + 1) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64)
        for value in sig[:, j * rows:(j + 1) * rows].T:
            h = _mix(h ^ value.astype(np.uint64))
        keys[:, j] = h
    return keys


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard similarity of two sorted arrays of distinct shingle hashes."""
    shared = len(np.intersect1d(a, b, assume_unique=True))
    return shared / (len(a) + len(b) - shared)


class NearDuplicates:
    """Pairs added in row order, a batch at a time; :meth:`mark` then marks the
    near-duplicates of earlier kept pairs, on disk under ``directory`` meanwhile."""

    def __init__(self, directory: str | Path, threshold: float, ngram: int = 2,
                 bucket_rows: int = 2_000_000, threads: int = 1) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.threshold, self.ngram, self.threads = threshold, ngram, threads
        self.bands, self.band_rows = bands_for(threshold)
        self.bucket_rows = bucket_rows
        self.rows = 0
        self._shingles = open(self.directory / "shingles.u32", "wb")
        self._ends = open(self.directory / "ends.u64", "wb")
        self._written = 0
        self._keys: list[Path] = []

    def add(self, left: pl.Series, right: pl.Series) -> None:
        """The next ``len(left)`` pairs."""
        n = len(left)
        if not n:
            return
        hashes, rows = shingle_hashes(left, right, self.ngram)
        sig = signatures(hashes, rows, n, self.threads)
        # each row's distinct shingles (top 32 bits of their hashes), sorted, for the check
        both = np.unique((rows.astype(np.uint64) << np.uint64(32)) | (hashes >> np.uint64(32)))
        (both & np.uint64(0xFFFFFFFF)).astype("<u4").tofile(self._shingles)
        ends = np.searchsorted(both >> np.uint64(32), np.arange(1, n + 1, dtype=np.uint64))
        (ends.astype(np.uint64) + np.uint64(self._written)).astype("<u8").tofile(self._ends)
        self._written += len(both)
        keys = band_keys(sig, self.bands, self.band_rows)
        positions = np.repeat(np.arange(self.rows, self.rows + n, dtype=np.uint64), self.bands)
        path = self.directory / f"keys-{len(self._keys):06d}.u64"
        np.column_stack((keys.reshape(-1), positions)).tofile(path)
        self._keys.append(path)
        self.rows += n

    def _links(self) -> np.ndarray:
        """(later, earlier) pairs of rows that share a band key: each row to the first and
        to the previous row of its key; unique, as uint64 ``later << 32 | earlier``."""
        bits = bucket_bits(self.rows * self.bands, self.bucket_rows)
        buckets = [self.directory / f"bucket-{b:05d}.u64" for b in range(1 << bits)]
        handles = [open(p, "wb") for p in buckets]
        try:
            for path in self._keys:
                data = np.fromfile(path, dtype=np.uint64).reshape(-1, 2)
                spill(data[:, 0], data[:, 1], bits, handles)
                path.unlink()
        finally:
            for fh in handles:
                fh.close()
        self._keys = []
        links = []
        for path in buckets:
            data = np.fromfile(path, dtype=np.uint64).reshape(-1, 2)
            path.unlink()
            if len(data) < 2:
                continue
            order = np.lexsort((data[:, 1], data[:, 0]))
            keys, pos = data[order, 0], data[order, 1]
            same = keys[1:] == keys[:-1]
            if not same.any():
                continue
            group = np.cumsum(np.r_[True, ~same])  # group number of each row
            first = pos[np.flatnonzero(np.r_[True, ~same])][group - 1]
            later = np.flatnonzero(np.r_[False, same])
            found = np.concatenate([(pos[later] << np.uint64(32)) | first[later],
                                    (pos[later] << np.uint64(32)) | pos[later - 1]])
            links.append(np.unique(found))
        return np.unique(np.concatenate(links)) if links else np.zeros(0, dtype=np.uint64)

    def mark(self, marks: np.ndarray) -> int:
        """Set :data:`NEAR` in ``marks`` (one a row added; rows not :data:`KEEP` there are
        no one's original) for each near-duplicate of an earlier kept row. Returns how many."""
        self._shingles.close()
        self._ends.close()
        if len(marks) != self.rows:
            raise ValueError(f"{self.rows} pairs added, {len(marks)} marks")
        links = self._links()
        later = (links >> np.uint64(32)).astype(np.int64)
        earlier = (links & np.uint64(0xFFFFFFFF)).astype(np.int64)
        order = np.lexsort((earlier, later))
        found = 0
        if len(links):
            shingles = np.memmap(self.directory / "shingles.u32", dtype="<u4", mode="r")
            ends = np.memmap(self.directory / "ends.u64", dtype="<u8", mode="r")

            def row(i: int) -> np.ndarray:
                return shingles[int(ends[i - 1]) if i else 0:int(ends[i])]

            for a, b in zip(later[order].tolist(), earlier[order].tolist()):
                if marks[a] == KEEP and marks[b] == KEEP and jaccard(row(a), row(b)) >= self.threshold:
                    marks[a] = NEAR
                    found += 1
            del shingles, ends
        for name in ("shingles.u32", "ends.u64"):
            (self.directory / name).unlink()
        return found
