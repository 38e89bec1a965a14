"""A month of harvested days: pairs with ``p_paraphrase`` (from the identifier that
:func:`paramill.twitter.identify.train_identifier` fitted), the accepted paraphrases with
their tweet ids, and growth over months."""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from paramill.errors import InputError, check_regular_file
from paramill.io.tablewrite import TableWriter
from paramill.io.jsonfiles import read_json, write_json
from paramill.run.job import output_job
from paramill.provenance import Run
from paramill.io.jsonfiles import COUNT, TEXT, read_json_as
from paramill.io.tableread import read_table
from paramill.twitter.identify import Identifier
from paramill.twitter.days import days_before as before_month
from paramill.twitter.tweets import TWEETS, TWEETS_ADDED
from paramill.twitter.url_pairs import PAIRS, PairSettings, build_pairs

def check_days(month: str, days: list[str | Path]) -> None:
    """``month`` must be a month (``YYYY-MM``) and ``days`` its day tables: a table named as a
    harvest names it (``<YYYY-MM-DD>.parquet``) for a day of another month, or a table given
    twice, was counted into the month's stats (and its growth row) without a word."""
    try:
        _dt.date.fromisoformat(f"{month}-01")
        if len(month) != 7:
            raise ValueError
    except ValueError:
        raise ValueError(f"month {month!r} is not a month (YYYY-MM)") from None
    seen: dict[Path, str | Path] = {}
    for day in days:
        name = Path(day).name.split(".")[0]
        if _DAY.fullmatch(name) and not name.startswith(f"{month}-"):
            raise InputError(day, None, f"is the day table of {name}, not of a day of {month}")
        key = Path(day).resolve()
        if key in seen:
            raise InputError(day, None, f"is given twice (also as {seen[key]}); each day once")
        seen[key] = day


def check_context(month: str, context: list[str | Path], days_before: int,
                  days: list[str | Path]) -> None:
    """``context`` must be day tables of the ``days_before`` days before ``month``, none of
    them one of its ``days`` (a table named as a harvest names it is checked by its name)."""
    earliest, first = before_month(month, days_before)
    own = {Path(d).resolve() for d in days}
    for day in context:
        name = Path(day).name.split(".")[0]
        if _DAY.fullmatch(name) and not earliest <= name < first:
            raise InputError(day, None, f"is the day table of {name}, not of the {days_before} "
                             f"days before {month} (twitter.pairs.context_days)")
        if Path(day).resolve() in own:
            raise InputError(day, None, "is one of the month's days and a day before it; each once")


def _tweets(days: list[str | Path]) -> pl.DataFrame | None:
    """The tweets of day tables, each once (the first table's copy), or None without days."""
    return (pl.concat([pl.from_arrow(read_table(d, TWEETS, "a day table of tweets (`paramill "
                                                "twitter harvest`)", TWEETS_ADDED)) for d in days])
            .unique("tweet_id", keep="first", maintain_order=True)) if days else None


_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
SCORED = pa.schema(list(PAIRS) + [pa.field("p_paraphrase", pa.float64())])


def score_month(days: list[str | Path], model: str | Path, accounts: list[str], out_pairs: str | Path,
                out_tsv: str | Path, out_stats: str | Path, month: str,
                pair_settings: PairSettings = PairSettings(), threshold: float | None = None,
                cards: dict[str, dict[str, str]] | None = None, rule: str = "twitter_month",
                card_cache: str | Path | None = None, card_access: dict[str, Any] | None = None,
                context: list[str | Path] = (), context_card_cache: str | Path | None = None
                ) -> dict[str, Any]:
    """Pairs of a month's tweets, ``p_paraphrase`` for each, and the accepted ones (at
    ``threshold``, or the one the identifier chose when it is None). ``context``: the day
    tables of the ``context_days`` before the month, whose tweets pair with the month's (a
    URL's tweets found after its news tweet's day) but not with each other. With
    ``fetch_cards`` and no ``cards`` given, the news URLs' pages are read (each once:
    ``card_cache``, and the month before's ``context_card_cache``, only read;
    ``card_access``: :func:`~paramill.twitter.urls.fetch_cards`' ``private_urls``, ``timeout``)."""
    check_days(month, days)
    check_context(month, list(context), pair_settings.context_days, days)
    run = Run(rule=rule, params={"month": month, "threshold": threshold, "accounts": accounts,
                                 **asdict(pair_settings)}, inputs=[*days, *context, model])
    own, before = _tweets(days), _tweets(list(context))
    if own is not None and before is not None:  # a tweet filed twice is the earlier day's
        own = own.filter(~pl.col("tweet_id").is_in(before["tweet_id"].implode()))
    paired = own if own is None or before is None else pl.concat([own, before])
    if pair_settings.fetch_cards and paired is not None and not cards:
        cards = _news_cards(paired, accounts, card_cache, context_card_cache, card_access)
    pairs, reasons = (build_pairs(paired, accounts, pair_settings, cards,
                                  frozenset(before["tweet_id"]) if before is not None else frozenset())
                      if paired is not None else ([], {}))
    ident = Identifier.load(model)
    threshold = ident.accept_at(threshold)
    probs = ident.score([(p["s1"], p["s2"]) for p in pairs]) if pairs else []
    for p, prob in zip(pairs, probs):
        p["p_paraphrase"] = float(prob)
    accepted = [p for p in pairs if p["p_paraphrase"] >= threshold]
    stats = {"month": month, "days": len(days), "tweets": 0 if own is None else own.height,
             "news_tweets": 0 if own is None else int(own["author"].is_in(
                 [a.lower() for a in accounts]).sum()),
             "urls": 0 if own is None else int(own.explode("canonical_urls")["canonical_urls"].n_unique()),
             "pairs": len(pairs), "accepted": len(accepted), "filtered": dict(reasons),
             "model": ident.settings.model, "threshold": threshold,
             "days_before": len(context), "tweets_before": 0 if before is None else before.height}
    if used := ident.encoder_used():
        stats["sentence_encoder"] = used
    if halved := ident.out_of_gpu_memory():  # batches halved to fit the card
        stats["out_of_gpu_memory"] = halved
    with output_job(run, out_pairs, out_tsv, out_stats, rows_in=stats["tweets"], each=True) as job:
        t_pairs, t_tsv, t_stats = job.paths
        writer = TableWriter(t_pairs, SCORED)
        writer.write(pa.Table.from_pylist(pairs, schema=SCORED))
        writer.close()
        with open(t_tsv, "w", encoding="utf-8") as fh:
            for p in accepted:
                fh.write(f"{p['s1']}\t{p['s2']}\t{p['tweet_a']}\t{p['tweet_b']}\t{p['p_paraphrase']:.4f}\n")
        write_json(t_stats, stats)
        job.rows_out, job.extra = len(accepted), {"stats": stats}
    return stats


def _news_cards(tweets: pl.DataFrame, accounts: list[str], card_cache: str | Path | None,
                before: str | Path | None, access: dict[str, Any] | None) -> dict[str, dict[str, str]]:
    """The cards of the news tweets' pages: the month before's cache first (its days' news
    tweets, read there by their harvests; only read), then the month's, read for what is missing."""
    from paramill.twitter.urls import fetch_cards, load_card_cache

    news = tweets.filter(pl.col("author").is_in([a.lower() for a in accounts]))
    urls = news.explode("canonical_urls")["canonical_urls"].drop_nulls().unique(maintain_order=True).to_list()
    known = load_card_cache(Path(before)) if before and Path(before).exists() else {}
    cards = {u: known[u] for u in urls if u in known}
    return {**cards, **fetch_cards([u for u in urls if u not in cards], cache=card_cache, **(access or {}))}


def growth(stats_files: list[str | Path], tsv: str | Path, png: str | Path | None, plot=None,
           rule: str = "twitter_growth") -> list[dict[str, Any]]:
    run = Run(rule=rule, params={}, inputs=list(stats_files))
    found: dict[str, tuple[str | Path, dict[str, Any]]] = {}
    for path in stats_files:
        row = _month_stats(path)
        if row["month"] in found:
            raise InputError(path, None, f"holds month {row['month']}, as {found[row['month']][0]} "
                             "does: each month once")
        found[row["month"]] = (path, row)
    table = [{k: row[k] for k in GROWTH} for _, (_, row) in sorted(found.items())]
    outs = [tsv] + ([png] if png else [])
    with output_job(run, *outs, rows_in=len(table), each=True) as job:
        pl.DataFrame(table).write_csv(job.paths[0], separator="\t")
        if png:
            plot(table, job.paths[1])
        job.rows_out = len(table)
    return table


#: a month's counts, as `twitter month` writes them to stats.json: the growth table's columns
GROWTH = ("month", "days", "tweets", "news_tweets", "urls", "pairs", "accepted")


#: a month's stats.json (`paramill twitter month --stats`), as far as `twitter growth` reads it
MONTH_STATS = {"type": "object", "required": list(GROWTH),
               "properties": {"month": TEXT, **{k: COUNT for k in GROWTH[1:]}}}


def _month_stats(path: str | Path) -> dict[str, Any]:
    """A month's stats.json, checked (another JSON file was a KeyError traceback)."""
    stats = read_json_as(path, MONTH_STATS, "a month's stats (`paramill twitter month --stats`)")
    try:
        check_days(stats["month"], [])
    except ValueError as exc:
        raise InputError(path, None, str(exc)) from None
    return stats


def load_cards(path: str | Path | None) -> dict[str, dict[str, str]]:
    """``{url: {title, description}}`` from ``path`` (``twitter month --cards``; none without
    it). A file that is missing, not JSON or not such a mapping is an error naming it."""
    if not path:
        return {}
    from paramill.twitter.urls import check_cards

    check_regular_file(path)
    return check_cards(read_json(path), path)
