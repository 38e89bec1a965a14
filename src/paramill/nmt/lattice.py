"""Subword regularisation over the whole lattice, seeded: what SentencePiece's own sampler
does with ``nbest_size=-1`` (Kudo 2018, forward-filtering backward-sampling: a segmentation
x drawn with P proportional to P(x)^alpha), from a generator it is given. SentencePiece's
takes no seed (google/sentencepiece#609), and the stand-in before this, one of the
sentence's 64 best, left 90% of a Czech news sentence's words at their best segmentation
where SentencePiece's own sampler leaves 35% (``benchmarks/nmt/subword_sampling.py``): a
fraction of the regularisation the setting asks for.

A unigram model's pieces do not cross a word boundary (``split_by_whitespace``, the
default; :func:`sampler` returns None for a model whose pieces do, or that falls back to
bytes), so a sentence's lattice is its words' lattices end to end and P(x)^alpha their
product: each space-separated word is drawn on its own. A word's lattice is made from its
normalised form (``normalize``: the dummy prefix, NFKC) with the model's pieces and scores,
an unknown character as SentencePiece scores it (the lowest piece score less 10), its
forward sums kept for the next time the word comes (:data:`WORDS`). Its best path is
SentencePiece's Viterbi segmentation (tested on every word of a test text).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import random
from typing import Any, Callable

#: SentencePiece's word boundary
MARK = "\u2581"
#: its penalty for an unknown character, below the lowest piece score (unigram_model.cc)
UNK_PENALTY = 10.0
#: words whose lattices are kept (a few hundred bytes each)
WORDS = 1 << 16

def words(pieces: list[str]) -> list[tuple[str, ...]]:
    """The pieces of a segmentation grouped by word (each word's begin with the boundary)."""
    grouped: list[list[str]] = []
    for piece in pieces:
        if piece.startswith(MARK) or not grouped:
            grouped.append([])
        grouped[-1].append(piece)
    return [tuple(w) for w in grouped]


_MADE: dict[tuple[int, float], tuple[Any, Any]] = {}


def sampler(sp: Any, alpha: float) -> Callable[[str, random.Random], list[str]] | None:
    """``draw(text, rng)``: the pieces of one segmentation of ``text`` drawn from the whole
    lattice of the SentencePiece model ``sp`` with P proportional to P(x)^alpha; None where
    the model's pieces span words or it falls back to bytes."""
    key = (id(sp), alpha)  # the model is kept with its sampler, so its id is no other's
    if key not in _MADE:
        _MADE[key] = (sp, _make(sp, alpha))
    return _MADE[key][1]


def _make(sp: Any, alpha: float):
    size = sp.get_piece_size()
    pieces = [sp.id_to_piece(i) for i in range(size)]
    if any(sp.is_byte(i) for i in range(size)) or any(MARK in p[1:] for p in pieces):
        return None
    kept = [i for i in range(size) if not (sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i))]
    if not kept:
        return None
    table = {pieces[i]: (i, alpha * sp.get_score(i)) for i in kept}
    longest = max(map(len, table))
    unk, unknown = sp.unk_id(), alpha * (min(sp.get_score(i) for i in kept) - UNK_PENALTY)

    @functools.lru_cache(maxsize=WORDS)
    def lattice(word: str) -> list[tuple[list[tuple[int, int]], list[float] | None]]:
        """For each position of the normalised ``word``, the arcs into it (start, piece) and
        their cumulative weights (None for one arc): an arc's weight is the mass of the paths
        through it (forward sum at its start x P(piece)^alpha)."""
        text = sp.normalize(word)
        n = len(text)
        ends: list[list[tuple[int, int, float]]] = [[] for _ in range(n + 1)]
        for i in range(n):
            single = False
            for length in range(1, min(longest, n - i) + 1):
                hit = table.get(text[i:i + length])
                if hit is not None:
                    ends[i + length].append((i, hit[0], hit[1]))
                    single = single or length == 1
            if not single:
                ends[i + 1].append((i, unk, unknown))
        forward = [0.0] + [-math.inf] * n
        into: list[tuple[list[tuple[int, int]], list[float] | None]] = [([], None)]
        for j in range(1, n + 1):
            values = [forward[i] + w for i, _, w in ends[j]]
            top = max(values)
            weights = [math.exp(v - top) for v in values]
            forward[j] = top + math.log(sum(weights))
            arcs = [(i, piece) for i, piece, _ in ends[j]]
            into.append((arcs, list(itertools.accumulate(weights)) if len(arcs) > 1 else None))
        return into

    def draw(text: str, rng: random.Random) -> list[str]:
        out: list[str] = []
        for word in text.split(" "):
            if not word:
                continue
            into = lattice(word)
            ids = []
            j = len(into) - 1
            while j > 0:  # backward: an arc into j, as likely as the paths through it
                arcs, cumulative = into[j]
                # as rng.choices(arcs, cum_weights=cumulative) draws, without its overhead
                j, piece = arcs[0] if cumulative is None else arcs[
                    bisect.bisect(cumulative, rng.random() * cumulative[-1], 0, len(arcs) - 1)]
                ids.append(piece)
            for i in reversed(ids):
                if i != unk or not out or out[-1] != pieces[unk]:  # a run of unknown characters
                    out.append(pieces[i])                         # is one piece, as in SentencePiece
        return out

    return draw
