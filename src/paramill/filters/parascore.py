"""Paraphrase score: cosine of reference and candidate under a paraphrastic embedding model
(ParaNMT §3.2; :mod:`paramill.embed`). The model is a configured pretrained one, or one
bootstrapped by training on the held-out pairs (a random sample of the unfiltered pairs).
ParaNMT ranked pairs by it, cut them into tenths, and counted pairs per range (Table 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from paramill.embed.model import cosine_rows
from paramill.filters.base import Batch, Column, Direction, Filter


@dataclass(frozen=True)
class Parascore(Filter):
    name = "parascore"
    model: str = ""
    batch_size: int = 512
    _encoder: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        from paramill.embed.model import load_model

        object.__setattr__(self, "_encoder", load_model(self.model))

    def columns(self) -> list[Column]:
        return [Column("parascore", Direction.HIGHER, "cosine of reference and candidate embeddings")]

    def score(self, batch: Batch) -> dict[str, Any]:
        enc = self._encoder
        a = enc.encode(batch.refs, self.batch_size)
        b = enc.encode(batch.candidates, self.batch_size)
        return {"parascore": cosine_rows(a.astype(np.float64), b.astype(np.float64))}
