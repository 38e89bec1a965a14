"""Dual conditional cross-entropy of the bitext pair (ParaBank 2 §3.1, after
Junczys-Dowmunt 2018): with H_f the CS→EN model's NLL per token of the English reference
given the Czech source and H_b the EN→CS model's NLL of the Czech given the English,

    dual_xent = |H_f - H_b| + (H_f + H_b) / 2        (lower is better)

A pair both models find likely, and about equally likely, scores low; misaligned or noisy
bitext scores high. ParaBank 2 kept pairs whose model score was below 3.5. The score
belongs to the source pair, so every candidate of a pair carries the same value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from paramill.filters.base import Batch, Column, Direction, ModelFilter
from paramill.nmt.score import load_scorer, nll_per_token
from paramill.config.typed import Device, setting


def dual_cross_entropy(h_forward: float, h_backward: float) -> float:
    return abs(h_forward - h_backward) + 0.5 * (h_forward + h_backward)


@dataclass(frozen=True)
class DualXent(ModelFilter):
    name = "dual_xent"
    doc = ("Dual cross-entropy of the bitext pair: |H(en|cs) - H(cs|en)| + their mean (ParaBank 2 "
           "kept < 3.5).")
    order = 8
    models = {"cs_en": "ct2:cs-en", "en_cs": "ct2:en-cs", "cs_spm": "spm:cs", "en_spm": "spm:en"}
    needs_source = True
    memory_batch = "batch_size"
    cs_en: str = ""  # CTranslate2 model directories
    en_cs: str = ""
    cs_spm: str = ""
    en_spm: str = ""
    batch_size: int = setting(
        32, "A scoring batch's size, in batch_type units; bounds the job's memory (the same "
        "scores within float noise).", minimum=1, launch=True)
    batch_type: Literal["examples", "tokens"] = setting(
        "examples", "examples: batch_size pairs a scoring batch; tokens: as many, longest "
        "source first, as fit batch_size subwords padded (at least one; CTranslate2's rule), "
        "which long sentences cannot break (e.g. batch_size 4096).", launch=True)
    device: Device = setting("auto", "auto: cuda when a GPU is visible.")
    threads: int = 1

    def load(self) -> tuple[Any, Any, Any, Any]:
        from paramill.nmt.subwords import Segmenter, check_fits

        cs, en = Segmenter(self.cs_spm), Segmenter(self.en_spm)
        check_fits(cs, en, self.cs_en)
        check_fits(en, cs, self.en_cs)
        return (load_scorer(self.cs_en, self.device, self.threads),
                load_scorer(self.en_cs, self.device, self.threads), cs, en)

    def columns(self) -> list[Column]:
        return [Column("dual_xent", Direction.LOWER,
                       "|H(en|cs) - H(cs|en)| + mean of both, per token, of the bitext pair")]

    def pair_scores(self, cs: list[str], en: list[str]) -> list[tuple[float, float, float]]:
        """(H_f, H_b, dual_xent) of each (cs, en) pair."""
        fwd, bwd, cs_seg, en_seg = self.loaded
        cs_pieces, en_pieces = cs_seg.encode(cs), en_seg.encode(en)
        h_f = nll_per_token(fwd, cs_pieces, en_pieces, self.batch_size, self.batch_type)
        h_b = nll_per_token(bwd, en_pieces, cs_pieces, self.batch_size, self.batch_type)
        return [(f, b, dual_cross_entropy(f, b)) for f, b in zip(h_f, h_b)]

    def score(self, batch: Batch) -> dict[str, Any]:
        unique = batch.frame.unique(subset="pair_id", keep="first", maintain_order=True)
        scores = self.pair_scores(unique.get_column("cs").to_list(),
                                  unique.get_column("en_ref").to_list())
        by_pair = {pid: s[2] for pid, s in zip(unique.get_column("pair_id").to_list(), scores)}
        return {"dual_xent": [by_pair[p] for p in batch.column("pair_id")]}
