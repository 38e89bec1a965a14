"""Paraphrase score: cosine of reference and candidate under a paraphrastic embedding model
(ParaNMT §3.2; :mod:`paramill.embed`). The model is a configured pretrained one, or one
bootstrapped by training on the held-out pairs (a random sample of the unfiltered pairs).
ParaNMT ranked pairs by it, cut them into tenths, and counted pairs per range (Table 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from paramill.filters.base import Batch, Column, Direction, ModelFilter
from paramill.config.typed import Component, Settings, setting


@dataclass(frozen=True)
class ParascoreSettings(Settings):
    model: str | None = setting(
        None, "A trained paramill embedding model; null bootstraps one on the held-out pairs.")
    components: tuple[Component, ...] = setting(
        ("word",), "Components of the bootstrapped model.", minItems=1)
    batch_size: int = setting(
        512, "Sentences per encoding batch when scoring; bounds the job's memory (the same "
        "scores within float noise).", minimum=1, launch=True)


@dataclass(frozen=True)
class Parascore(ModelFilter):
    name = "parascore"
    doc = "Paraphrase score (cosine under an embedding model)."
    order = 7
    settings = ParascoreSettings
    models = {"model": "parascore"}
    memory_batch = "batch_size"
    model: str = ""
    batch_size: int = 512

    def load(self) -> Any:
        from paramill.embed.model import load_model

        return load_model(self.model)

    def columns(self) -> list[Column]:
        return [Column("parascore", Direction.HIGHER, "cosine of reference and candidate embeddings")]

    def score(self, batch: Batch) -> dict[str, Any]:
        from paramill.embed.model import cosine_rows

        enc = self.loaded
        a = enc.encode(batch.refs, self.batch_size)
        b = enc.encode(batch.candidates, self.batch_size)
        return {"parascore": cosine_rows(a.astype(np.float64), b.astype(np.float64))}
