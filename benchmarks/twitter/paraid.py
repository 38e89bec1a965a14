#!/usr/bin/env python3
"""Real-data check of the tweet paraphrase identifier, per model (LR on the 18 overlap
features; the extended model; encoder: extended + the cosine of the packaged pretrained
all-MiniLM-L6-v2, once per ``--precisions``: float32, bfloat16, int8; with
``--finetune-epochs N`` also fine-tuned on the labelled pairs, its cosine cross-fitted; with
``--students N`` also a student of N layers distilled from it, see ``--help``; cross:
extended + the cross-fitted probability of the cross-encoder, with ``--models cross``):
5-fold
cross-validation grouped by source tweet on the Twitter URL corpus train split (castorini
tokenised form) and on PIT-2015 dev — max F1 over the precision-recall curve with its
precision and recall, ROC AUC, average precision and the share of paraphrases — plus the
seconds to fit on the whole set and the scoring throughput (features + model, pairs/s).

Lan et al. 2017 report their figures on the URL corpus *test* split (LR 0.683, their best
neural model 0.749), which has fewer paraphrases (19.5%) than train (26.5%): max F1 on
train folds is not comparable with them. Give a test split to measure on it (it is not in
this repository's shared data): ``--url-test DIR`` (tokenised form) or ``--pit-test FILE
[--pit-test-labels test.label]``; the models are then fitted on the whole train set.

    python benchmarks/twitter/paraid.py --out benchmarks/out/paraid.json [--embed-model M.pt]
        [--precisions float32 bfloat16 int8] [--finetune-epochs 1 [--no-finetune-final]]
        [--students 1 2 [--finetune-epochs 1 --finetune-students-only] [--distill-text F]]
        [--models lr extended cross --cross-epochs 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _report import SHARED, emit, machine  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from paramill.run import device  # noqa: E402
from paramill.twitter.encoder import ALIGNMENT, PRECISIONS, PretrainedEncoder, native_bfloat16  # noqa: E402
from paramill.twitter.identify import (  # noqa: E402
    MODELS,
    IdentifySettings,
    at_threshold,
    check_embedding_overlap,
    crossfit_cosine,
    crossfit_cross,
    distill_student,
    embedding_overlap,
    grouped_folds,
    fit,
    holdout,
    metrics,
    model_features,
    out_of_fold,
    read_labelled,
    source_groups,
    threshold_for_precision,
    training_idf,
    unlabelled_sentences,
)


def measure(pairs, labels, settings, encoder, sentences, tests, models, finetune=None,
            cross_settings=None) -> dict:
    """One row per model; model encoder once per sentence encoder in ``sentences`` (one per
    precision asked for, named ``encoder-<precision>``, and per student); with ``finetune``
    (settings with finetune_epochs) also ``<that name>-finetuned``: the extended features and
    the cross-fitted cosine of the fine-tuned encoder (:func:`crossfit_cosine`, from the
    student's weights for a student), fine-tuned on all pairs for scoring unless
    ``finetune_final`` is off (then no scoring rate: the fine-tuned encoder has the
    architecture and speed of the one it was fine-tuned from)."""
    y, groups = np.asarray(labels), source_groups(pairs)
    # the IDF overlap as the identifier counts it: on the training sentences, per fold in CV
    idf, refit = training_idf(pairs, settings.idf_overlap)
    alignment = settings.token_alignment
    out = {}
    variants = [(m, m, None) for m in models if m not in ("encoder", "cross")]
    if "cross" in models:
        variants.append(("cross", "cross", None))
    variants += [(label, "encoder", enc) for label, enc in sentences.items()]
    if finetune is not None:
        variants += [(f"{label}-finetuned", "finetuned", enc) for label, enc in sentences.items()
                     if isinstance(enc, PretrainedEncoder)
                     and (enc.layers is not None or not finetune["students_only"])]
    sample = pairs[-5000:]  # scored afresh: features (and sentence vectors) included
    for label, name, sentence in variants:
        row = {}
        start = time.perf_counter()
        if name == "finetuned":
            layers = len(sentence.layers) if sentence.layers else 0
            s = dataclasses.replace(finetune["settings"], encoder_precision=sentence.precision,
                                    encoder_layers=layers)
            fold_start = time.perf_counter()
            columns, state = crossfit_cosine(pairs, y, groups, s, final=finetune["final"],
                                             start=getattr(sentence, "state", None))
            row["crossfit_seconds"] = round(time.perf_counter() - fold_start, 1)
            x = np.hstack([model_features(pairs, "extended", encoder, idf=idf), columns])
            name = "encoder"
            sentence = (PretrainedEncoder(s.sentence_encoder, s.encoder_batch, s.encoder_precision, state,
                                        layers) if state else None)
        elif name == "cross":  # the cross-encoder's probability, cross-fitted (folds + 1 fine-tunings)
            from paramill.twitter.cross import CrossEncoder

            s = cross_settings
            probability, state = crossfit_cross(pairs, y, groups, s)
            row["crossfit_seconds"] = round(time.perf_counter() - start, 1)
            x = np.hstack([model_features(pairs, "extended", encoder, idf=idf), probability[:, None]])
            sentence = CrossEncoder(s.sentence_encoder, s.encoder_batch, s.encoder_precision, state)
        else:
            x = model_features(pairs, name, encoder, sentence, idf=idf, alignment=alignment)
        feature_seconds = time.perf_counter() - start
        oof = out_of_fold(x, y, groups, settings, refit if name != "lr" else None)
        row["cv"] = metrics(y, oof)
        chosen = row["threshold"] = threshold_for_precision(y, oof, settings.target_precision)
        start = time.perf_counter()
        model = fit(x, labels, settings)
        row["train_seconds"] = round(feature_seconds + time.perf_counter() - start, 1)
        if name == "encoder" and sentence is None:  # fine-tuned without the final encoder
            out[label] = row
            continue
        def matrix(part, name=name, sentence=sentence):
            if name == "cross":
                return model_features(part, "cross", encoder, cross=sentence, idf=idf)
            return model_features(part, name, encoder, sentence, idf=idf, alignment=alignment)

        start = time.perf_counter()
        model.predict_proba(matrix(sample))
        row["scoring_pairs_per_second"] = round(len(sample) / (time.perf_counter() - start))
        for test_name, (tp, ty) in tests.items():
            p = model.predict_proba(matrix(tp))[:, 1]
            row[test_name] = {**metrics(ty, p), "at_threshold": at_threshold(ty, p, chosen["threshold"])}
        out[label] = row
    return out


class CrossDistilled:
    """Each pair's cosine from the student distilled on the sentences of the other half of
    the pairs only (``halves``: [(the pairs it scores, student)])."""

    def __init__(self, halves):
        self.halves = halves
        self.precision, self.layers = halves[0][1].precision, halves[0][1].layers

    def pair_columns(self, pairs, alignment=False):
        out = np.full((len(pairs), 1 + len(ALIGNMENT) if alignment else 1), np.nan)
        for members, student in self.halves:
            index = [i for i, pair in enumerate(pairs) if pair in members]
            if index:
                out[index] = student.pair_columns([pairs[i] for i in index], alignment)
        return out


def distil(pairs, labels, settings, log: dict, unseen: bool = True):
    """The student distilled on all ``pairs``' sentences, and the cross-distilled pair of
    students (:class:`CrossDistilled`; halves grouped by source tweet, a sentence found in
    both halves left out of both students' distillation)."""
    n = settings.encoder_layers

    def student(on, name):
        start = time.perf_counter()
        state = distill_student(on, settings)
        log[name] = {"sentences": len(set(on)),
                     "seconds": round(time.perf_counter() - start, 1)}
        enc = PretrainedEncoder(settings.sentence_encoder, settings.encoder_batch,
                              settings.encoder_precision, state, n)
        enc.state = state  # where its fine-tuning starts
        return enc

    text = unlabelled_sentences(settings.distill_text, settings.distill_max_sentences, settings.seed)
    if text:
        log["text"] = {"files": list(settings.distill_text), "sentences": len(text)}
    whole = student([t for pair in pairs for t in pair] + text, f"url-student{n}")
    if not unseen:
        return whole, None
    halves = [[pairs[i] for i in part]
              for part in grouped_folds(labels, source_groups(pairs), dataclasses.replace(settings, folds=2))[0]]
    sides = [{t for pair in half for t in pair} for half in halves]
    students = []
    for k, half in enumerate(halves):  # the text too, less the scored half's sentences
        unseen = [t for t in sorted(sides[1 - k]) + text if t not in sides[k]]
        students.append((set(half), student(unseen, f"url-student{n}-half{k}")))
    return whole, CrossDistilled(students)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url-corpus", default=str(SHARED / "twitter-url-corpus/castorini-twitterPPDB/train"))
    parser.add_argument("--pit", default=str(SHARED / "pit-2015/dev.data"))
    parser.add_argument("--url-test", help="the URL corpus test split, tokenised form (a.toks, b.toks, sim.txt)")
    parser.add_argument("--pit-test", help="PIT-2015 test.data")
    parser.add_argument("--pit-test-labels", help="PIT-2015 test.label (else the data's label column)")
    parser.add_argument("--embed-model", help="a paramill embedding model for the cosine feature "
                                              "(refused if trained on the labelled pairs)")
    parser.add_argument("--models", nargs="+", choices=MODELS,
                        default=[m for m in MODELS if m != "cross"],
                        help="models to measure (cross, the cross-encoder, only when named: it "
                             "fine-tunes folds + 1 transformers)")
    parser.add_argument("--cross-epochs", type=int, default=1,
                        help="model cross: epochs of fine-tuning (twitter.identify.finetune_epochs)")
    parser.add_argument("--sentence-encoder", default=IdentifySettings().sentence_encoder)
    parser.add_argument("--precisions", nargs="+", choices=PRECISIONS, default=["auto"],
                        help="model encoder once per twitter.identify.encoder_precision "
                             "(rows encoder-<the precision it resolved to>)")
    parser.add_argument("--finetune-epochs", type=int, default=0,
                        help="also model encoder with twitter.identify.finetune_epochs N (rows "
                             "encoder-<precision>-finetuned; cross-fitted: folds fine-tunings)")
    parser.add_argument("--no-finetune-final", action="store_true",
                        help="skip the fine-tuning on all pairs (cross-validation only; no "
                             "scoring rate or test figures for the fine-tuned rows)")
    parser.add_argument("--finetune-students-only", action="store_true",
                        help="with --finetune-epochs and --students: fine-tune the students only, "
                             "not the whole encoder (whose fine-tuning takes several times longer)")
    parser.add_argument("--students", nargs="+", type=int, default=[],
                        help="also model encoder with twitter.identify.encoder_layers N, with the "
                             "first precision: on the URL corpus, a student distilled on all its "
                             "sentences, as the identifier does (row encoder-<precision>-student<N>) "
                             "and, cross-distilled, each half of the pairs (grouped by source tweet) "
                             "scored by a student distilled on the other half's sentences only (row "
                             "...-student<N>-unseen: what sentences the student never saw get); "
                             "on PIT-2015 dev, the URL corpus's student (row ...-student<N>-from-url)")
    parser.add_argument("--distill-epochs", type=int, default=IdentifySettings().distill_epochs)
    parser.add_argument("--no-unseen", action="store_true",
                        help="students: skip the cross-distilled (unseen) row and its two distillations")
    parser.add_argument("--distill-text", nargs="+", default=[],
                        help="students: also distil on these files' lines (twitter.identify."
                             "distill_text), e.g. the unlabelled sentences of the set to score")
    parser.add_argument("--datasets", nargs="+", choices=("url", "pit"), default=["url", "pit"])
    parser.add_argument("--holdout", type=float, default=0.0, metavar="FRACTION",
                        help="hold out the last FRACTION of each set's source tweets (in file order; "
                             "all their pairs) as a test set (row '<set> held-out'): nothing of it "
                             "reaches distillation, fine-tuning or the classifier, as for a test "
                             "split; cross-validation then runs on the rest")
    parser.add_argument("--folds", type=int, default=IdentifySettings().folds,
                        help="folds of the grouped cross-validation (every row of the run)")
    parser.add_argument("--idf-overlap", action=argparse.BooleanOptionalAction, default=True,
                        help="the extended models' IDF overlap (twitter.identify.idf_overlap); "
                             "--no-idf-overlap measures the 22 features of before")
    parser.add_argument("--token-alignment", action=argparse.BooleanOptionalAction, default=True,
                        help="model encoder's token alignment (twitter.identify.token_alignment); "
                             "--no-token-alignment measures the cosine alone")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--out")
    args = parser.parse_args()
    device.limit_threads(args.threads)
    settings = IdentifySettings(folds=args.folds, idf_overlap=args.idf_overlap,
                                token_alignment=args.token_alignment)
    encoder = None
    sentences = {}
    if "encoder" in args.models:
        for precision in args.precisions:
            enc = PretrainedEncoder(args.sentence_encoder, precision=precision)
            sentences[f"encoder-{enc.precision}"] = enc
    report = {"benchmark": f"paraphrase identification: grouped {args.folds}-fold cross-validation",
              "machine": machine(), "threads": args.threads,
              "sentence_encoder": args.sentence_encoder if sentences else None,
              "native_bfloat16": native_bfloat16(), "cosine_feature": bool(args.embed_model),
              "idf_overlap": args.idf_overlap, "token_alignment": args.token_alignment,
              "datasets": []}
    sets = [("twitter-url-corpus train", args.url_corpus, "toks", None, "url test",
             (args.url_test, "toks", None)),
            ("pit-2015 dev", args.pit, "pit2015", None, "pit test",
             (args.pit_test, "pit2015", args.pit_test_labels))]
    finetune = None
    if args.finetune_epochs:
        finetune = {"settings": dataclasses.replace(settings, model="encoder", sentence_encoder=args.sentence_encoder,
                                                        finetune_epochs=args.finetune_epochs),
                    "final": not args.no_finetune_final, "students_only": args.finetune_students_only}
        report["finetune"] = {k: v for k, v in finetune["settings"].__dict__.items()
                              if k.startswith("finetune_")} | {k: finetune[k] for k in ("final", "students_only")}
    cross_settings = dataclasses.replace(settings, model="cross", sentence_encoder=args.sentence_encoder,
                                         finetune_epochs=args.cross_epochs,
                                         encoder_precision=args.precisions[0])
    if "cross" in args.models:
        report["cross"] = {k: v for k, v in cross_settings.__dict__.items()
                           if k.startswith("finetune_") or k == "encoder_precision"}
    keys = [key for key in ("url", "pit") if key in args.datasets]
    sets = [s for s, key in zip(sets, ("url", "pit")) if key in args.datasets]
    read = {key: read_labelled(s[1], s[2], s[3]) for key, s in zip(keys, sets)}
    held = {}
    if args.holdout:
        if not 0 < args.holdout < 1:
            parser.error(f"--holdout: a fraction between 0 and 1, not {args.holdout}")
        report["holdout"] = {"fraction": args.holdout, "split": "the last source tweets in file order"}
        for key in keys:
            pairs, labels, dropped = read[key]
            kept, held[key] = holdout(pairs, labels, args.holdout)
            read[key] = (*kept, dropped)
    distilled = {}  # dataset -> {row name: sentence encoder}
    if args.students:
        report["students"] = {"distill_epochs": args.distill_epochs, "distilled_on": {}}
        if "url" not in keys:
            parser.error("--students distils on the URL corpus: --datasets must include url")
        url_pairs, url_labels = read["url"][0], np.asarray(read["url"][1])
        for n in args.students:
            s = dataclasses.replace(settings, sentence_encoder=args.sentence_encoder, encoder_layers=n,
                                    distill_epochs=args.distill_epochs, distill_text=args.distill_text,
                                    encoder_precision=args.precisions[0])
            student, cross = distil(url_pairs, url_labels, s, report["students"]["distilled_on"],
                                    not args.no_unseen)
            label = f"encoder-{student.precision}-student{n}"
            distilled.setdefault("url", {})[label] = student
            if cross is not None:
                distilled["url"][f"{label}-unseen"] = cross
            distilled.setdefault("pit", {})[f"{label}-from-url"] = student
    for key, (name, path, fmt, labels_file, test_name, (test_path, test_fmt, test_labels)) in zip(keys, sets):
        pairs, labels, dropped = read[key]
        own = {**sentences, **distilled.get(key, {})}
        record = {"name": name, "pairs": len(pairs), "positive": sum(labels), "dropped": dropped}
        if args.embed_model:  # the extended models' cosine; refused if it learnt these labels
            from paramill.embed.model import load_model

            record["embed_overlap"] = overlap = embedding_overlap(args.embed_model, pairs)
            check_embedding_overlap(overlap, settings.max_embed_overlap)
            encoder = load_model(args.embed_model)
        tests = {}
        if test_path:
            tp, ty, _ = read_labelled(test_path, test_fmt, test_labels)
            tests[test_name] = (tp, ty)
        if key in held:
            tests[f"{key} held-out"] = held[key]
            record["held_out"] = {"pairs": len(held[key][0]), "positive": sum(held[key][1])}
        report["datasets"].append({**record,
                                   "models": measure(pairs, labels, settings, encoder, own, tests,
                                                     args.models, finetune, cross_settings)})
    emit(report, args.out)


if __name__ == "__main__":
    main()
