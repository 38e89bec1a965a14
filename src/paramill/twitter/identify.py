"""Paraphrase identification for tweet pairs (Lan et al. 2017, PIT-2015 baseline).

Baseline: logistic regression on the 18 features of Das & Smith (2009) as used by the
PIT-2015 baseline: precision, recall and F1 of shared 1-, 2- and 3-grams, on lower-cased
tokens and on their Porter stems (3 x 3 x 2). Extended: those plus cheap signals — the
cosine under a paraphrastic embedding model (``paramill.embed``), the character-level
similarity of the comparable texts (rapidfuzz ratio), the length ratio, and the token-set
Jaccard. Evaluation is max F1 over the precision-recall curve, with its precision and
recall, as the paper reports.

Labelled data: Twitter URL corpus raw (``s1\\ts2\\t(n,6)\\turl``: n<=2 negative, n>=4
positive, n=3 dropped), its tokenised form (``a.toks``, ``b.toks``, ``sim.txt``), or
PIT-2015 (``(pos, neg)`` votes: pos>=3 positive, pos<=1 negative, pos=2 dropped).
"""

from __future__ import annotations

import pickle
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from paramill.io import InputError, open_compressed
from paramill.settings import Settings, setting
from paramill.twitter.text import comparable, tokenize

BASELINE = [f"{kind}_{n}_{m}" for kind in ("tok", "stem") for n in (1, 2, 3) for m in ("p", "r", "f")]
EXTRA = ["char_ratio", "length_ratio", "jaccard", "cosine"]
FORMATS = ("url_raw", "toks", "pit2015")
_VOTES = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


@dataclass(frozen=True)
class LabelledData(Settings):
    path: str = setting(doc="File (url_raw, pit2015) or directory (toks).")
    format: Literal["url_raw", "toks", "pit2015"] = setting(doc="Layout of the labelled data.")


@dataclass(frozen=True)
class IdentifySettings(Settings):
    model: Literal["lr", "extended"] = setting(
        "extended",
        "Which model scores harvested pairs: lr (18 features) or extended (+ embedding cosine and "
        "cheap signals).")
    threshold: float = setting(
        0.5, "Pairs at or above this p_paraphrase join the corpus.", minimum=0, maximum=1)
    c: float = setting(
        1.0, "Inverse regularisation of the logistic regression.", exclusiveMinimum=0)
    max_iter: int = setting(2000, "Solver iterations.", minimum=1)
    embed_model: str | None = setting(
        None,
        "Embedding model for the cosine feature: a name in embed.models, a path, or null (no "
        "cosine).")
    seed: int = setting(13, "Seed (folds, solver).")
    train: tuple[LabelledData, ...] = setting(
        (), "Labelled data: [{path, format}], format url_raw (s1, s2, (n,6), url), toks "
        "(a.toks/b.toks/sim.txt directory) or pit2015.")
    evaluate: tuple[LabelledData, ...] = setting(
        (), "Labelled sets to report max F1 on (empty = 5-fold cross-validation on train).")


def read_labelled(path: str | Path, fmt: str) -> tuple[list[tuple[str, str]], list[int], int]:
    """(pairs, labels, dropped) from a labelled file/directory."""
    if fmt not in FORMATS:
        raise ValueError(f"labelled format must be one of {FORMATS}, not {fmt!r}")
    pairs, labels, dropped = [], [], 0
    path = Path(path)
    if fmt == "toks":
        a = (path / "a.toks").read_text(encoding="utf-8").splitlines()
        b = (path / "b.toks").read_text(encoding="utf-8").splitlines()
        sim = (path / "sim.txt").read_text(encoding="utf-8").splitlines()
        if not len(a) == len(b) == len(sim):
            raise InputError(path, None, f"a.toks, b.toks, sim.txt differ in length ({len(a)}, {len(b)}, {len(sim)})")
        for i, (x, y, s) in enumerate(zip(a, b, sim), 1):
            if s.strip() not in ("0", "1"):
                raise InputError(path / "sim.txt", i, f"label must be 0 or 1, not {s!r}")
            pairs.append((x, y))
            labels.append(int(s))
        return pairs, labels, 0
    with open_compressed(path) as fh:
        for line_no, raw in enumerate(fh, 1):
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            if not line.strip():
                continue
            fields = line.split("\t")
            # url_raw: s1, s2, (n,6), url — n <= 2 no, n >= 4 yes, 3 dropped;
            # pit2015: topic id, topic, s1, s2, (pos, neg) — pos <= 1 no, pos >= 3 yes, 2 dropped
            first, want, what, undecided = ((0, 3, "s1, s2, (n,6), url", 3) if fmt == "url_raw"
                                            else (2, 5, "PIT-2015 fields", 2))
            if len(fields) < want:
                raise InputError(path, line_no, f"expected {what}; got {len(fields)} fields")
            s1, s2, votes = fields[first], fields[first + 1], fields[first + 2]
            m = _VOTES.match(votes.strip())
            if not m:
                raise InputError(path, line_no, f"votes must look like {'(n,6)' if fmt == 'url_raw' else '(pos, neg)'}, "
                                                f"not {votes!r}")
            n = int(m.group(1))
            label = None if n == undecided else int(n > undecided)
            if label is None:
                dropped += 1
                continue
            pairs.append((s1, s2))
            labels.append(label)
    return pairs, labels, dropped


_STEMMER = None


def stem(tokens: list[str]) -> list[str]:
    global _STEMMER
    if _STEMMER is None:
        import snowballstemmer

        _STEMMER = snowballstemmer.stemmer("porter")
    return _STEMMER.stemWords(tokens)


def _grams(tokens: list[str], n: int) -> Counter:
    return Counter(zip(*(tokens[i:] for i in range(n))))


def prf(a: list[str], b: list[str], n: int) -> tuple[float, float, float]:
    """Precision (shared / n-grams of a), recall (shared / n-grams of b), F1; clipped counts."""
    ga, gb = _grams(a, n), _grams(b, n)
    shared = sum((ga & gb).values())
    p = shared / sum(ga.values()) if ga else 0.0
    r = shared / sum(gb.values()) if gb else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def words(text: str) -> list[str]:
    return [t.lower() for t in tokenize(text) if not t.startswith(("http://", "https://"))]


def baseline_features(s1: str, s2: str) -> list[float]:
    a, b = words(s1), words(s2)
    out: list[float] = []
    for side_a, side_b in ((a, b), (stem(a), stem(b))):
        for n in (1, 2, 3):
            out += prf(side_a, side_b, n)
    return out


def extra_features(s1: str, s2: str) -> list[float]:
    from rapidfuzz import fuzz

    a, b = words(s1), words(s2)
    sa, sb = set(a), set(b)
    return [fuzz.ratio(comparable(s1), comparable(s2)) / 100.0,
            min(len(a), len(b)) / max(1, len(a), len(b)),
            len(sa & sb) / len(sa | sb) if sa | sb else 0.0]


def features(pairs: list[tuple[str, str]], extended: bool, encoder=None) -> np.ndarray:
    rows = [baseline_features(x, y) + (extra_features(x, y) if extended else []) for x, y in pairs]
    matrix = np.asarray(rows, dtype=np.float64).reshape(len(pairs), -1)
    if extended:
        cos = np.zeros((len(pairs), 1))
        if encoder is not None and pairs:
            from paramill.embed.model import cosine_rows

            cos[:, 0] = cosine_rows(encoder.encode([x for x, _ in pairs]).astype(np.float64),
                                    encoder.encode([y for _, y in pairs]).astype(np.float64))
        matrix = np.hstack([matrix, cos])
    return matrix


def max_f1(labels: list[int] | np.ndarray, scores: np.ndarray) -> dict[str, float]:
    """Max F1 over the precision-recall curve, with its precision, recall and threshold."""
    from sklearn.metrics import precision_recall_curve

    precision, recall, thresholds = precision_recall_curve(labels, scores)
    f1 = np.divide(2 * precision * recall, precision + recall,
                   out=np.zeros_like(precision), where=(precision + recall) > 0)
    i = int(np.argmax(f1[:-1])) if len(f1) > 1 else 0
    return {"f1": round(float(f1[i]), 4), "precision": round(float(precision[i]), 4),
            "recall": round(float(recall[i]), 4),
            "threshold": round(float(thresholds[min(i, len(thresholds) - 1)]), 4)}


def fit(x: np.ndarray, y: list[int], settings: IdentifySettings):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(C=settings.c, max_iter=settings.max_iter,
                                                               random_state=settings.seed))
    return model.fit(x, y)


def cross_validate(pairs, labels, extended: bool, settings: IdentifySettings, folds: int = 5,
                   encoder=None) -> dict[str, float]:
    """Max F1 of out-of-fold probabilities (stratified k-fold, seeded)."""
    from sklearn.model_selection import StratifiedKFold

    x = features(pairs, extended, encoder)
    y = np.asarray(labels)
    scores = np.zeros(len(y))
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=settings.seed).split(x, y):
        scores[test] = fit(x[train], y[train].tolist(), settings).predict_proba(x[test])[:, 1]
    return max_f1(y, scores)


@dataclass
class Identifier:
    """Both trained models; ``score`` uses the configured one."""

    lr: Any
    extended: Any
    settings: IdentifySettings
    embed_model: str | None = None

    def save(self, path: str | Path) -> None:
        with open(path, "wb") as fh:
            pickle.dump({"format": "paramill-paraid/1", "lr": self.lr, "extended": self.extended,
                         "settings": self.settings.__dict__, "embed_model": self.embed_model}, fh)

    @staticmethod
    def load(path: str | Path) -> Identifier:
        with open(path, "rb") as fh:
            data = pickle.load(fh)
        if data.get("format") != "paramill-paraid/1":
            raise ValueError(f"{path}: not a paramill paraphrase identifier")
        return Identifier(data["lr"], data["extended"], IdentifySettings.from_dict(data["settings"]),
                          data["embed_model"])

    def encoder(self):
        if not self.embed_model:
            return None
        from paramill.embed.model import load_model

        return load_model(self.embed_model)

    def score(self, pairs: list[tuple[str, str]], which: str | None = None) -> np.ndarray:
        which = which or self.settings.model
        if not pairs:
            return np.zeros(0)
        if which == "lr":
            return self.lr.predict_proba(features(pairs, False))[:, 1]
        return self.extended.predict_proba(features(pairs, True, self.encoder()))[:, 1]
