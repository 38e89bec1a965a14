"""n-gram overlap of reference and candidate (Wieting 2017 §5.6).

"counting n-grams of a given order in both the reference and translation, then dividing
the number of shared n-grams by the total number of n-grams in the reference or
translation, whichever has fewer." Shared n-grams are clipped counts (an n-gram seen twice
on one side and once on the other is shared once). A side too short to have an n-gram of
the order gives 0. Tokens are lower-cased by default. Bounds tuned: lower {0,.1,.2,.3}
x upper {.6,...,1.0}.

The filter counts a whole batch at once (:func:`paramill.filters.ngrams.batch_matches`, over
the job's threads);
:func:`ngram_overlap` is the pair-by-pair definition it is tested against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np

from paramill.filters.base import Batch, Column, Direction, Filter
from paramill.filters.ngrams import matches, ngram_counts
from paramill.filters.token_table import ORDERS
from paramill.config.typed import setting


def ngram_overlap(a: list[str], b: list[str], n: int) -> float:
    """Shared order-``n`` n-grams over the n-gram count of the side with fewer."""
    fewer = min(len(a), len(b)) - n + 1
    if fewer <= 0:
        return 0.0
    return matches(ngram_counts(a, n), ngram_counts(b, n)) / fewer


@dataclass(frozen=True)
class Overlap(Filter):
    name = "overlap"
    doc = ("n-gram overlap (shared n-grams over the count of the side with fewer), columns "
           "overlap_N.")
    order = 3
    reads_tokens = True
    orders: tuple[Annotated[int, {"minimum": 1}], ...] = setting(
        (1, 2, 3), "n-gram orders.", minItems=1)
    lowercase: bool = setting(True, "Lower-case before counting.")

    def __post_init__(self):
        if not self.orders or min(self.orders) < 1:
            raise ValueError(f"overlap orders must be positive integers, not {list(self.orders)}")
        object.__setattr__(self, "orders", tuple(self.orders))

    def covered_by_tokens(self) -> bool:
        return self.lowercase and max(self.orders) <= ORDERS[-1]

    def columns(self) -> list[Column]:
        return [Column(f"overlap_{n}", Direction.RANGE,
                       f"shared {n}-grams / {n}-grams of the shorter side") for n in self.orders]

    def score(self, batch: Batch) -> dict[str, Any]:
        shared, len_ref, len_cand = batch.matches(max(self.orders), self.lowercase)
        out = {}
        for n in self.orders:
            fewer = np.minimum(len_ref, len_cand) - n + 1
            out[f"overlap_{n}"] = np.divide(shared[n], fewer, out=np.zeros(len(fewer)), where=fewer > 0)
        return out
