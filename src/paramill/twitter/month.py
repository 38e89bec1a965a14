"""A month of harvested days: training the identifier, pairs with ``p_paraphrase``, the
accepted paraphrases with their tweet ids, and growth over months."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from paramill.io import TableWriter, atomic_output, read_json, write_json
from paramill.provenance import Run, prov_path
from paramill.twitter.identify import (
    Identifier,
    IdentifySettings,
    at_threshold,
    check_embedding_overlap,
    crossfit_cosine,
    crossfit_cross,
    distill_student,
    embedding_overlap,
    fit,
    metrics,
    out_of_fold,
    read_labelled,
    source_groups,
    threshold_for_precision,
    unlabelled_sentences,
)
from paramill.twitter.pairs import PAIRS, PairSettings, build_pairs

SCORED = pa.schema(list(PAIRS) + [pa.field("p_paraphrase", pa.float64())])


def train_identifier(train: list[dict[str, str]], evaluate: list[dict[str, str]], out: str | Path,
                     report: str | Path, settings: IdentifySettings, rule: str = "paraid_train"
                     ) -> dict[str, Any]:
    """Fit LR (18 features), the extended model and, when configured, the encoder model on
    ``train`` ([{path, format, labels}]); with ``finetune_epochs`` the encoder's cosine is
    cross-fitted (:func:`crossfit_cosine`). Out-of-fold scores (folds grouped by source
    tweet) give each model's cross-validated metrics and the acceptance threshold for
    ``target_precision``; each ``evaluate`` set is scored by the models fitted on all of
    train. An embedding model for the cosine that was trained on the labelled pairs is
    refused (:class:`EmbeddingLeak`)."""
    labelled = [d["path"] for d in train + evaluate] + [d["labels"] for d in train + evaluate
                                                         if d.get("labels")]
    student = settings.model == "encoder" and settings.encoder_layers > 0  # distilled first
    inputs = labelled + ([settings.embed_model] if settings.embed_model else []) \
        + (list(settings.distill_text) if student else [])
    run = Run(rule=rule, params={"train": train, "evaluate": evaluate, **asdict(settings)}, inputs=inputs)
    pairs, labels, dropped = [], [], 0
    for d in train:
        p, y, n = read_labelled(d["path"], d["format"], d.get("labels"))
        pairs += p
        labels += y
        dropped += n
    if len(set(labels)) < 2:
        raise ValueError("the identifier's training data needs both paraphrases and non-paraphrases")
    results: dict[str, Any] = {"train_pairs": len(pairs), "train_dropped": dropped,
                               "positive": int(sum(labels)), "evaluations": []}
    if settings.embed_model:
        results["embed_overlap"] = overlap = embedding_overlap(settings.embed_model, pairs)
        check_embedding_overlap(overlap, settings.max_embed_overlap)
    ident = Identifier(settings, settings.embed_model)
    y, groups = np.asarray(labels), source_groups(pairs)
    names = ["lr", "extended"] + ([settings.model] if settings.model in ("encoder", "cross") else [])
    if settings.model == "cross" and settings.finetune_epochs < 1:
        raise ValueError("twitter.identify.model cross fine-tunes a cross-encoder on the labelled "
                         "pairs: set twitter.identify.finetune_epochs to at least 1")
    # read before any model is fitted: a bad line stops training at once
    text = unlabelled_sentences(settings.distill_text, settings.distill_max_sentences,
                                settings.seed) if student else []
    oof, xs = {}, {}
    for name in names:
        if name == "encoder":  # the extended features and the sentence encoder's cosine
            if student:  # distilled without labels
                own = {s for pair in pairs for s in pair}
                ident.encoder_state = distill_student(sorted(own) + text, settings)
            if settings.finetune_epochs:  # cross-fitted (leak-free)
                cosine, ident.encoder_state = crossfit_cosine(pairs, y, groups, settings,
                                                              start=ident.encoder_state)
            else:
                cosine = ident.sentence_encoder().cosine(pairs)
            x = xs[name] = np.hstack([xs["extended"], cosine[:, None]])
        elif name == "cross":  # the extended features and the cross-encoder's probability
            probability, ident.cross_state = crossfit_cross(pairs, y, groups, settings)
            x = xs[name] = np.hstack([xs["extended"], probability[:, None]])
        else:
            x = xs[name] = ident.features(pairs, name)
        ident.fitted[name] = fit(x, labels, settings)
        oof[name] = out_of_fold(x, y, groups, settings)
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
    ident.threshold_choice = threshold_for_precision(y, oof[settings.model], settings.target_precision)
    ident.threshold = ident.threshold_choice["threshold"]
    results["threshold"] = {**ident.threshold_choice, "model": settings.model,
                            "chosen_on": f"{settings.folds}-fold out-of-fold scores on train, "
                                         "folds grouped by source tweet",
                            "used": ident.accept_at(settings.threshold)}
    used = ident.accept_at(settings.threshold)
    results["evaluations"].append({
        "data": f"{settings.folds}-fold cross-validation on train, grouped by source tweet",
        "pairs": len(pairs), **{name: metrics(y, oof[name]) for name in names},
        "at_threshold": {"model": settings.model, **at_threshold(y, oof[settings.model], used)}})
    for d in evaluate:
        p, yy, n = read_labelled(d["path"], d["format"], d.get("labels"))
        scored = {name: ident.score(p, name) for name in names}
        results["evaluations"].append({
            "data": d["path"], "pairs": len(p), "dropped": n,
            **{name: metrics(yy, scored[name]) for name in names},
            "at_threshold": {"model": settings.model, **at_threshold(yy, scored[settings.model], used)}})
    with atomic_output(out, report, prov_path(out), prov_path(report)) as (tmp, tmp_rep, prov, prov_rep):
        ident.save(tmp)
        write_json(tmp_rep, results)
        for final, t, pv in ((out, tmp, prov), (report, tmp_rep, prov_rep)):
            run.write({final: t}, {final: pv}, rows_in=len(pairs), rows_out=None,
                      extra={"evaluations": results["evaluations"], "threshold": results["threshold"]})
    return results


def score_month(days: list[str | Path], model: str | Path, accounts: list[str], out_pairs: str | Path,
                out_tsv: str | Path, out_stats: str | Path, month: str,
                pair_settings: PairSettings = PairSettings(), threshold: float | None = None,
                cards: dict[str, dict[str, str]] | None = None, rule: str = "twitter_month"
                ) -> dict[str, Any]:
    """Pairs of a month's tweets, ``p_paraphrase`` for each, and the accepted ones (at
    ``threshold``, or the one the identifier chose when it is None)."""
    run = Run(rule=rule, params={"month": month, "threshold": threshold, "accounts": accounts,
                                 **asdict(pair_settings)}, inputs=[*days, model])
    tweets = (pl.concat([pl.read_parquet(d) for d in days], how="vertical_relaxed")
              .unique("tweet_id", keep="first", maintain_order=True)) if days else None
    if pair_settings.fetch_cards and tweets is not None and not cards:
        from paramill.twitter.urls import fetch_cards

        news = tweets.filter(pl.col("author").is_in([a.lower() for a in accounts]))
        cards = fetch_cards(news.explode("canonical_urls")["canonical_urls"].drop_nulls().to_list())
    pairs, reasons = build_pairs(tweets, accounts, pair_settings, cards) if tweets is not None else ([], {})
    ident = Identifier.load(model)
    threshold = ident.accept_at(threshold)
    probs = ident.score([(p["s1"], p["s2"]) for p in pairs]) if pairs else []
    for p, prob in zip(pairs, probs):
        p["p_paraphrase"] = float(prob)
    accepted = [p for p in pairs if p["p_paraphrase"] >= threshold]
    stats = {"month": month, "days": len(days), "tweets": 0 if tweets is None else tweets.height,
             "news_tweets": 0 if tweets is None else int(tweets["author"].is_in(
                 [a.lower() for a in accounts]).sum()),
             "urls": 0 if tweets is None else int(tweets.explode("canonical_urls")["canonical_urls"].n_unique()),
             "pairs": len(pairs), "accepted": len(accepted), "filtered": dict(reasons),
             "model": ident.settings.model, "threshold": threshold}
    if ident.encoder_used():
        stats["sentence_encoder"] = ident.encoder_used()
    with atomic_output(out_pairs, out_tsv, out_stats, prov_path(out_pairs), prov_path(out_tsv),
                       prov_path(out_stats)) as tmps:
        t_pairs, t_tsv, t_stats, p_pairs, p_tsv, p_stats = tmps
        writer = TableWriter(t_pairs, SCORED)
        writer.write(pa.Table.from_pylist(pairs, schema=SCORED))
        writer.close()
        with open(t_tsv, "w", encoding="utf-8") as fh:
            for p in accepted:
                fh.write(f"{p['s1']}\t{p['s2']}\t{p['tweet_a']}\t{p['tweet_b']}\t{p['p_paraphrase']:.4f}\n")
        write_json(t_stats, stats)
        for final, t, pv in ((out_pairs, t_pairs, p_pairs), (out_tsv, t_tsv, p_tsv), (out_stats, t_stats, p_stats)):
            run.write({final: t}, {final: pv}, rows_in=stats["tweets"], rows_out=len(accepted),
                      extra={"stats": stats})
    return stats


def growth(stats_files: list[str | Path], tsv: str | Path, png: str | Path | None, plot=None,
           rule: str = "twitter_growth") -> list[dict[str, Any]]:
    run = Run(rule=rule, params={}, inputs=list(stats_files))
    rows = sorted((read_json(p) for p in stats_files), key=lambda s: s["month"])
    table = [{k: r[k] for k in ("month", "days", "tweets", "news_tweets", "urls", "pairs", "accepted")}
             for r in rows]
    outs = [tsv] + ([png] if png else [])
    with atomic_output(*outs, *[prov_path(o) for o in outs]) as tmps:
        files, provs = tmps[:len(outs)], tmps[len(outs):]
        pl.DataFrame(table).write_csv(files[0], separator="\t")
        if png:
            plot(table, files[1])
        for final, t, pv in zip(outs, files, provs):
            run.write({final: t}, {final: pv}, rows_in=len(rows), rows_out=len(table))
    return table


def load_cards(path: str | Path | None) -> dict[str, dict[str, str]]:
    return json.loads(Path(path).read_text()) if path and Path(path).exists() else {}
