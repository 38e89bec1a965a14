"""``paramill twitter``: harvest, identifier, monthly pairs, growth."""

import argparse
import sys

from paramill.run.commands import Group, arg, need, out

group = Group("twitter", "tweets sharing news URLs: harvest, pairs, identification", docs="methods/twitter.md")


@group.verb(
    "harvest", "harvest (or replay from archives) one day of tweets",
    need("--date", "YYYY-MM-DD (live: today or a day past, UTC; a day past whose harvest is "
         "settled is rebuilt from its saved pages)"),
    out("--out", "the day's tweet table (Parquet)"),
    out("--rejected", required=False, help="the day's rejected records with reasons (Parquet; default: "
                           "rejected/<name> beside --out)"),
    arg("--archive", nargs="*", help="JSONL files to replay (source archive)"),
    arg("--url-cache", help="the month's URL expansion cache (JSON)"),
    arg("--earlier-url-cache", help="the one URL cache of every month that paramill kept "
                                    "before it kept one a month (JSON): only read, for the days "
                                    "harvested while it was written; their links go into --url-cache"),
    arg("--card-cache", help="the month's page cards (JSON; twitter.pairs.fetch_cards): the cards "
                             "of the day's news pages are read into it; none when empty"),
    description="Live: news accounts' timelines, then a recent search per new URL (X API v2 "
                "via tweepy). Archive: replay JSONL tweets. Exit 3 when the harvest cannot go "
                "on (credentials refused, the free tier, the monthly post cap reached, another "
                "harvest holding the state; the pages saved are kept, and a later day's run "
                "builds a stopped day's table from them). "
                "Source, raw_dir and state come from the twitter section.",
    settings={"settings": "twitter.harvest", "twitter_settings": "twitter"}, launch=True,
    example='paramill twitter harvest --date 2026-10-05 --archive data/sample/tweets/tweets.jsonl.gz --out work/twitter/harvest/2026-10-05.parquet')
def harvest(args: argparse.Namespace) -> int | str:
    from paramill.twitter.harvest import HarvestError, HarvestSettings, harvest_day
    try:
        stats = harvest_day(args.date, args.out, HarvestSettings.from_dict(args.settings),
                            source=args.twitter_settings["source"],
                            raw_dir=args.twitter_settings["raw_dir"],
                            state_path=args.twitter_settings["state"],
                            archive=args.archive, url_cache=args.url_cache, rule=args.rule,
                            earlier_url_cache=args.earlier_url_cache,
                            rejected_out=args.rejected, card_cache=args.card_cache)
    except HarvestError as exc:
        print(f"paramill twitter harvest: {exc}", file=sys.stderr)
        return 3
    return f"{args.date}: {stats}"


@group.verb(
    "identify", "train the paraphrase identifier (twitter.identify: lr, extended, encoder or "
    "cross)",
    arg("--embed-model", help="the embedding model file for the cosine feature (the workflow "
                              "resolves twitter.identify.embed_model; '' = none)"),
    out("--out", "model file"), out("--report", "evaluation JSON (max F1, P, R)"),
    description="Labelled data and evaluation sets are the settings' train and evaluate. "
                "Reports grouped cross-validation on train (folds by source tweet: max F1 with "
                "P/R, ROC AUC, average precision), each evaluate set, and the acceptance "
                "threshold chosen for twitter.identify.target_precision. Refuses an embedding "
                "model trained on the labelled pairs.",
    settings="twitter.identify",
    example='paramill twitter identify --settings \'{"train": [{"path": "data/sample/tweets/labelled.tsv", "format": "twitter-url"}]}\' --out paraid.npz --report paraid.json')
def identify(args: argparse.Namespace) -> int | str:
    from paramill.twitter.identify import MODELS, IdentifySettings, train_identifier
    if args.embed_model is not None:
        args.settings["embed_model"] = args.embed_model or None
    settings = IdentifySettings.from_dict(args.settings)
    result = train_identifier(list(settings.train), list(settings.evaluate), args.out,
                              args.report, settings, rule=args.rule)
    return "; ".join(f"{ev['data']}: " + ", ".join(f"{name} F1 {ev[name]['f1']}" for name in
                                                  MODELS if name in ev)
                     for ev in result["evaluations"])


@group.verb(
    "month", "pairs of a month's tweets with p_paraphrase",
    arg("days", nargs="*", help="day tables of the month"), need("--month", "YYYY-MM"),
    need("--model", "identifier from `paramill twitter identify`"),
    arg("--cards", help="JSON {url: {title, description}} of linked pages"),
    arg("--card-cache", help="with twitter.pairs.fetch_cards and no --cards: the cards read "
                             "before (JSON), read first and written back; a URL is fetched once"),
    arg("--context", nargs="*", default=[], help="day tables of the days before the month "
        "(twitter.pairs.context_days): their tweets pair with the month's, not with each other"),
    arg("--context-card-cache", help="the card cache of the month before (JSON; only read): the "
                                     "cards of --context's news tweets"),
    out("--pairs", "output: every candidate pair with p_paraphrase"),
    out("--tsv", "accepted: s1, s2, tweet_a, tweet_b, p"), out("--stats", "output counts (JSON)"),
    description="News accounts are twitter.harvest.accounts (their pages' cards are read as "
                "its private_urls and url_timeout say); pairs at or above "
                "twitter.identify.threshold are accepted (null: the threshold the identifier "
                "chose for twitter.identify.target_precision).",
    settings={"settings": "twitter.pairs", "harvest_settings": "twitter.harvest",
              "identify_settings": "twitter.identify"},
    example='paramill twitter month --month 2026-10 --model paraid.npz --pairs pairs.parquet --tsv paraphrases.tsv --stats stats.json work/twitter/harvest/2026-10-05.parquet work/twitter/harvest/2026-10-06.parquet')
def month(args: argparse.Namespace) -> int | str:
    from paramill.twitter.month import load_cards, score_month
    from paramill.twitter.url_pairs import PairSettings
    accounts = [a.lower() for a in args.harvest_settings["accounts"]]
    stats = score_month(args.days, args.model, accounts, args.pairs, args.tsv, args.stats,
                        args.month, PairSettings.from_dict(args.settings),
                        args.identify_settings["threshold"], load_cards(args.cards), rule=args.rule,
                        card_cache=args.card_cache, context=args.context,
                        context_card_cache=args.context_card_cache,
                        card_access={"private_urls": args.harvest_settings["private_urls"],
                                     "timeout": args.harvest_settings["url_timeout"]})
    return f"{args.month}: {stats}"


@group.verb(
    "growth", "tweets, pairs and paraphrases per month",
    arg("stats", nargs="+", help="monthly stats.json files"), out("--tsv", "output table"),
    out("--png", required=False, help="output plot"),
    example='paramill twitter growth results/twitter/*/stats.json --tsv growth.tsv --png growth.png')
def growth(args: argparse.Namespace) -> int | str:
    from paramill.twitter.growth import growth_plot
    from paramill.twitter.month import growth
    rows = growth(args.stats, args.tsv, args.png, plot=growth_plot, rule=args.rule)
    return f"{rows}"

