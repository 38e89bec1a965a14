"""The identifier's features: the 18 n-gram overlaps of Das & Smith (2009) on tokens and
Porter stems, the extended model's cheap signals, embedding cosine and IDF-weighted word
overlap, and the model feature matrices (lr, extended, encoder, cross)."""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from paramill.twitter.encoder import PretrainedEncoder
from paramill.twitter.tweettext import comparable, tokenize

BASELINE = [f"{kind}_{n}_{m}" for kind in ("tok", "stem") for n in (1, 2, 3) for m in ("p", "r", "f")]
EXTRA = ["char_ratio", "length_ratio", "jaccard", "cosine"]
#: IDF-weighted unigram overlap (precision, recall, F1): the extended models' last columns
#: where the identifier holds document frequencies (identifiers saved before have none)
IDF = ["idf_p", "idf_r", "idf_f"]
IDF_COLUMNS = slice(len(BASELINE) + len(EXTRA), len(BASELINE) + len(EXTRA) + len(IDF))


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
    return _prf(sum((ga & gb).values()), sum(ga.values()), sum(gb.values()))


def _prf(shared: float, total_a: float, total_b: float) -> tuple[float, float, float]:
    """Precision (shared / a's total), recall (shared / b's total) and F1; 0 for an empty side."""
    p = shared / total_a if total_a else 0.0
    r = shared / total_b if total_b else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def words(text: str) -> list[str]:
    return [t.lower() for t in tokenize(text) if not t.startswith(("http://", "https://"))]


def baseline_features(s1: str, s2: str) -> list[float]:
    return _baseline(words(s1), words(s2))


def _baseline(a: list[str], b: list[str]) -> list[float]:
    out: list[float] = []
    for side_a, side_b in ((a, b), (stem(a), stem(b))):
        for n in (1, 2, 3):
            out += prf(side_a, side_b, n)
    return out


def extra_features(s1: str, s2: str) -> list[float]:
    return _extra(s1, s2, words(s1), words(s2))


def _extra(s1: str, s2: str, a: list[str], b: list[str]) -> list[float]:
    """The cheap signals of ``s1``, ``s2`` (whose words are ``a``, ``b``)."""
    from rapidfuzz import fuzz

    sa, sb = set(a), set(b)
    return [fuzz.ratio(comparable(s1), comparable(s2)) / 100.0,
            min(len(a), len(b)) / max(1, len(a), len(b)),
            len(sa & sb) / len(sa | sb) if sa | sb else 0.0]


@dataclass(frozen=True)
class DocumentFrequencies:
    """In how many of ``documents`` distinct sentences each word (:func:`words`) occurs:
    counted on the identifier's training sentences, without their labels."""

    documents: int
    counts: dict[str, int]

    @staticmethod
    def count(sentences: Iterable[str]) -> DocumentFrequencies:
        """Document frequencies over the distinct sentences of ``sentences``."""
        return DocumentFrequencies.of_sets([frozenset(words(s)) for s in set(sentences)])

    @staticmethod
    def of_sets(documents: list[frozenset]) -> DocumentFrequencies:
        """Document frequencies of ``documents``, each one distinct sentence's set of words."""
        counts: Counter = Counter()
        for document in documents:
            counts.update(document)
        return DocumentFrequencies(len(documents), dict(counts))

    def weight(self, word: str) -> float:
        """Inverse document frequency, smoothed: log((N + 1) / (df + 1)); an unseen word
        weighs most."""
        return math.log((self.documents + 1) / (self.counts.get(word, 0) + 1))

    def to_dict(self) -> dict[str, Any]:
        return {"documents": self.documents, "counts": dict(sorted(self.counts.items()))}

    @staticmethod
    def from_dict(data: dict[str, Any]) -> DocumentFrequencies:
        """What :meth:`to_dict` wrote; anything else (a count that is not a whole number
        from 0 to ``documents``) is a ValueError: it would weigh words by NaN or by a
        logarithm of a negative."""
        documents, counts = data.get("documents"), data.get("counts")
        if type(documents) is not int or documents < 0 or not isinstance(counts, dict) or not all(
                isinstance(w, str) and type(n) is int and 0 <= n <= documents
                for w, n in counts.items()):
            raise ValueError("document frequencies must be {documents: N, counts: {word: 0..N}}")
        return DocumentFrequencies(documents, dict(counts))


def word_sets(pairs: list[tuple[str, str]]) -> list[tuple[frozenset, frozenset]]:
    """Each pair's two sets of words (:func:`words`), the IDF overlap's input: tokenised once
    when the overlap is counted under several document frequencies (cross-fitting)."""
    return [(frozenset(words(x)), frozenset(words(y))) for x, y in pairs]


def idf_overlap(sets: list[tuple[frozenset, frozenset]], df: DocumentFrequencies) -> np.ndarray:
    """IDF-weighted unigram overlap of each pair of word sets: precision (shared weight / the
    first side's), recall (/ the second side's) and F1; one row per pair, columns :data:`IDF`."""
    out = np.zeros((len(sets), len(IDF)))
    weight = functools.lru_cache(maxsize=None)(df.weight)
    for i, (a, b) in enumerate(sets):
        # fsum: exact, so the order a set iterates in (which follows the process's string
        # hashing) cannot change the last bits from one run to the next
        out[i] = _prf(math.fsum(map(weight, a & b)), math.fsum(map(weight, a)),
                      math.fsum(map(weight, b)))
    return out


def fold_idf(pairs: list[tuple[str, str]]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """For :func:`~paramill.twitter.identify.evaluation.out_of_fold`: a fold's own copy of a
    feature matrix whose IDF columns (:data:`IDF_COLUMNS`) are recounted under document
    frequencies of the fold's training pairs only, so no test fold's sentence reaches them.
    Each sentence is tokenised once, and each fold's columns are computed once, whatever the
    number of models."""
    tokens = {s: frozenset(words(s)) for pair in pairs for s in pair}
    sets = [(tokens[x], tokens[y]) for x, y in pairs]
    done: dict[bytes, np.ndarray] = {}

    def refit(x: np.ndarray, train: np.ndarray) -> np.ndarray:
        key = np.asarray(train).tobytes()
        if key not in done:
            distinct = {s for i in train for s in pairs[i]}
            done[key] = idf_overlap(sets, DocumentFrequencies.of_sets([tokens[s] for s in distinct]))
        x = x.copy()
        x[:, IDF_COLUMNS] = done[key]
        return x

    return refit


def training_idf(pairs: list[tuple[str, str]], on: bool = True
                 ) -> tuple[DocumentFrequencies | None, Callable | None]:
    """What training with the IDF overlap (``on``) needs: the document frequencies of all the
    training pairs' sentences (for the fitted models) and :func:`fold_idf` (for their
    cross-validation); (None, None) without it."""
    if not on:
        return None, None
    return DocumentFrequencies.count(s for pair in pairs for s in pair), fold_idf(pairs)


def features(pairs: list[tuple[str, str]], extended: bool, encoder=None,
             idf: DocumentFrequencies | None = None) -> np.ndarray:
    """The 18 baseline features; ``extended``: also :data:`EXTRA` (the cosine under
    ``encoder``, 0 without one) and, given document frequencies ``idf``, :data:`IDF`."""
    rows, sets = [], []
    for x, y in pairs:  # each sentence tokenised once, for every group of features
        a, b = words(x), words(y)
        rows.append(_baseline(a, b) + (_extra(x, y, a, b) if extended else []))
        if extended and idf is not None:
            sets.append((frozenset(a), frozenset(b)))
    matrix = np.asarray(rows, dtype=np.float64).reshape(len(pairs), -1)
    if extended:
        cos = np.zeros((len(pairs), 1))
        if encoder is not None and pairs:
            from paramill.embed.model import cosine_rows

            cos[:, 0] = cosine_rows(encoder.encode([x for x, _ in pairs]).astype(np.float64),
                                    encoder.encode([y for _, y in pairs]).astype(np.float64))
        matrix = np.hstack([matrix, cos])
        if idf is not None:
            matrix = np.hstack([matrix, idf_overlap(sets, idf)])
    return matrix


MODELS = ("lr", "extended", "encoder", "cross")


def model_features(pairs: list[tuple[str, str]], which: str, encoder=None,
                   sentence: PretrainedEncoder | None = None, cross=None,
                   idf: DocumentFrequencies | None = None, alignment: bool = False) -> np.ndarray:
    """The feature matrix of model ``which`` (lr, extended, encoder, cross); the IDF overlap
    in the extended ones where document frequencies ``idf`` are given; for encoder, the
    sentence encoder's cosine and, with ``alignment``, its token alignment
    (:meth:`~paramill.twitter.encoder.PretrainedEncoder.pair_columns`)."""
    if which == "lr":
        return features(pairs, False)
    x = features(pairs, True, encoder, idf)
    if which in ("encoder", "cross"):
        scorer = sentence if which == "encoder" else cross
        if scorer is None:
            raise ValueError(f"model {which} needs its {'sentence' if which == 'encoder' else 'cross-'}encoder")
        if which == "encoder":
            columns = scorer.pair_columns(pairs, alignment)
        else:
            columns = scorer.score(pairs)[:, None] if pairs else np.zeros((0, 1))
        x = np.hstack([x, columns])
    return x
