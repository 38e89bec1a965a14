"""Candidate pairs (Lan et al. 2017): each news account's tweet paired with every other
tweet that shares its URL, after dropping retweets and near-copies.

Dropped, counted by reason: the earlier versions of an edited post (its latest kept),
automatic retweets (the API marks them), manual retweets (after
:func:`paramill.twitter.tweettext.clean` and :func:`comparable`, one text is a substring of the
other — which covers texts that differ only in punctuation), texts equal to the linked
page's ``twitter:title``/``twitter:description`` (when fetched), texts shorter than
``min_tokens`` (7, as the original code) tokens, and tweets that the language identifier
does not find English (``not_english``: ``min_english``; the API's language codes let some
through, and an archive has none).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Annotated, Any

import polars as pl
import pyarrow as pa

from paramill.config.typed import Settings, setting
from paramill.twitter.tweettext import clean, comparable, tokenize

PAIRS = pa.schema([
    pa.field("url", pa.string(), nullable=False),
    pa.field("tweet_a", pa.string(), nullable=False),  # the news account's tweet
    pa.field("tweet_b", pa.string(), nullable=False),
    pa.field("author_a", pa.string()),
    pa.field("author_b", pa.string()),
    pa.field("s1", pa.string()),  # cleaned texts
    pa.field("s2", pa.string()),
])


@dataclass(frozen=True)
class PairSettings(Settings):
    min_tokens: int = setting(
        7, "Both tweets at least this many tokens after clean-up (the original code's 7).",
        minimum=1)
    fetch_cards: bool = setting(
        True,
        "Read each news URL's page for its twitter:title and twitter:description, and drop a "
        'tweet equal to either (Lan et al. 2017); each page read once and cached a month. Off: no'
        ' page is read (for nodes without the web).')
    languages: tuple[Annotated[str, {"pattern": "^[a-z]{2,3}$"}], ...] = setting(
        ("en",), "Languages of the tweets paired, as the API codes them (an English corpus: "
        "Lan et al.'s search asked for lang=en); a tweet that names none (an archive's) is "
        "kept. Empty: every language.")
    min_english: float = setting(
        0.2, "Drop a tweet whose cleaned text the language identifier (fastText lid.176) finds "
        "English with probability below this (not_english); the API's language codes miss "
        "some, an archive's tweets have none. 0: off.", minimum=0, maximum=1)
    context_days: int = setting(
        7, "Days before a month whose tweets pair with the month's: a URL's later tweets are "
           "filed under later days, so a news tweet of a month's last days meets them only so. "
           "Each pair is made once, in its later tweet's month. 0 keeps months apart.",
        minimum=0)


def reject_reason(a: str, b: str, card: dict[str, str] | None, min_tokens: int) -> str | None:
    """Why the cleaned pair (a, b) is not a candidate, or None."""
    ca, cb = comparable(a), comparable(b)
    if not ca or not cb:
        return "empty"
    if ca in cb or cb in ca:
        return "manual_retweet"
    if card and any(comparable(v) in (ca, cb) for v in card.values() if v):
        return "page_title"
    if len(tokenize(a)) < min_tokens or len(tokenize(b)) < min_tokens:
        return "too_short"
    return None


def _english(tweets: pl.DataFrame, min_english: float) -> pl.Series:
    """Whether each tweet's cleaned text is English with probability at least
    ``min_english`` (:mod:`paramill.text.langid`)."""
    from paramill.text.langid import identify

    texts = [clean(t or "") for t in tweets["text"].to_list()]
    return pl.Series(identify(texts, "en")[1] >= min_english)


def latest_versions(tweets: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str]]:
    """The tweets without the earlier versions of an edited post (X gives each edit a new
    id, and a search may find the post before and after its edit: the same text twice, or
    twice near it), and {id left out: its post's latest version}. Of a post's versions (its
    author's tweets of one ``first_version``, and that tweet) the one with the highest id
    is its latest (ids grow with time; another author's tweet naming it is no version of
    it). A table without ``first_version`` (written before it was read) is as it was."""
    if "first_version" not in tweets.columns or tweets["first_version"].null_count() == tweets.height:
        return tweets, {}
    order = pl.col("tweet_id").str.zfill(20)  # ids are decimal, at most 20 digits
    post = [pl.coalesce("first_version", "tweet_id"), "author"]  # one author's versions
    latest = tweets.select("tweet_id", pl.col("tweet_id").sort_by(order).last().over(post).alias("latest"))
    earlier = latest.filter(pl.col("tweet_id") != pl.col("latest"))
    return (tweets.filter(~pl.col("tweet_id").is_in(earlier["tweet_id"].implode())),
            dict(zip(earlier["tweet_id"], earlier["latest"])))


def build_pairs(tweets: pl.DataFrame, accounts: list[str], settings: PairSettings,
                cards: dict[str, dict[str, str]] | None = None, context: frozenset[str] = frozenset()
                ) -> tuple[list[dict[str, Any]], Counter]:
    """Pairs from a tweet table (one row a tweet, ``canonical_urls`` filled). ``context``: ids
    of tweets of the days before the month, paired with the month's but never with each
    other (their month made those pairs) nor counted; nor with the latest version of a post
    whose earlier version is one of them (their month paired that version)."""
    reasons: Counter = Counter()
    news_set = {a.lower() for a in accounts}
    tweets, earlier = latest_versions(tweets)
    reasons["earlier_version"] = len(set(earlier) - context)
    # a post edited after the days before filed its first version: their month paired that
    # version with their tweets, so its latest meets the month's tweets only
    paired_before = context | {latest for first, latest in earlier.items() if first in context}
    own = tweets.filter(~pl.col("tweet_id").is_in(list(context)))  # counted: the days before counted theirs
    reasons["auto_retweet"] = int(own["is_retweet"].sum())
    if settings.languages and "lang" in tweets.columns:  # a table without it names none
        spoken = pl.col("lang").is_null() | pl.col("lang").is_in(list(settings.languages))
        reasons["other_language"] = int(own.filter(~pl.col("is_retweet") & ~spoken).height)
        tweets = tweets.filter(spoken)
    if settings.min_english > 0 and tweets.height:
        english = _english(tweets, settings.min_english)
        reasons["not_english"] = int(own.filter(~pl.col("is_retweet") & pl.col("tweet_id").is_in(
            tweets.filter(~english)["tweet_id"].implode())).height)
        tweets = tweets.filter(english)
    by_url = (tweets.filter(~pl.col("is_retweet"))
              .explode("canonical_urls").drop_nulls("canonical_urls")
              .rename({"canonical_urls": "url"}))
    pairs = []
    for (url,), group in by_url.group_by(["url"], maintain_order=True):
        rows = group.sort("tweet_id").to_dicts()
        news = [r for r in rows if (r["author"] or "") in news_set]
        for a in news:
            s1 = clean(a["text"])
            for b in rows:
                if (b["tweet_id"] == a["tweet_id"] or b["author"] == a["author"]
                        or (a["tweet_id"] in paired_before and b["tweet_id"] in paired_before)):
                    continue
                s2 = clean(b["text"])
                reason = reject_reason(s1, s2, (cards or {}).get(url), settings.min_tokens)
                if reason:
                    reasons[reason] += 1
                    continue
                pairs.append({"url": url, "tweet_a": a["tweet_id"], "tweet_b": b["tweet_id"],
                              "author_a": a["author"], "author_b": b["author"], "s1": s1, "s2": s2})
    reasons["pairs"] = len(pairs)
    return pairs, reasons
