"""Tweet objects of API v1.1 and v2 (live pages or archived JSONL) into one table."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from paramill.io import InputError, open_compressed

#: The normalised tweet table (DESIGN.md).
TWEETS = pa.schema([
    pa.field("tweet_id", pa.string(), nullable=False),
    pa.field("author", pa.string()),  # screen name, lower-case (author_id when unknown)
    pa.field("author_id", pa.string()),
    pa.field("created_at", pa.string()),  # ISO 8601, UTC
    pa.field("text", pa.string()),
    pa.field("urls", pa.list_(pa.string())),  # expanded (API) URLs, before canonicalisation
    pa.field("short_urls", pa.list_(pa.string())),  # URLs the API did not expand
    pa.field("canonical_urls", pa.list_(pa.string())),  # all of them expanded + canonical
    pa.field("is_retweet", pa.bool_()),
    pa.field("retweet_of", pa.string()),
    pa.field("lang", pa.string()),
    pa.field("source", pa.string()),  # timeline | search | archive
])

_V1_TIME = "%a %b %d %H:%M:%S %z %Y"


def _iso(value: str | None) -> str | None:
    if not value:
        return None
    try:
        stamp = _dt.datetime.strptime(value, _V1_TIME)
    except ValueError:
        stamp = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return stamp.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _urls(entities: dict[str, Any] | None) -> tuple[list[str], list[str]]:
    expanded, short = [], []
    for u in (entities or {}).get("urls", []) or []:
        best = u.get("unwound_url") or u.get("expanded_url")
        if best:
            expanded.append(best)
        elif u.get("url"):
            short.append(u["url"])
    return expanded, short


def from_v2(tweet: dict[str, Any], users: dict[str, str], source: str) -> dict[str, Any]:
    refs = tweet.get("referenced_tweets") or []
    retweet_of = next((r["id"] for r in refs if r.get("type") == "retweeted"), None)
    expanded, short = _urls(tweet.get("entities"))
    author_id = str(tweet.get("author_id") or "")
    author = (tweet.get("author") or {}).get("username") or users.get(author_id) or author_id
    return {"tweet_id": str(tweet["id"]), "author": author.lower() if author else None,
            "author_id": author_id or None, "created_at": _iso(tweet.get("created_at")),
            "text": tweet.get("text", ""), "urls": expanded, "short_urls": short,
            "canonical_urls": None, "is_retweet": retweet_of is not None, "retweet_of": retweet_of,
            "lang": tweet.get("lang"), "source": source}


def from_v1(tweet: dict[str, Any], source: str) -> dict[str, Any]:
    text = ((tweet.get("extended_tweet") or {}).get("full_text") or tweet.get("full_text")
            or tweet.get("text") or "")
    entities = (tweet.get("extended_tweet") or {}).get("entities") or tweet.get("entities")
    expanded, short = _urls(entities)
    retweeted = tweet.get("retweeted_status")
    user = tweet.get("user") or {}
    return {"tweet_id": str(tweet.get("id_str") or tweet["id"]),
            "author": (user.get("screen_name") or "").lower() or None,
            "author_id": str(user.get("id_str") or user.get("id") or "") or None,
            "created_at": _iso(tweet.get("created_at")), "text": text, "urls": expanded,
            "short_urls": short, "canonical_urls": None, "is_retweet": retweeted is not None,
            "retweet_of": str(retweeted.get("id_str") or retweeted.get("id")) if retweeted else None,
            "lang": tweet.get("lang"), "source": source}


def from_page(page: dict[str, Any], source: str) -> list[dict[str, Any]]:
    """The tweets of one v2 API response page (``data`` + ``includes.users``)."""
    users = {str(u["id"]): u.get("username", "") for u in (page.get("includes") or {}).get("users", [])}
    return [from_v2(t, users, source) for t in page.get("data") or []]


def from_object(obj: dict[str, Any], source: str) -> list[dict[str, Any]]:
    """A v2 page, a v2 tweet or a v1.1 tweet."""
    if "data" in obj and isinstance(obj["data"], list):
        return from_page(obj, source)
    if "data" in obj and isinstance(obj["data"], dict):  # single-tweet v2 response
        return from_page({"data": [obj["data"]], "includes": obj.get("includes")}, source)
    if "id_str" in obj or "user" in obj:
        return [from_v1(obj, source)]
    if "id" in obj and "text" in obj:
        return [from_v2(obj, {}, source)]
    raise ValueError("neither a v1.1 nor a v2 tweet object")


def read_archive(paths: Iterable[str | Path]) -> Iterator[dict[str, Any]]:
    """Tweets from JSONL files (plain or compressed) of v1.1/v2 objects or v2 pages."""
    for path in paths:
        with open_compressed(path) as fh:
            for line_no, raw in enumerate(fh, 1):
                line = raw.strip()
                if not line:
                    continue
                try:
                    obj = json.loads(line)
                    yield from from_object(obj, "archive")
                except (ValueError, KeyError, TypeError, AttributeError) as exc:
                    raise InputError(path, line_no, f"not a tweet object: {exc}") from None
