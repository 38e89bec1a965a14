"""Translation cost: the forward model's negative log-likelihood per target subword
(Wieting 2017 §5.5; upper bound tuned over 0.2 ... 1.0). Computed during decoding and
carried in the candidate table's ``fwd_nll``; this filter exposes it as a score column."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from paramill.filters.base import Batch, Column, Direction, Filter


@dataclass(frozen=True)
class Cost(Filter):
    name = "cost"
    doc = "Translation cost (NLL per subword, from decoding)."
    order = 2
    needs_decoder = True

    def columns(self) -> list[Column]:
        return [Column("cost", Direction.LOWER, "translation NLL per target subword (fwd_nll)")]

    def score(self, batch: Batch) -> dict[str, Any]:
        return {"cost": batch.column("fwd_nll")}
