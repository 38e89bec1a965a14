"""Near-duplicate pairs in bounded memory: MinHash over word shingles, banded into LSH keys
(Broder 1997; Leskovec, Rajaraman & Ullman, *Mining of Massive Datasets* ch. 3), the
candidates then checked on the exact Jaccard similarity of their shingles.

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
pair: the band keys are spilled to disk in hash buckets (8 bytes an entry: 32 bits of the
key beside its bucket's 8, and the row), one bucket in memory at a time; the shingles wait
on disk for the check (4 bytes a shingle), which reads :data:`LINK_BATCH` candidates' at a
time; the candidate links between pairs are as many as the near-duplicates found, not as
the pairs.

Shingles are hashed in numpy by a polynomial hash of their UTF-8 bytes mixed by SplitMix64,
so the marks are the same with any library version; the permutations are seeded.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import polars as pl

from paramill.text import normalize_expr
from paramill.text.dedup import KEEP

#: minima per signature
NUM_PERM = 128
#: mark of a near-duplicate (beside :data:`paramill.text.dedup.KEEP` and the exact ones)
NEAR = 3

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


#: rows of one pass of the shingling (memory only: about 200 bytes a row while it runs)
CHUNK_ROWS = 16_384
_START, _END = "\x02", "\x03"  # the marks that frame each sentence (no text holds them)


def shingle_hashes(left: pl.Series, right: pl.Series, ngram: int) -> tuple[np.ndarray, np.ndarray]:
    """(hash of each shingle, the row it belongs to), rows in order, for the pairs
    ``(left[i], right[i])``: word ``ngram``-grams of each side (lower-cased words of the
    normalised text, framed by ``max(1, ngram - 1)`` start and end marks, so every side has
    one at least), a shingle's hash the mix of its words' hashes in order."""
    hashes, rows = [], []
    for at in range(0, len(left), CHUNK_ROWS):
        h, r = _shingles(left[at:at + CHUNK_ROWS], right[at:at + CHUNK_ROWS], ngram)
        hashes.append(h)
        rows.append(r + at)
    if not hashes:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    return np.concatenate(hashes), np.concatenate(rows)


def _shingles(left: pl.Series, right: pl.Series, ngram: int) -> tuple[np.ndarray, np.ndarray]:
    pad = max(1, ngram - 1)
    sides = pl.DataFrame({"l": left, "r": right}, schema={"l": pl.String, "r": pl.String})

    def framed(column: str) -> pl.Expr:
        words = normalize_expr(pl.col(column).fill_null("")).str.to_lowercase().str.extract_all(_WORD)
        return pl.concat_list(pl.lit([_START] * pad), words, pl.lit([_END] * pad))

    seqs = sides.select(framed("l").alias("l"), framed("r").alias("r"))
    n_left = seqs["l"].list.len().to_numpy().astype(np.int64)
    n_right = seqs["r"].list.len().to_numpy().astype(np.int64)
    words = seqs.select(pl.concat_list("l", "r").alias("w"))["w"].explode()  # row by row, l then r
    arrow = words.cast(pl.Binary).to_arrow().cast("large_binary")
    offsets = np.frombuffer(arrow.buffers()[1], dtype=np.int64)[arrow.offset:arrow.offset + len(arrow) + 1]
    word = _poly_hash(np.frombuffer(arrow.buffers()[2], dtype=np.uint8), offsets)
    # the end of each token's sentence, and the row of each token
    lengths = np.column_stack((n_left, n_right)).reshape(-1)
    ends = np.cumsum(lengths)
    sentence_end = np.repeat(ends, lengths)
    starts = np.flatnonzero(np.arange(len(word)) + ngram <= sentence_end)  # windows in a sentence
    h = word[starts]
    for k in range(1, ngram):
        h = _mix(h * _P + word[starts + k])
    row = np.repeat(np.arange(len(n_left)), n_left + n_right)[starts]
    return h, row


_POWERS: dict[str, np.ndarray] = {}


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """P^t and P^-t (mod 2^64; P is odd, so invertible) for t < n, kept between calls."""
    if len(_POWERS.get("p", ())) < n:
        size = max(n, 2 * len(_POWERS.get("p", ())), 1 << 16)
        inverse = np.uint64(pow(int(_P), -1, 1 << 64))
        for key, base in (("p", _P), ("q", inverse)):
            values = np.full(size, base, dtype=np.uint64)
            values[0] = 1
            _POWERS[key] = np.cumprod(values, dtype=np.uint64)
    return _POWERS["p"][:n], _POWERS["q"][:n]


def _poly_hash(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """sum(byte_j P^(len - 1 - j)) mod 2^64 of each string, mixed with its length, for all
    at once: with Q = P^-1 and G the running sum of byte_t Q^t over the buffer, a string
    of bytes [s, e) hashes to P^(e - 1) (G[e] - G[s])."""
    base = int(offsets[0])
    span = data[base:int(offsets[-1])]
    if not len(offsets) - 1:
        return np.zeros(0, dtype=np.uint64)
    p, q = _powers(len(span) + 1)
    running = np.zeros(len(span) + 1, dtype=np.uint64)
    np.cumsum(span.astype(np.uint64) * q[:len(span)], out=running[1:])
    starts, ends = offsets[:-1] - base, offsets[1:] - base
    sums = (running[ends] - running[starts]) * p[np.maximum(ends - 1, 0)]
    return _mix(sums ^ (ends - starts).astype(np.uint64))


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
        values = np.empty(len(hashes), dtype=np.uint64)
        for k in ks:  # the top bits of the minimum are the minimum of the top bits
            np.multiply(hashes, _A[k], out=values)
            values += _B[k]
            out[:, k] = np.minimum.reduceat(values, starts) >> np.uint64(32)

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


def _unique(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (np.unique hashes integers first: slower here)."""
    values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]] if len(values) else values


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard similarity of the sets of two arrays of shingle hashes."""
    a, b = np.unique(a), np.unique(b)
    shared = len(np.intersect1d(a, b, assume_unique=True))
    return shared / (len(a) + len(b) - shared)


def jaccards(first: list[np.ndarray], second: list[np.ndarray]) -> np.ndarray:
    """:func:`jaccard` of ``first[i]`` and ``second[i]`` (uint32 hashes, none empty) for every
    ``i``, at once: each array's values tagged with ``i`` in the top bits, the sets' sizes
    and the shared values counted by ``i``."""
    n = len(first)
    if not n:
        return np.zeros(0)

    def tagged(arrays: list[np.ndarray]) -> np.ndarray:
        sizes = np.fromiter((len(x) for x in arrays), dtype=np.int64, count=n)
        which = np.repeat(np.arange(n, dtype=np.uint64), sizes)
        return _unique((which << np.uint64(32)) | np.concatenate(arrays).astype(np.uint64))

    def count(values: np.ndarray) -> np.ndarray:
        return np.bincount((values >> np.uint64(32)).astype(np.int64), minlength=n)

    a, b = tagged(first), tagged(second)
    shared = count(np.intersect1d(a, b, assume_unique=True))
    return shared / (count(a) + count(b) - shared)


#: candidate links checked at once (memory only: about 500 bytes a link while they are)
LINK_BATCH = 65_536

#: top-level buckets of the band keys, by their top bits (a bucket over ``bucket_rows``
#: entries is split again by the bits after, when it is read)
BUCKET_BITS = 8
#: bits of a band key an entry keeps beyond its bucket's; the row takes the other 32. Two
#: keys alike in their top BUCKET_BITS + KEY_BITS bits are taken for one: a candidate more
#: for the check, which compares the shingles themselves
KEY_BITS = 32
#: an entry's (and a link's) low bits: its row
_ROW_BITS = np.uint64(32)
_ROW_MASK = (np.uint64(1) << _ROW_BITS) - np.uint64(1)


def _entries(keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """uint64 entries: bits ``[BUCKET_BITS, BUCKET_BITS + KEY_BITS)`` of each key on top,
    its row below, so that sorting the entries of a bucket sorts them by key, then row."""
    return (((keys << np.uint64(BUCKET_BITS)) >> np.uint64(64 - KEY_BITS)) << _ROW_BITS) | rows


def _spill(entries: np.ndarray, which: np.ndarray, handles: list) -> None:
    """Append each entry to the file of its number in ``which`` (< 2^16)."""
    order = np.argsort(which.astype(np.uint16), kind="stable")  # a radix sort, for 16 bits
    bounds = np.searchsorted(which[order], np.arange(len(handles) + 1))
    entries = entries[order]
    for b, fh in enumerate(handles):
        if bounds[b + 1] > bounds[b]:
            entries[bounds[b]:bounds[b + 1]].tofile(fh)


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
        self._buckets = [self.directory / f"bucket-{b:03d}" for b in range(1 << BUCKET_BITS)]
        self._handles = [open(p, "wb") for p in self._buckets]

    def add(self, left: pl.Series, right: pl.Series) -> None:
        """The next ``len(left)`` pairs."""
        n = len(left)
        if not n:
            return
        if self.rows + n > 1 << 32:
            raise ValueError(f"near-duplicates of at most {1 << 32:,} pairs at once")
        hashes, rows = shingle_hashes(left, right, self.ngram)
        sig = signatures(hashes, rows, n, self.threads)
        # each row's shingles (the top 32 bits of their hashes), row after row, for the check
        (hashes >> np.uint64(32)).astype("<u4").tofile(self._shingles)
        ends = np.searchsorted(rows, np.arange(1, n + 1))
        (ends.astype(np.uint64) + np.uint64(self._written)).astype("<u8").tofile(self._ends)
        self._written += len(hashes)
        keys = band_keys(sig, self.bands, self.band_rows).reshape(-1)
        positions = np.repeat(np.arange(self.rows, self.rows + n, dtype=np.uint64), self.bands)
        _spill(_entries(keys, positions), keys >> np.uint64(64 - BUCKET_BITS), self._handles)
        self.rows += n

    def _links(self) -> np.ndarray:
        """(later, earlier) pairs of rows that share a band key: each row to the first and
        to the previous row of its key; unique, as uint64 ``later << 32 | earlier``."""
        for fh in self._handles:
            fh.close()
        links: list[np.ndarray] = []
        todo = [(path, 0) for path in self._buckets]  # (file, key bits it was split by)
        while todo:
            path, used = todo.pop()
            data = np.fromfile(path, dtype="<u8")
            path.unlink()
            if len(data) > self.bucket_rows and used + 4 <= KEY_BITS:  # split by the next key bits
                parts = [path.with_name(f"{path.name}-{b:x}") for b in range(16)]
                handles = [open(p, "wb") for p in parts]
                try:
                    _spill(data, (data << np.uint64(used)) >> np.uint64(60), handles)
                finally:
                    for fh in handles:
                        fh.close()
                todo += [(p, used + 4) for p in parts]
                continue
            if len(data) > 1:
                links.append(_shared(data))
        found = [x for x in links if len(x)]
        return _unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.uint64)

    def mark(self, marks: np.ndarray) -> int:
        """Set :data:`NEAR` in ``marks`` (one a row added; rows not :data:`KEEP` there are
        no one's original) for each near-duplicate of an earlier kept row. Returns how many."""
        self._shingles.close()
        self._ends.close()
        if len(marks) != self.rows:
            raise ValueError(f"{self.rows} pairs added, {len(marks)} marks")
        links = self._links()
        later = (links >> _ROW_BITS).astype(np.int64)
        earlier = (links & _ROW_MASK).astype(np.int64)
        # links are sorted: by the later row, then the earlier
        found = 0
        if len(links):
            # read by offset, not mapped: a mapped file's pages count in the job's memory
            with open(self.directory / "shingles.u32", "rb") as shingles, \
                    open(self.directory / "ends.u64", "rb") as ends:

                def row(i: int) -> np.ndarray:
                    bounds = np.frombuffer(os.pread(ends.fileno(), 16, 8 * (i - 1)), "<u8") if i \
                        else np.r_[np.uint64(0), np.frombuffer(os.pread(ends.fileno(), 8, 0), "<u8")]
                    lo, hi = int(bounds[0]), int(bounds[1])
                    return np.frombuffer(os.pread(shingles.fileno(), 4 * (hi - lo), 4 * lo), "<u4")

                for at in range(0, len(later), LINK_BATCH):
                    a, b = later[at:at + LINK_BATCH], earlier[at:at + LINK_BATCH]
                    rows = {i: row(i) for i in np.union1d(a, b).tolist()}
                    similar = jaccards([rows[i] for i in a.tolist()],
                                       [rows[i] for i in b.tolist()]) >= self.threshold
                    # in order: a row marked here is no later row's original
                    for x, y in zip(a[similar].tolist(), b[similar].tolist()):
                        if marks[x] == KEEP and marks[y] == KEEP:
                            marks[x] = NEAR
                            found += 1
        for name in ("shingles.u32", "ends.u64"):
            (self.directory / name).unlink()
        return found


def _shared(entries: np.ndarray) -> np.ndarray:
    """The links of one bucket's entries (see :meth:`NearDuplicates._links`)."""
    entries = np.sort(entries)  # by key, then row
    keys, rows = entries >> _ROW_BITS, entries & _ROW_MASK
    same = keys[1:] == keys[:-1]
    if not same.any():
        return np.zeros(0, dtype=np.uint64)
    group = np.cumsum(np.r_[True, ~same])  # group number of each entry
    first = rows[np.flatnonzero(np.r_[True, ~same])][group - 1]
    later = np.flatnonzero(np.r_[False, same])
    return _unique(np.concatenate([(rows[later] << _ROW_BITS) | first[later],
                                   (rows[later] << _ROW_BITS) | rows[later - 1]]))
