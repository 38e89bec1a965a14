"""The identifier's features: the 18 n-gram overlaps of Das & Smith (2009) on tokens and
Porter stems, the extended model's cheap signals and embedding cosine, and the model
feature matrices (lr, extended, encoder, cross)."""

from __future__ import annotations

import functools
from collections import Counter

import numpy as np

from paramill.twitter.encoder import PretrainedEncoder
from paramill.twitter.text import comparable, tokenize

BASELINE = [f"{kind}_{n}_{m}" for kind in ("tok", "stem") for n in (1, 2, 3) for m in ("p", "r", "f")]
EXTRA = ["char_ratio", "length_ratio", "jaccard", "cosine"]


@functools.lru_cache(maxsize=1 << 18)
def _stem_word(word: str) -> str:
    """Porter stem of one word, memoised (bounded): words repeat Zipf-like, and the stemmer
    was 90% of the feature time."""
    return _porter().stemWord(word)


@functools.lru_cache(maxsize=1)
def _porter():
    import snowballstemmer

    return snowballstemmer.stemmer("porter")


def stem(tokens: list[str]) -> list[str]:
    return [_stem_word(t) for t in tokens]


def _grams(tokens: list[str], n: int) -> Counter:
    return Counter(zip(*(tokens[i:] for i in range(n))))


def prf(a: list[str], b: list[str], n: int) -> tuple[float, float, float]:
    """Precision (shared / n-grams of a), recall (shared / n-grams of b), F1; clipped counts."""
    ga, gb = _grams(a, n), _grams(b, n)
    shared = sum((ga & gb).values())
    p = shared / sum(ga.values()) if ga else 0.0
    r = shared / sum(gb.values()) if gb else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def words(text: str) -> list[str]:
    return [t.lower() for t in tokenize(text) if not t.startswith(("http://", "https://"))]


def baseline_features(s1: str, s2: str) -> list[float]:
    a, b = words(s1), words(s2)
    out: list[float] = []
    for side_a, side_b in ((a, b), (stem(a), stem(b))):
        for n in (1, 2, 3):
            out += prf(side_a, side_b, n)
    return out


def extra_features(s1: str, s2: str) -> list[float]:
    from rapidfuzz import fuzz

    a, b = words(s1), words(s2)
    sa, sb = set(a), set(b)
    return [fuzz.ratio(comparable(s1), comparable(s2)) / 100.0,
            min(len(a), len(b)) / max(1, len(a), len(b)),
            len(sa & sb) / len(sa | sb) if sa | sb else 0.0]


def features(pairs: list[tuple[str, str]], extended: bool, encoder=None) -> np.ndarray:
    rows = [baseline_features(x, y) + (extra_features(x, y) if extended else []) for x, y in pairs]
    matrix = np.asarray(rows, dtype=np.float64).reshape(len(pairs), -1)
    if extended:
        cos = np.zeros((len(pairs), 1))
        if encoder is not None and pairs:
            from paramill.embed.model import cosine_rows

            cos[:, 0] = cosine_rows(encoder.encode([x for x, _ in pairs]).astype(np.float64),
                                    encoder.encode([y for _, y in pairs]).astype(np.float64))
        matrix = np.hstack([matrix, cos])
    return matrix


MODELS = ("lr", "extended", "encoder", "cross")


def model_features(pairs: list[tuple[str, str]], which: str, encoder=None,
                   sentence: PretrainedEncoder | None = None, cross=None) -> np.ndarray:
    """The feature matrix of model ``which`` (lr, extended, encoder, cross)."""
    if which == "lr":
        return features(pairs, False)
    x = features(pairs, True, encoder)
    if which in ("encoder", "cross"):
        scorer = sentence if which == "encoder" else cross
        if scorer is None:
            raise ValueError(f"model {which} needs its {'sentence' if which == 'encoder' else 'cross-'}encoder")
        column = scorer.cosine(pairs) if which == "encoder" else scorer.score(pairs)
        x = np.hstack([x, column[:, None] if pairs else np.zeros((0, 1))])
    return x
