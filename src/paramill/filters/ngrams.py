"""n-gram counting shared by the overlap and BLEU filters: per pair in Python (the
reference), and for a whole batch at once (what the filters use).

The batch path compares tokens, not n-grams: for pairs of up to ``DENSE_MAX`` tokens a side,
each pair's reference × candidate token-equality matrix (and the reference's own) is built
with numpy, padded to a few widths, each row a 64-bit mask (bit j of row i: reference token
i equals candidate token j). An order-n match at (i, j) is a diagonal run of n equal tokens:
row i's mask ANDed with row i+n-1's shifted n-1 bits, and the candidate's occurrences of the
reference n-gram at i are that mask's bits (``np.bitwise_count``). The clipped count of an
n-gram seen a times in the reference and b times in the candidate comes out as the sum, over
its a reference positions, of min(a, b) / a. Work is split over threads (numpy releases the
GIL). Longer pairs take the hashed path: 64-bit n-gram keys counted and joined with polars.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import polars as pl

from paramill.text import TOKEN_PATTERN

_MIX = np.uint64(0x9E3779B97F4A7C15)


def ngram_counts(tokens: list[str], n: int) -> Counter[tuple[str, ...]]:
    """Counts of the order-``n`` n-grams of ``tokens``."""
    if n == 1:
        return Counter((t,) for t in tokens)
    return Counter(zip(*(tokens[i:] for i in range(n))))


def matches(a: Counter, b: Counter) -> int:
    """Shared n-grams, clipped: sum over n-grams of min(count in a, count in b)."""
    if len(a) > len(b):
        a, b = b, a
    return sum(min(c, b[g]) for g, c in a.items() if g in b)


def _tokens(tokens: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lengths = tokens.list.len().fill_null(0).to_numpy().astype(np.int64)
    ids = tokens.explode().drop_nulls().hash(0).to_numpy()
    rows = np.repeat(np.arange(len(lengths), dtype=np.uint64), lengths)
    return ids, rows, lengths


def _sides(refs: pl.Series, cands: pl.Series, lowercase: bool):
    """(token hashes, pair index of each token, tokens per pair) of both sides of a batch
    (tokenised in one polars query, the two sides in parallel)."""
    def expr(col: str) -> pl.Expr:
        return (pl.col(col).str.to_lowercase() if lowercase else pl.col(col)).str.extract_all(TOKEN_PATTERN)

    tokens = pl.DataFrame({"r": refs, "c": cands}).select(r=expr("r"), c=expr("c"))
    return _tokens(tokens["r"]), _tokens(tokens["c"])


def _side(texts: pl.Series, lowercase: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One side of :func:`_sides`."""
    return _sides(texts, texts, lowercase)[0]


def _grams(ids: np.ndarray, rows: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Keys of the order-n n-grams (hash of the tokens and the pair) and their pair."""
    m = len(ids) - n + 1
    if m <= 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64)
    inside = rows[:m] == rows[n - 1:n - 1 + m]  # the n-gram does not cross pairs
    with np.errstate(over="ignore"):
        key = ids[:m].copy()
        for j in range(1, n):
            key = key * _MIX + ids[j:j + m]
        key = key * _MIX + rows[:m]
    return key[inside], rows[:m][inside]


def _hashed(ref, cand, orders, size: int) -> dict[int, np.ndarray]:
    """Clipped matches per order by hashed n-gram keys (any length)."""
    out = {}
    for n in orders:
        rk, rr = _grams(ref[0], ref[1], n)
        ck, _ = _grams(cand[0], cand[1], n)
        a = pl.DataFrame({"k": rk, "row": rr}).group_by("k").agg(a=pl.len(), row=pl.first("row"))
        b = pl.DataFrame({"k": ck}).group_by("k").agg(b=pl.len())
        shared = a.join(b, on="k").select("row", m=pl.min_horizontal("a", "b"))
        out[n] = np.bincount(shared["row"].to_numpy().astype(np.int64),
                             weights=shared["m"].to_numpy().astype(np.float64), minlength=size)
    return out


#: pad widths of the dense path; pairs with a longer side take the hashed path
WIDTHS = (8, 16, 24, 32, 48, 64)
DENSE_MAX = WIDTHS[-1]
_UNIT = 4096  # pairs per dense work unit (a 64-wide unit holds 16 MB per boolean matrix)


def _padded(ids: np.ndarray, starts: np.ndarray, lengths: np.ndarray, width: int, fill: int) -> np.ndarray:
    """(pairs, width) token hashes, ``fill`` past each pair's end."""
    out = np.full((len(starts), width), np.uint64(fill), dtype=np.uint64)
    pos = np.arange(width)[None, :]
    inside = pos < lengths[:, None]
    out[inside] = ids[(starts[:, None] + pos)[inside]]
    return out


#: widths up to which a mask is built one candidate column at a time (fewer passes over
#: memory than comparing the whole matrix and packing it, measured on 2 cores)
_COLUMNS_MAX = 24


def _equal_masks(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(pairs, width of ``a``) uint64: bit j of [p, i] set where ``a[p, i] == b[p, j]``
    (``b`` at most 64 wide)."""
    width = b.shape[1]
    if width <= _COLUMNS_MAX:
        out = np.zeros(a.shape, np.uint64)
        for j in range(width):
            out |= (a == b[:, j:j + 1]).astype(np.uint64) << np.uint64(j)
        return out
    packed = np.packbits(a[:, :, None] == b[:, None, :], axis=2, bitorder="little")
    out = packed[:, :, 0].astype(np.uint64)
    for k in range(1, packed.shape[2]):
        out |= packed[:, :, k].astype(np.uint64) << np.uint64(8 * k)
    return out


def _dense(ref_tokens: np.ndarray, cand_tokens: np.ndarray, orders: list[int]) -> np.ndarray:
    """Clipped matches (pairs, len(orders)) from padded token matrices of at most 64 places.
    The two sides are padded with different fills, so padding never matches anything."""
    equal, self_equal = _equal_masks(ref_tokens, cand_tokens), _equal_masks(ref_tokens, ref_tokens)
    out = np.zeros((len(ref_tokens), len(orders)))
    e, s = equal, self_equal
    for n in range(1, max(orders) + 1):
        if n > 1:  # the n-gram at (i, j) matches when the (n-1)-gram does and the next tokens
            shift = np.uint64(n - 1)
            e = e[:, :-1] & (equal[:, n - 1:] >> shift)
            s = s[:, :-1] & (self_equal[:, n - 1:] >> shift)
        if n in orders and e.shape[1]:
            b = np.bitwise_count(e)  # candidate occurrences of the reference n-gram at i
            a = np.bitwise_count(s)  # its reference occurrences (>= 1 where b > 0)
            share = np.where(b > 0, np.minimum(a, b) / np.maximum(a, 1), 0.0)
            out[:, orders.index(n)] = np.rint(share.sum(axis=1))
    return out


def batch_matches(refs: pl.Series, cands: pl.Series, orders: range | list[int], lowercase: bool = True,
                  threads: int | None = None) -> tuple[dict[int, np.ndarray], np.ndarray, np.ndarray]:
    """Clipped shared n-grams of every pair of a batch, per order, and both sides' token
    counts — the numbers :func:`matches` gives pair by pair, computed at once (hashed
    tokens: a collision is vanishingly rare). ``threads``: polars' pool size by default."""
    ref, cand = _sides(refs, cands, lowercase)
    orders = list(orders)
    size = len(ref[2])
    ref_len, cand_len = ref[2], cand[2]
    ref_start = np.concatenate([[0], np.cumsum(ref_len)[:-1]]).astype(np.int64)
    cand_start = np.concatenate([[0], np.cumsum(cand_len)[:-1]]).astype(np.int64)
    longest = np.maximum(ref_len, cand_len)
    units, low = [], 0
    for width in WIDTHS:
        chosen = np.nonzero((longest > low) & (longest <= width))[0]
        low = width
        units += [(chosen[i:i + _UNIT], width) for i in range(0, len(chosen), _UNIT)]

    def run(unit):
        rows, width = unit
        return rows, _dense(_padded(ref[0], ref_start[rows], ref_len[rows], width, 1),
                            _padded(cand[0], cand_start[rows], cand_len[rows], width, 2), orders)

    flat = np.zeros((size, len(orders)))
    with ThreadPoolExecutor(max(1, threads or pl.thread_pool_size())) as pool:
        for rows, counts in pool.map(run, units):
            flat[rows] = counts
    out = {n: flat[:, i].copy() for i, n in enumerate(orders)}
    long = longest > DENSE_MAX
    if long.any():
        keep_ref, keep_cand = long[ref[1].astype(np.int64)], long[cand[1].astype(np.int64)]
        hashed = _hashed((ref[0][keep_ref], ref[1][keep_ref]), (cand[0][keep_cand], cand[1][keep_cand]),
                         orders, size)
        for n in orders:
            out[n] += hashed[n]
    return out, ref_len, cand_len
