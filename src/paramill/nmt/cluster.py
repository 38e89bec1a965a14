"""k-means (medoids) under Levenshtein distance, with a fixed reference cluster
(ParaBank 2 §2.3).

Items are token sequences (lower-cased SentencePiece pieces without punctuation; see
:func:`cluster_units`); the distance is the edit distance between sequences (rapidfuzz).
Cluster 0 is centred on the reference and never re-centred. The other ``k`` centres are
chosen furthest-first: each next centre is the item furthest from every centre chosen so
far, the reference included. Items go to their nearest centre (ties to the lower cluster
id, so the reference cluster wins ties); each non-reference centre moves to its cluster's
medoid (the member with the least summed distance to the others; ties to the lower item).
Iterate until nothing changes or ``max_iter``.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cdist

REFERENCE = 0


def _is_punctuation(piece: str) -> bool:
    text = piece.replace("\u2581", "")
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


def cluster_units(pieces: list[str]) -> list[str]:
    """Lower-cased pieces with punctuation-only pieces (and bare word-boundary marks) dropped."""
    out = []
    for piece in pieces:
        if _is_punctuation(piece) or piece == "\u2581":
            continue
        out.append(piece.lower())
    return out


@dataclass
class Clustering:
    assignment: list[int]  # cluster per item; 0 = the reference's
    centres: list[int]  # item index of each non-reference cluster's centre (cluster i+1)
    iterations: int
    converged: bool


def kmedoids(items: list[list[str]], reference: list[str], k: int = 8, max_iter: int = 20,
             workers: int = 1) -> Clustering:
    n = len(items)
    if n == 0:
        return Clustering([], [], 0, True)
    dist = cdist(items, items, scorer=Levenshtein.distance, dtype=np.int32, workers=workers)
    to_ref = np.array([Levenshtein.distance(item, reference) for item in items], dtype=np.int64)
    # furthest-first initialisation, starting from the reference
    nearest = to_ref.copy()
    centres: list[int] = []
    for _ in range(min(k, n)):
        i = int(np.argmax(nearest))
        if nearest[i] == 0:
            break  # every item coincides with a centre already
        centres.append(i)
        nearest = np.minimum(nearest, dist[i])
    assignment = None
    converged = False
    iterations = 0
    for iterations in range(1, max_iter + 1):
        table = np.vstack([to_ref[None, :]] + [dist[c][None, :] for c in centres])  # clusters x items
        new = table.argmin(axis=0).tolist()
        new_centres = []
        for c, centre in enumerate(centres, start=1):
            members = [j for j, a in enumerate(new) if a == c]
            if not members:
                new_centres.append(centre)
                continue
            sub = dist[np.ix_(members, members)].sum(axis=1)
            new_centres.append(members[int(np.argmin(sub))])
        if new == assignment and new_centres == centres:
            converged = True
            break
        assignment, centres = new, new_centres
    assert assignment is not None
    return Clustering(assignment, centres, iterations, converged)


def best_per_cluster(clustering: Clustering, scores: list[float], n: int) -> list[tuple[int, int]]:
    """(item, cluster) of the best-scored (lowest) item of each non-reference cluster, best
    first, at most ``n``."""
    best: dict[int, int] = {}
    for i, cluster in enumerate(clustering.assignment):
        if cluster == REFERENCE:
            continue
        if cluster not in best or (scores[i], i) < (scores[best[cluster]], best[cluster]):
            best[cluster] = i
    ranked = sorted(best.items(), key=lambda kv: (scores[kv[1]], kv[1]))
    return [(item, cluster) for cluster, item in ranked[:n]]
