"""n-gram counting shared by the overlap and BLEU filters."""

from __future__ import annotations

from collections import Counter


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
