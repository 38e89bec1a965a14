"""Smoothed sentence BLEU of the candidate against the reference (Wieting 2017 §5.6).

The paper uses "a smoothed sentence-level BLEU variant from Nakov et al. (2012) that uses
smoothing for all n-gram lengths and also smooths the brevity penalty": ``nakov`` (the
default) adds 1 to the matches and to the n-gram count of every order 1..4 and 1 to the
reference length in the brevity penalty, BP = exp(min(0, 1 - (r+1)/c)). The other methods
(``exp``, ``add-k``, ``floor``, ``none``) are sacrebleu's own, computed by sacrebleu's
``BLEU.compute_bleu`` from the same counts (so they equal ``sacrebleu.sentence_bleu`` with
``tokenize="none"`` on the project's tokens). Scores are in [0, 1]. The filter counts a
whole batch at once; :func:`sentence_bleu` is the pair-by-pair definition it is tested
against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from paramill.filters.base import Batch, Column, Direction, Filter
from paramill.filters.ngrams import matches, ngram_counts
from paramill.config.typed import setting

METHODS = ("nakov", "exp", "add-k", "floor", "none")
ORDER = 4


def bleu_counts(hyp: list[str], ref: list[str], order: int = 4) -> tuple[list[int], list[int]]:
    """Clipped n-gram matches and hypothesis n-gram counts for n = 1..order."""
    correct, total = [], []
    for n in range(1, order + 1):
        h = ngram_counts(hyp, n)
        correct.append(matches(h, ngram_counts(ref, n)))
        total.append(max(0, len(hyp) - n + 1))
    return correct, total


def sentence_bleu(hyp: list[str], ref: list[str], method: str = "nakov",
                  smooth_value: float | None = None, order: int = 4) -> float:
    """Sentence BLEU in [0, 1] of token lists ``hyp`` against ``ref``."""
    if method not in METHODS:
        raise ValueError(f"BLEU smoothing must be one of {METHODS}, not {method!r}")
    if not hyp:
        return 0.0
    correct, total = bleu_counts(hyp, ref, order)
    if method == "nakov":
        k = 1.0 if smooth_value is None else smooth_value
        log_p = sum(math.log((m + k) / (t + k)) for m, t in zip(correct, total)) / order
        bp = min(0.0, 1.0 - (len(ref) + k) / len(hyp))
        return math.exp(log_p + bp)
    from sacrebleu.metrics.bleu import BLEU

    score = BLEU.compute_bleu(correct, total, len(hyp), len(ref), smooth_method=method,
                              smooth_value=smooth_value, effective_order=True,
                              max_ngram_order=order)
    return score.score / 100.0


@dataclass(frozen=True)
class Bleu(Filter):
    name = "bleu"
    doc = "Smoothed sentence BLEU of the candidate against the reference (0-1)."
    order = 4
    reads_tokens = True
    method: Literal["nakov", "exp", "add-k", "floor", "none"] = setting(
        "nakov",
        "Smoothing: nakov (Nakov et al. 2012, all orders and the brevity penalty; the paper's) or "
        "one of sacrebleu's.")
    smooth_value: float | None = setting(None, "Smoothing constant (null = the method's default).")
    lowercase: bool = setting(True, "Lower-case before counting.")

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"filters.bleu.method must be one of {METHODS}, not {self.method!r}")

    def covered_by_tokens(self) -> bool:
        return self.lowercase

    def columns(self) -> list[Column]:
        return [Column("bleu", Direction.RANGE, f"smoothed sentence BLEU ({self.method}), 0-1")]

    def score(self, batch: Batch) -> dict[str, Any]:
        shared, len_ref, len_cand = batch.matches(ORDER, self.lowercase)
        totals = {n: np.maximum(len_cand - n + 1, 0) for n in range(1, ORDER + 1)}
        if self.method == "nakov":
            k = 1.0 if self.smooth_value is None else self.smooth_value
            log_p = sum(np.log((shared[n] + k) / (totals[n] + k)) for n in totals) / ORDER
            safe = np.maximum(len_cand, 1)
            bp = np.minimum(0.0, 1.0 - (len_ref + k) / safe)
            return {"bleu": np.where(len_cand > 0, np.exp(log_p + bp), 0.0)}
        from sacrebleu.metrics.bleu import BLEU

        out = []
        for i in range(len(len_cand)):
            if len_cand[i] == 0:
                out.append(0.0)
                continue
            correct = [int(shared[n][i]) for n in totals]
            total = [int(totals[n][i]) for n in totals]
            out.append(BLEU.compute_bleu(correct, total, int(len_cand[i]), int(len_ref[i]),
                                         smooth_method=self.method, smooth_value=self.smooth_value,
                                         effective_order=True, max_ngram_order=ORDER).score / 100.0)
        return {"bleu": out}
