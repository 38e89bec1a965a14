"""How the identifier is judged: max F1 over the precision-recall curve (as the papers
report), out-of-fold probabilities on stratified folds grouped by source tweet, and the
acceptance threshold's precision and recall."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from paramill.twitter.identify.featurise import features, training_idf
from paramill.twitter.identify.settings import IdentifySettings
from paramill.twitter.tweettext import comparable

def _best_f1(precision: np.ndarray, recall: np.ndarray) -> tuple[int, np.ndarray]:
    """The index of the highest F1 on a precision-recall curve (its last point, recall 0,
    left out), and the F1s."""
    f1 = np.divide(2 * precision * recall, precision + recall,
                   out=np.zeros_like(precision), where=(precision + recall) > 0)
    return (int(np.argmax(f1[:-1])) if len(f1) > 1 else 0), f1


def max_f1(labels: list[int] | np.ndarray, scores: np.ndarray) -> dict[str, float]:
    """Max F1 over the precision-recall curve, with its precision, recall and threshold."""
    from sklearn.metrics import precision_recall_curve

    precision, recall, thresholds = precision_recall_curve(labels, scores)
    i, f1 = _best_f1(precision, recall)
    return {"f1": round(float(f1[i]), 4), "precision": round(float(precision[i]), 4),
            "recall": round(float(recall[i]), 4),
            "threshold": round(float(thresholds[min(i, len(thresholds) - 1)]), 4)}


@dataclass(frozen=True, eq=False)
class LinearModel:
    """A fitted model as numbers only: the standardisation (``mean``, ``scale``) and the
    logistic regression's ``coef`` and ``intercept`` (scikit-learn's, :func:`fit`). It scores
    as scikit-learn's pipeline does, and is saved as arrays, not as a pickle of scikit-learn's
    objects: an identifier file runs no code when loaded and does not depend on the
    scikit-learn version that wrote it."""

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float

    @property
    def features(self) -> int:
        return len(self.coef)

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """[p(not), p(paraphrase)] of each row, as scikit-learn's ``predict_proba``."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.features:
            raise ValueError(f"X has {x.shape[-1] if x.ndim else 0} features, but this model "
                             f"expects {self.features}")
        from scipy.special import expit

        p = expit(((x - self.mean) / self.scale) @ self.coef + self.intercept)
        return np.column_stack([1 - p, p])

    @staticmethod
    def from_pipeline(pipeline) -> LinearModel:
        """From scikit-learn's fitted StandardScaler + LogisticRegression (classes 0, 1)."""
        scaler, lr = pipeline[0], pipeline[-1]
        if list(lr.classes_) != [0, 1]:
            raise ValueError(f"a paraphrase model has classes 0 and 1, not {list(lr.classes_)}")
        return LinearModel(np.asarray(scaler.mean_, dtype=np.float64),
                           np.asarray(scaler.scale_, dtype=np.float64),
                           np.asarray(lr.coef_[0], dtype=np.float64), float(lr.intercept_[0]))

    def arrays(self) -> dict[str, np.ndarray]:
        return {"mean": self.mean, "scale": self.scale, "coef": self.coef,
                "intercept": np.asarray([self.intercept])}

    @staticmethod
    def from_arrays(arrays: dict[str, np.ndarray]) -> LinearModel:
        mean, scale, coef, intercept = (np.asarray(arrays[k], dtype=np.float64)
                                        for k in ("mean", "scale", "coef", "intercept"))
        if not (mean.ndim == scale.ndim == coef.ndim == 1 and len(mean) == len(scale) == len(coef) >= 1):
            raise ValueError("mean, scale and coef must be vectors of one length")
        if intercept.size != 1 or not all(np.isfinite(a).all() for a in (mean, scale, coef, intercept)) \
                or not scale.all():
            raise ValueError("a model's numbers must be finite, its scales not 0, its intercept one number")
        return LinearModel(mean, scale, coef, float(intercept.reshape(-1)[0]))


def fit(x: np.ndarray, y: list[int], settings: IdentifySettings) -> LinearModel:
    """Standardised features, logistic regression (scikit-learn), kept as a :class:`LinearModel`."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(C=settings.c, max_iter=settings.max_iter,
                                                               random_state=settings.seed))
    return LinearModel.from_pipeline(model.fit(x, y))


def source_groups(pairs: list[tuple[str, str]]) -> np.ndarray:
    """One group per source tweet (the first sentence, compared as ``comparable`` text), so
    that no fold's pairs share a source with another fold's."""
    ids: dict[str, int] = {}
    return np.asarray([ids.setdefault(comparable(x), len(ids)) for x, _ in pairs])


def grouped_folds(y: np.ndarray, groups: np.ndarray, settings: IdentifySettings
                  ) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) indices of ``settings.folds`` stratified folds grouped by source tweet
    (seeded: the same data gives the same folds). Too little data for them (one source
    tweet, fewer pairs of a class than folds, or a fold whose training part holds one class)
    is a ValueError saying so, not scikit-learn's."""
    from sklearn.model_selection import StratifiedGroupKFold

    n_groups = len(set(groups.tolist()))
    size = f"{len(y)} pairs, {int(np.sum(y))} of them paraphrases, from {n_groups} source tweet(s)"
    if n_groups < 2:
        raise ValueError(f"grouped cross-validation needs pairs of at least 2 source tweets (first "
                         f"sentences); the training data has {size}")
    folds = min(settings.folds, n_groups)
    if folds > int(min(np.sum(y), len(y) - np.sum(y))):
        raise ValueError(f"{folds}-fold grouped cross-validation needs at least {folds} pairs of "
                         f"each class; the training data has {size}")
    split = StratifiedGroupKFold(folds, shuffle=True, random_state=settings.seed)
    splits = list(split.split(np.zeros(len(y)), y, groups))
    for k, (train, _) in enumerate(splits, 1):
        if len(set(y[train].tolist())) < 2:
            raise ValueError(f"fold {k} of {folds}-fold grouped cross-validation would train on "
                             f"{'paraphrases' if y[train][0] else 'non-paraphrases'} alone: the "
                             f"training data ({size}) is too small")
    return splits


def holdout(pairs: list[tuple[str, str]], labels, fraction: float
            ) -> tuple[tuple[list, list[int]], tuple[list, list[int]]]:
    """((pairs, labels) kept, (pairs, labels) held out): every pair of the last ``fraction`` of
    source tweets, in order of first appearance, is held out. No source tweet is on both sides,
    and the held-out part is a later stretch of the file, as a test split is a later stretch of
    a harvest; what a model fitted on the kept part scores on it is a held-out figure (nothing
    of it, not even its unlabelled sentences, reached training)."""
    if not 0 < fraction < 1:
        raise ValueError(f"the held-out fraction must lie between 0 and 1, not {fraction}")
    groups = source_groups(pairs)
    cut = int(round((int(groups.max()) + 1) * (1 - fraction))) if len(groups) else 0
    out = groups >= cut
    y = np.asarray(labels)
    kept = [p for p, o in zip(pairs, out) if not o], y[~out].tolist()
    return kept, ([p for p, o in zip(pairs, out) if o], y[out].tolist())


def out_of_fold(x: np.ndarray, y: np.ndarray, groups: np.ndarray, settings: IdentifySettings,
                refit: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
                ) -> np.ndarray:
    """Out-of-fold probabilities: stratified folds grouped by source tweet (seeded).
    ``refit(x, train)``, when given, is a fold's own feature matrix: the features learnt from
    data (document frequencies, :func:`~paramill.twitter.identify.featurise.fold_idf`)
    counted on the fold's training part only."""
    scores = np.zeros(len(y))
    for train, test in grouped_folds(y, groups, settings):
        xk = x if refit is None else refit(x, train)
        scores[test] = fit(xk[train], y[train].tolist(), settings).predict_proba(xk[test])[:, 1]
    return scores


def metrics(labels, scores: np.ndarray) -> dict[str, float]:
    """Max F1 (with P, R, threshold), ROC AUC, average precision and the positives' share."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    y = np.asarray(labels)
    return {**max_f1(y, scores), "auc": round(float(roc_auc_score(y, scores)), 4),
            "ap": round(float(average_precision_score(y, scores)), 4),
            "positive_share": round(float(y.mean()), 4)}


def at_threshold(labels, scores: np.ndarray, threshold: float,
                 share: float | None = None) -> dict[str, Any]:
    """Precision, recall and F1 of accepting the pairs scored at or above ``threshold``, and
    the share accepted: what the chosen threshold gives on a set (max F1 picks its own).
    With ``share``: as if the set had that share of paraphrases (:func:`share_weights`)."""
    y = np.asarray(labels).astype(bool)
    accepted = np.asarray(scores) >= threshold
    w = np.ones(len(y)) if share is None else share_weights(y, share)
    tp = float(w[accepted & y].sum())
    precision = tp / float(w[accepted].sum()) if accepted.any() else None
    recall = tp / float(w[y].sum()) if y.any() else None
    f1 = (2 * precision * recall / (precision + recall)) if precision and recall else 0.0
    out = {"threshold": round(float(threshold), 6),
           "precision": None if precision is None else round(precision, 4),
           "recall": None if recall is None else round(recall, 4), "f1": round(f1, 4),
           "accepted_share": round(float(w[accepted].sum() / w.sum()), 4) if len(y) else None}
    return out if share is None else {**out, "at_share": share}


def share_weights(labels, share: float | None) -> np.ndarray | None:
    """Weights that give ``labels`` a share ``share`` of paraphrases (each paraphrase
    ``share / s``, each other pair ``(1 - share) / (1 - s)``, where ``s`` is their own share):
    a precision computed with them is the precision at that share, recall unchanged (label
    shift: the same scores per class, another mix). None for ``share`` None."""
    if share is None:
        return None
    y = np.asarray(labels).astype(bool)
    own = float(y.mean())
    if not 0 < own < 1:
        raise ValueError("reweighting to an expected share needs paraphrases and non-paraphrases")
    return np.where(y, share / own, (1 - share) / (1 - own))


def threshold_for_precision(labels, scores: np.ndarray, target: float,
                            share: float | None = None) -> dict[str, Any]:
    """The lowest threshold from which precision stays at or above ``target`` for every higher
    threshold (the most recall at that precision, without trusting a lone low point of the
    ragged curve); if there is none, the max-F1 threshold, with ``reached`` false. With
    ``share``, precision is that at a share ``share`` of paraphrases (:func:`share_weights`),
    not at the labels' own."""
    from sklearn.metrics import precision_recall_curve

    weights = share_weights(labels, share)
    precision, recall, thresholds = precision_recall_curve(np.asarray(labels), scores,
                                                           sample_weight=weights)
    at = {} if share is None else {"at_share": share,
                                   "labels_share": round(float(np.mean(labels)), 4)}
    floor = np.minimum.accumulate(precision[:-1][::-1])[::-1]  # min precision from here up
    ok = np.flatnonzero(floor >= target)
    if len(ok):
        i = int(ok[0])
        return {"threshold": round(float(thresholds[i]), 6), "target_precision": target,
                "reached": True, "precision": round(float(precision[i]), 4),
                "recall": round(float(recall[i]), 4), **at}
    # none: the max-F1 point of the same (weighted, where a share is given) curve
    i, _ = _best_f1(precision, recall)
    return {"threshold": round(float(thresholds[min(i, len(thresholds) - 1)]), 4),
            "target_precision": target, "reached": False,
            "precision": round(float(precision[i]), 4), "recall": round(float(recall[i]), 4), **at}


def cross_validate(pairs, labels, extended: bool, settings: IdentifySettings,
                   encoder=None) -> dict[str, float]:
    """Metrics of out-of-fold probabilities (stratified folds grouped by source tweet); the
    extended features with the IDF overlap where ``settings.idf_overlap``, its document
    frequencies counted per fold."""
    y = np.asarray(labels)
    idf, refit = training_idf(pairs, extended and settings.idf_overlap)
    return metrics(y, out_of_fold(features(pairs, extended, encoder, idf), y, source_groups(pairs),
                                  settings, refit))
