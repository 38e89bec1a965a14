"""Forced-decoding scores: the NLL of given target sentences under a translation model
(CTranslate2, or the opennmt-py engine on a GPU CTranslate2 cannot use).

Used for dual scoring (ParaBank 2) and dual cross-entropy filtering (Junczys-Dowmunt 2018):
``score_batch`` returns one log-probability per target piece plus end-of-sentence, and the
cost is their negated mean (per target subword, EOS included, like ``fwd_nll``).
"""

from __future__ import annotations

from pathlib import Path

from paramill.nmt.engine import Engine, open_translator, select


def load_scorer(model_dir: str | Path, device_name: str = "auto", threads: int = 1,
                engine: Engine | None = None):
    """A translator for scoring (CPU: one batch per thread) on the device
    ``device_name`` resolves to (a GPU it cannot use is an error, not the CPU)."""
    return open_translator(model_dir, engine or select(device_name, "scoring", models=[model_dir]), threads)


def nll_per_token(scorer, sources: list[list[str]], targets: list[list[str]],
                  batch_size: int = 32, batch_type: str = "examples") -> list[float]:
    """Mean negative log-probability of each target (pieces) given its source (pieces), in
    batches of ``batch_size`` pairs, or (``tokens``) of padded source subwords."""
    if len(sources) != len(targets):
        raise ValueError(f"{len(sources)} sources but {len(targets)} targets")
    if not sources:
        return []
    results = scorer.score_batch(sources, targets, max_batch_size=batch_size, batch_type=batch_type)
    return [-sum(r.log_probs) / len(r.log_probs) for r in results]
