"""Pearson and Spearman correlation in numpy (what STS, SimLex and the corpus analysis
report). scipy.stats gives the same values, but importing it costs about 2 s a job, more
than the evaluation itself on the sample.

Both return NaN where the correlation is undefined: fewer than two values, or a constant
input (scipy warns and returns NaN there too).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pearson(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Pearson's r of two equally long sequences."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"pearson needs two 1-d sequences of one length, got {a.shape} and {b.shape}")
    if len(a) < 2:
        return float("nan")
    a, b = a - a.mean(), b - b.mean()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return float("nan")
    return float(np.clip(np.dot(a / na, b / nb), -1.0, 1.0))


def ranks(x: Sequence[float] | np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties given the mean of the ranks they span (scipy's ``rankdata`` default)."""
    a = np.asarray(x, dtype=np.float64)
    order = np.argsort(a, kind="mergesort")
    ordered = a[order]
    starts = np.concatenate([[True], ordered[1:] != ordered[:-1]])
    group = np.cumsum(starts) - 1  # tie group of each sorted position
    first = np.flatnonzero(starts)
    last = np.concatenate([first[1:], [len(a)]]) - 1
    out = np.empty(len(a), dtype=np.float64)
    out[order] = ((first + last) / 2.0 + 1.0)[group]
    return out


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Spearman's rho: Pearson's r of the ranks (ties averaged)."""
    return pearson(ranks(x), ranks(y))
