"""Fitting the identifier (``paramill twitter identify``, rule ``twitter_identify``): every model on
the labelled pairs, cross-validated on folds grouped by source tweet, the threshold for the
target precision, and the evaluation sets scored."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from paramill.io.jsonfiles import write_json
from paramill.run.job import output_job
from paramill.provenance import Run
from paramill.twitter.identify.data import read_labelled, unlabelled_sentences
from paramill.twitter.identify.evaluation import (
    at_threshold,
    grouped_folds,
    fit,
    metrics,
    out_of_fold,
    source_groups,
    threshold_for_precision,
)
from paramill.twitter.identify.featurise import IDF, training_idf
from paramill.twitter.identify.leak import check_embedding_overlap, embedding_overlap
from paramill.twitter.identify.model import Identifier
from paramill.twitter.identify.settings import IdentifySettings, LabelledData
from paramill.twitter.identify.training import crossfit_cosine, crossfit_cross, distill_student


def _read_sets(sets: list[LabelledData]) -> tuple[list[tuple[str, str]], list[int], int]:
    """The labelled pairs of ``sets`` together: (pairs, labels, pairs dropped as debatable)."""
    pairs, labels, dropped = [], [], 0
    for d in sets:
        p, y, n = read_labelled(d.path, d.format, d.labels, d.fields)
        pairs += p
        labels += y
        dropped += n
    return pairs, labels, dropped


def fold_spread(y: np.ndarray, scores: np.ndarray, groups: np.ndarray, threshold: float,
                settings: IdentifySettings) -> dict[str, Any]:
    """The precision and recall at ``threshold`` in each fold of the cross-validation (the
    folds the out-of-fold ``scores`` came from): the spread of what the threshold gives on
    source tweets it was not fitted on, beside the pooled figure it was chosen on. It is
    the spread within the training data's period; another period's tweets may fall outside
    it (the manual's results page has a measurement)."""
    folds = [at_threshold(y[test], scores[test], threshold, settings.expected_share)
             for _, test in grouped_folds(y, groups, settings)]
    out: dict[str, Any] = {}
    for key in ("precision", "recall"):
        values = [f[key] for f in folds if f[key] is not None]
        out[key] = values
        if values:
            out[f"{key}_min"], out[f"{key}_max"] = min(values), max(values)
            out[f"{key}_sd"] = round(float(np.std(values, ddof=1)), 4) if len(values) > 1 else 0.0
    return out


def _fit_each(ident: Identifier, names: list[str], pairs: list[tuple[str, str]],
              labels: list[int], groups: np.ndarray, text: list[str], student: bool,
              settings: IdentifySettings) -> tuple[dict[str, np.ndarray], set[str]]:
    """Fit each model of ``names`` into ``ident`` on all pairs; returns their out-of-fold
    scores (grouped folds) and the training sentences (what a student was distilled on)."""
    y = np.asarray(labels)
    oof, xs, own = {}, {}, set()
    # counted on all training sentences; per fold for the folds
    ident.idf, refit = training_idf(pairs, settings.idf_overlap)
    for name in names:
        if name == "encoder":  # the extended features and the sentence encoder's cosine
            if student:  # distilled without labels
                own = {s for pair in pairs for s in pair}
                ident.encoder_state = distill_student(sorted(own) + text, settings)
            if settings.finetune_epochs:  # cross-fitted (leak-free)
                columns, ident.encoder_state = crossfit_cosine(pairs, y, groups, settings,
                                                               start=ident.encoder_state)
            else:  # the cosine (and token alignment) of an encoder that saw no label
                columns = ident.sentence_encoder().pair_columns(pairs, settings.token_alignment)
            x = xs[name] = np.hstack([xs["extended"], columns])
        elif name == "cross":  # the extended features and the cross-encoder's probability
            probability, ident.cross_state = crossfit_cross(pairs, y, groups, settings)
            x = xs[name] = np.hstack([xs["extended"], probability[:, None]])
        else:
            x = xs[name] = ident.features(pairs, name)
        ident.fitted[name] = fit(x, labels, settings)
        oof[name] = out_of_fold(x, y, groups, settings, refit if name != "lr" else None)
    return oof, own


def _encoders_used(ident: Identifier, names: list[str], own: set[str], text: list[str],
                   student: bool, settings: IdentifySettings) -> dict[str, Any]:
    """What the report says of the sentence encoder and the cross-encoder, where used."""
    results: dict[str, Any] = {}
    if "encoder" in names:
        ident.sentence_encoder()  # built (with the fine-tuned weights) to record what it is
        results["sentence_encoder"] = {**ident.encoder_used(),
                                       "finetune_epochs": settings.finetune_epochs}
        if student:
            results["sentence_encoder"]["distilled"] = {
                "from": settings.sentence_encoder, "epochs": settings.distill_epochs,
                "sentences": len(own | set(text)),
                "on": "the training pairs' sentences, without their labels"
                      + (" and unlabelled text" if settings.distill_text else ""),
                "text": {"files": list(settings.distill_text), "sentences": len(text),
                         "max_sentences": settings.distill_max_sentences}}
        if settings.finetune_epochs:
            results["sentence_encoder"]["cosine"] = (
                f"cross-fitted: each of the {settings.folds} grouped folds scored by an encoder "
                "fine-tuned on the others; new pairs by one fine-tuned on all")
    if "cross" in names:
        results["cross_encoder"] = {
            "from": settings.sentence_encoder, "finetune_epochs": settings.finetune_epochs,
            "device": ident.cross_encoder().device, "precision": ident.cross_encoder().precision,
            "probability": f"cross-fitted: each of the {settings.folds} grouped folds scored by a "
                           "cross-encoder fine-tuned on the others; new pairs by one fine-tuned "
                           "on all"}
    return results


def _test_fold_sentences(student: bool) -> str:
    """What of the cross-validation's test folds reached training: the honest figure names
    itself as such, the optimistic one says why it is optimistic."""
    if student:
        return ("seen: the student encoder was distilled on every train sentence, the test "
                "folds' included (without their labels), so the encoder model's figure is "
                "optimistic; a held-out set (evaluate, or benchmarks/twitter/paraid.py --holdout) "
                "measures sentences it never saw")
    return "unseen: no model learnt from the test folds (fine-tuned scores are cross-fitted)"


def train_identifier(train: list[LabelledData], evaluate: list[LabelledData], out: str | Path,
                     report: str | Path, settings: IdentifySettings, rule: str = "twitter_identify"
                     ) -> dict[str, Any]:
    """Fit LR (18 features), the extended model and the configured model (encoder, the
    default, or cross) on ``train`` (labelled sets); with ``finetune_epochs`` the encoder's cosine is
    cross-fitted (:func:`crossfit_cosine`). Out-of-fold scores (folds grouped by source
    tweet) give each model's cross-validated metrics and the acceptance threshold for
    ``target_precision``; each ``evaluate`` set is scored by the models fitted on all of
    train. An embedding model for the cosine that was trained on the labelled pairs is
    refused (:class:`EmbeddingLeak`)."""
    labelled = [d.path for d in train + evaluate] + [d.labels for d in train + evaluate if d.labels]
    student = settings.model == "encoder" and settings.encoder_layers > 0  # distilled first
    inputs = labelled + ([settings.embed_model] if settings.embed_model else []) \
        + (list(settings.distill_text) if student else [])
    run = Run(rule=rule, params=asdict(settings) | {"train": [asdict(d) for d in train],
                                                   "evaluate": [asdict(d) for d in evaluate]},
              inputs=inputs)
    pairs, labels, dropped = _read_sets(train)
    if len(set(labels)) < 2:
        files = ", ".join(d.path for d in train) or "twitter.identify.train (no set)"
        raise ValueError(f"{files}: the identifier's training data needs both paraphrases and "
                         f"non-paraphrases; read {len(pairs)} pairs, {sum(labels)} of them "
                         f"paraphrases ({dropped} dropped as debatable)")
    results: dict[str, Any] = {"train_pairs": len(pairs), "train_dropped": dropped,
                               "positive": int(sum(labels)), "evaluations": []}
    if settings.idf_overlap:  # the extended model (always fitted) and those built on it
        results["idf_overlap"] = {
            "features": IDF, "documents": "the training pairs' distinct sentences, without "
            "their labels; in cross-validation, each fold's training part only"}
    if settings.embed_model:
        results["embed_overlap"] = overlap = embedding_overlap(settings.embed_model, pairs)
        check_embedding_overlap(overlap, settings.max_embed_overlap)
    ident = Identifier(settings, settings.embed_model)
    y, groups = np.asarray(labels), source_groups(pairs)
    names = ["lr", "extended"] + ([settings.model] if settings.model in ("encoder", "cross") else [])
    if settings.model == "cross" and settings.finetune_epochs < 1:
        raise ValueError("twitter.identify.model cross fine-tunes a cross-encoder on the labelled "
                         "pairs: set twitter.identify.finetune_epochs to at least 1")
    if settings.model in ("encoder", "cross"):  # before any model is fitted: a missing one stops at once
        from paramill.twitter.encoder import PretrainedEncoder

        PretrainedEncoder.locate(settings.sentence_encoder)
    # read before any model is fitted: a bad line stops training at once
    text = unlabelled_sentences(settings.distill_text, settings.distill_max_sentences,
                                settings.seed) if student else []
    oof, own = _fit_each(ident, names, pairs, labels, groups, text, student, settings)
    results.update(_encoders_used(ident, names, own, text, student, settings))
    ident.threshold_choice = threshold_for_precision(y, oof[settings.model], settings.target_precision,
                                                     settings.expected_share)
    ident.threshold = ident.threshold_choice["threshold"]
    used = ident.accept_at(settings.threshold)
    results["threshold"] = {**ident.threshold_choice, "model": settings.model,
                            "chosen_on": f"{settings.folds}-fold out-of-fold scores on train, "
                                         "folds grouped by source tweet",
                            "used": used,
                            "by_fold": fold_spread(y, oof[settings.model], groups, used, settings)}
    cv = {"data": f"{settings.folds}-fold cross-validation on train, grouped by source tweet",
          "pairs": len(pairs), "test_fold_sentences": _test_fold_sentences(student),
          **{name: metrics(y, oof[name]) for name in names},
          "at_threshold": {"model": settings.model, **at_threshold(y, oof[settings.model], used)}}
    if settings.expected_share is not None:  # the same, as at the share the threshold was chosen for
        cv["at_threshold_expected_share"] = {
            "model": settings.model,
            **at_threshold(y, oof[settings.model], used, settings.expected_share)}
    results["evaluations"].append(cv)
    for d in evaluate:
        p, yy, n = read_labelled(d.path, d.format, d.labels, d.fields)
        scored = {name: ident.score(p, name) for name in names}
        results["evaluations"].append({
            "data": d.path, "pairs": len(p), "dropped": n,
            **{name: metrics(yy, scored[name]) for name in names},
            "at_threshold": {"model": settings.model, **at_threshold(yy, scored[settings.model], used)}})
    if halved := ident.out_of_gpu_memory():  # batches halved to fit the card (the folds' own
        results["out_of_gpu_memory"] = halved  # encoders: in the log only)
    with output_job(run, out, report, rows_in=len(pairs), each=True) as job:
        tmp, tmp_rep = job.paths
        ident.save(tmp)
        write_json(tmp_rep, results)
        job.extra = {"evaluations": results["evaluations"], "threshold": results["threshold"],
                     **({"out_of_gpu_memory": halved} if halved else {})}
    return results
