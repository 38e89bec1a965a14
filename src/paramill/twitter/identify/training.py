"""The identifier's trained scorers: the sentence encoder fine-tuned (or a student distilled)
and the cross-encoder, each cross-fitted so no pair is scored by a scorer that saw its label."""

from __future__ import annotations

import numpy as np

from paramill.twitter.encoder import PretrainedEncoder, distill_state, finetune_state
from paramill.twitter.identify.evaluation import grouped_folds
from paramill.twitter.identify.settings import IdentifySettings


def finetune_on(pairs: list[tuple[str, str]], labels, settings: IdentifySettings, seed: int,
                desc: str, state: bytes | None = None) -> bytes:
    """The sentence encoder's weights (the student's when ``settings.encoder_layers``, from
    ``state`` when given) fine-tuned on ``pairs`` with the settings' schedule."""
    return finetune_state(settings.sentence_encoder, pairs, labels, epochs=settings.finetune_epochs,
                          lr=settings.finetune_lr, batch=settings.finetune_batch,
                          scale=settings.finetune_scale, precision=settings.encoder_precision,
                          seed=seed, layers=settings.encoder_layers, state=state, desc=desc)


def distill_student(sentences: list[str], settings: IdentifySettings) -> bytes:
    """The weights of the student of ``settings.encoder_layers`` layers distilled from the
    whole sentence encoder on ``sentences`` (no labels)."""
    return distill_state(settings.sentence_encoder, sentences,
                         layers=settings.encoder_layers, epochs=settings.distill_epochs,
                         lr=settings.distill_lr, batch=settings.distill_batch,
                         precision=settings.encoder_precision, seed=settings.seed,
                         teacher_batch=settings.encoder_batch,
                         desc=f"distilling a {settings.encoder_layers}-layer student encoder")


def crossfit(pairs: list[tuple[str, str]], y: np.ndarray, groups: np.ndarray,
             settings: IdentifySettings, train, score, what: str, final: bool = True
             ) -> tuple[np.ndarray, bytes | None]:
    """A trained scorer's score of every pair, cross-fitted: the pairs of each of the grouped
    folds (the same folds as :func:`out_of_fold`) are scored by a scorer trained on the other
    folds only, so no score comes from a scorer that saw its pair's label.
    ``train(pairs, labels, seed, desc)`` gives weights, ``score(weights, pairs)`` scores.
    Also the weights trained on all pairs, which score new pairs (``final``; None without)."""
    scores = None  # one score a pair, or a row of them (the encoder's columns)
    folds = grouped_folds(y, groups, settings)
    for k, (fold_train, test) in enumerate(folds, 1):
        state = train([pairs[i] for i in fold_train], y[fold_train], settings.seed + k,
                      f"fine-tuning the {what}, fold {k}/{len(folds)}")
        part = np.asarray(score(state, [pairs[i] for i in test]))
        if scores is None:
            scores = np.full((len(pairs),) + part.shape[1:], np.nan)
        scores[test] = part
    if not final:
        return scores, None
    return scores, train(pairs, y, settings.seed, f"fine-tuning the {what} on all labelled pairs")


def crossfit_cosine(pairs: list[tuple[str, str]], y: np.ndarray, groups: np.ndarray,
                    settings: IdentifySettings, final: bool = True, start: bytes | None = None
                    ) -> tuple[np.ndarray, bytes | None]:
    """The fine-tuned encoder's columns of every pair (the cosine, and the token alignment
    with ``settings.token_alignment``: :meth:`PretrainedEncoder.pair_columns`), cross-fitted
    (:func:`crossfit`). Each fine-tuning begins from the weights ``start`` when given (a
    distilled student's: distillation uses no labels)."""
    def cosine(state, part):
        return PretrainedEncoder(settings.sentence_encoder, settings.encoder_batch,
                                 settings.encoder_precision, state, settings.encoder_layers
                                 ).pair_columns(part, settings.token_alignment)

    return crossfit(pairs, y, groups, settings,
                    lambda p, labels, seed, desc: finetune_on(p, labels, settings, seed, desc, start),
                    cosine, "sentence encoder", final)


def crossfit_cross(pairs: list[tuple[str, str]], y: np.ndarray, groups: np.ndarray,
                   settings: IdentifySettings, final: bool = True
                   ) -> tuple[np.ndarray, bytes | None]:
    """The cross-encoder's p(paraphrase) of every pair, cross-fitted (:func:`crossfit`)."""
    from paramill.twitter.cross import CrossEncoder, cross_state

    def train(p, labels, seed, desc):
        return cross_state(settings.sentence_encoder, p, labels, epochs=settings.finetune_epochs,
                           lr=settings.finetune_lr, batch=settings.finetune_batch,
                           precision=settings.encoder_precision, seed=seed, desc=desc)

    def score(state, part):
        return CrossEncoder(settings.sentence_encoder, settings.encoder_batch,
                            settings.encoder_precision, state).score(part)

    return crossfit(pairs, y, groups, settings, train, score, "cross-encoder", final)
