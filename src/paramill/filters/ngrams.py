"""n-gram counting shared by the overlap and BLEU filters: per pair in Python (the
reference), and for a whole batch at once with numpy and polars (what the filters use)."""

from __future__ import annotations

from collections import Counter

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


def _side(texts: pl.Series, lowercase: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(token hashes, pair index of each token, tokens per pair) of one side of a batch."""
    expr = pl.col("t").str.to_lowercase() if lowercase else pl.col("t")
    tokens = pl.DataFrame({"t": texts}).select(expr.str.extract_all(TOKEN_PATTERN))["t"]
    lengths = tokens.list.len().fill_null(0).to_numpy().astype(np.int64)
    ids = tokens.explode().drop_nulls().hash(0).to_numpy()
    rows = np.repeat(np.arange(len(lengths), dtype=np.uint64), lengths)
    return ids, rows, lengths


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


def batch_matches(refs: pl.Series, cands: pl.Series, orders: range | list[int], lowercase: bool = True
                  ) -> tuple[dict[int, np.ndarray], np.ndarray, np.ndarray]:
    """Clipped shared n-grams of every pair of a batch, per order, and both sides' token
    counts — the numbers :func:`matches` gives pair by pair, computed at once (64-bit hashed
    n-grams: a collision is vanishingly rare)."""
    ref, cand = _side(refs, lowercase), _side(cands, lowercase)
    size = len(ref[2])
    out = {}
    for n in orders:
        rk, rr = _grams(ref[0], ref[1], n)
        ck, _ = _grams(cand[0], cand[1], n)
        a = pl.DataFrame({"k": rk, "row": rr}).group_by("k").agg(a=pl.len(), row=pl.first("row"))
        b = pl.DataFrame({"k": ck}).group_by("k").agg(b=pl.len())
        shared = a.join(b, on="k").select("row", m=pl.min_horizontal("a", "b"))
        out[n] = np.bincount(shared["row"].to_numpy().astype(np.int64),
                             weights=shared["m"].to_numpy().astype(np.float64), minlength=size)
    return out, ref[2], cand[2]
