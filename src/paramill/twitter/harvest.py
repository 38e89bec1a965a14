"""One day's harvest: news accounts' timelines since the last harvested id, then a recent
search for every new URL, through the X API v2 (tweepy) — or the same day replayed from
archived JSONL files.

Live harvest, and what makes it safe to kill and re-run:

- every API response page is saved as it arrives, compressed, under
  ``<raw_dir>/<date>/`` (one file a page, written atomically) — credentials are never in it;
- the state file (per-account ``since_id``, per-URL search ``since_id`` and ``next_token``)
  is written atomically, and only after the pages it accounts for are saved;
- the day's tweet table is rebuilt from all of the day's saved pages, one row a tweet id.

So a harvest killed at any point and re-run fetches again at most what it had not yet
recorded in the state, nothing is lost, and duplicates collapse in the table; a second run
for the same day finds nothing new and writes the same table. Rate limits: tweepy waits
for the reset (``wait_on_rate_limit``); server errors, network errors and malformed bodies
are retried with exponential back-off. An account tier that may not read timelines or
search (the free tier) ends the harvest with one message.
"""

from __future__ import annotations

import datetime
import gzip
import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from paramill.config import Settings
from paramill.io import TableWriter, atomic_output, read_json, write_json
from paramill.provenance import Run, prov_path
from paramill.twitter.tweets import TWEETS, from_page, read_archive
from paramill.twitter.urls import Expander, canonical, is_short

#: Major English-language news accounts (Lan et al. 2017 followed news accounts like these).
NEWS_ACCOUNTS = ["nytimes", "cnn", "bbcworld", "reuters", "ap", "washingtonpost", "wsj",
                 "guardian", "foxnews", "abc", "nbcnews", "cbsnews", "npr", "usatoday",
                 "latimes", "time", "bbcbreaking", "cnnbrk", "skynews", "business"]
TWEET_FIELDS = ["created_at", "entities", "referenced_tweets", "author_id", "lang"]


class HarvestError(RuntimeError):
    """A harvest that cannot go on (credentials, access tier); the message says why."""


@dataclass(frozen=True)
class HarvestSettings(Settings):
    accounts: list[str] = field(default_factory=lambda: list(NEWS_ACCOUNTS))
    bearer_token_env: str = "X_BEARER_TOKEN"
    consumer_key_env: str = "X_CONSUMER_KEY"
    consumer_secret_env: str = "X_CONSUMER_SECRET"
    access_token_env: str = "X_ACCESS_TOKEN"
    access_token_secret_env: str = "X_ACCESS_TOKEN_SECRET"
    max_results: int = 100
    max_pages: int = 20
    retries: int = 5
    backoff: float = 2.0
    expand_all: bool = False
    url_timeout: float = 5.0
    url_workers: int = 8
    #: a URL is searched again on harvests up to this many days after the one that first saw
    #: it, then dropped from the state (recent search reaches back 7 days)
    search_days: int = 7


class _Redact(logging.Filter):
    """Blanks the Authorization header and the given secrets in a record's message."""

    HEADER = re.compile(r"""(['"]?Authorization['"]?\s*[:=]\s*)(['"]?)[^'",}\n]*""", re.IGNORECASE)

    def __init__(self, secrets: list[str]):
        super().__init__()
        self.secrets = [x for x in secrets if x]

    def filter(self, record: logging.LogRecord) -> bool:
        text = self.HEADER.sub(r"\1\2[redacted]", record.getMessage())
        for secret in self.secrets:
            text = text.replace(secret, "[redacted]")
        record.msg, record.args = text, None
        return True


def make_client(settings: HarvestSettings):
    """A tweepy Client from the environment variables the settings name."""
    import tweepy

    token = os.environ.get(settings.bearer_token_env)
    keys = [os.environ.get(getattr(settings, k)) for k in
            ("consumer_key_env", "consumer_secret_env", "access_token_env", "access_token_secret_env")]
    # tweepy's DEBUG records print the request headers: pinned at INFO, and should a logging
    # config turn DEBUG on, the Authorization header and the credentials are blanked
    logging.getLogger("tweepy").setLevel(logging.INFO)
    client_log = logging.getLogger("tweepy.client")
    for old in [f for f in client_log.filters if isinstance(f, _Redact)]:
        client_log.removeFilter(old)
    client_log.addFilter(_Redact([token or "", *[k or "" for k in keys]]))
    if token:
        return tweepy.Client(bearer_token=token, wait_on_rate_limit=True, return_type=dict)
    if all(keys):
        return tweepy.Client(consumer_key=keys[0], consumer_secret=keys[1], access_token=keys[2],
                             access_token_secret=keys[3], wait_on_rate_limit=True, return_type=dict)
    raise HarvestError(f"no X API credentials: set {settings.bearer_token_env} (bearer token) or "
                       f"{settings.consumer_key_env}, {settings.consumer_secret_env}, "
                       f"{settings.access_token_env}, {settings.access_token_secret_env} (OAuth 1.0a)")


def call(fn: Callable[..., Any], settings: HarvestSettings, sleep: Callable[[float], None] = time.sleep,
         **kwargs: Any) -> dict[str, Any]:
    """One API call with retries on server errors, network errors and malformed bodies."""
    import requests
    import tweepy

    for attempt in range(settings.retries + 1):
        try:
            return fn(**kwargs)
        except (tweepy.Unauthorized, tweepy.Forbidden) as exc:
            raise HarvestError(
                f"the X API refused {fn.__name__} ({exc.response.status_code}): {_api_message(exc)}. "
                "Reading timelines and search needs the Basic access tier or higher; the free "
                "tier cannot harvest. Check the credentials' tier and project.") from None
        except tweepy.NotFound:
            return {}
        except (tweepy.TwitterServerError, requests.RequestException, ValueError) as exc:
            if attempt == settings.retries:
                raise HarvestError(f"{fn.__name__} failed after {settings.retries} retries: "
                                   f"{type(exc).__name__}") from None
            sleep(settings.backoff * 2 ** attempt)
    raise AssertionError("unreachable")


def _api_message(exc: Any) -> str:
    try:
        body = exc.response.json()
        return body.get("detail") or body.get("title") or str(body)[:200]
    except ValueError:
        return exc.response.text[:200]


class State:
    """Harvest state: per-account user id and since_id; per-URL search since_id/next_token."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        data = read_json(self.path) if self.path.exists() else {}
        self.users: dict[str, str] = data.get("users", {})
        self.since: dict[str, str] = data.get("since", {})
        self.urls: dict[str, dict[str, Any]] = data.get("urls", {})

    def save(self) -> None:
        with atomic_output(self.path) as (tmp,):
            write_json(tmp, {"users": self.users, "since": self.since, "urls": self.urls})


class PageStore:
    """A day's raw API pages, one compressed JSON file each, written atomically."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.count = len(list(self.root.glob("*.json.gz")))

    def save(self, kind: str, page: dict[str, Any]) -> Path:
        self.count += 1
        path = self.root / f"{self.count:06d}-{kind}.json.gz"
        with atomic_output(path) as (tmp,):
            with gzip.open(tmp, "wt", encoding="utf-8") as fh:
                json.dump(page, fh)
        return path

    def pages(self) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for path in sorted(self.root.glob("*.json.gz")):
            kind = path.name.split("-", 1)[1].split(".", 1)[0].split("_", 1)[0]
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                out.append((kind, json.load(fh)))
        return out


def _newest(ids: Iterable[str], current: str | None) -> str | None:
    best = int(current) if current else 0
    for i in ids:
        best = max(best, int(i))
    return str(best) if best else current


def prune_urls(state: State, date: str, days: int) -> int:
    """Drop the URLs first seen more than ``days`` days before ``date``; the number dropped.
    URLs from a state without first-seen dates count as first seen on ``date``."""
    day = datetime.date.fromisoformat(date)
    old = []
    for url, entry in state.urls.items():
        first = entry.setdefault("first_seen", date)
        if (day - datetime.date.fromisoformat(first)).days > days:
            old.append(url)
    for url in old:
        del state.urls[url]
    return len(old)


def harvest_live(client, store: PageStore, state: State, settings: HarvestSettings,
                 expander: Expander, sleep: Callable[[float], None] = time.sleep,
                 date: str | None = None) -> dict[str, int]:
    """Fetch timelines since the last ids, then search every URL seen within
    ``search_days`` of ``date`` (default today); update the state."""
    date = date or datetime.date.today().isoformat()
    counts = {"timeline_pages": 0, "search_pages": 0, "urls_searched": 0,
              "urls_dropped": prune_urls(state, date, settings.search_days)}
    news_urls: list[str] = []
    for account in settings.accounts:
        if account not in state.users:
            found = call(client.get_user, settings, sleep, username=account)
            if not found.get("data"):
                continue
            state.users[account] = str(found["data"]["id"])
            state.save()
        token = None
        newest = state.since.get(account)
        for _ in range(settings.max_pages):
            page = call(client.get_users_tweets, settings, sleep, id=state.users[account],
                        since_id=state.since.get(account), pagination_token=token,
                        max_results=max(5, min(settings.max_results, 100)),
                        tweet_fields=TWEET_FIELDS, expansions=["author_id"], user_fields=["username"])
            if not page:
                break
            store.save(f"timeline_{account}", page)
            counts["timeline_pages"] += 1
            tweets = from_page(page, "timeline")
            newest = _newest((t["tweet_id"] for t in tweets), newest)
            news_urls += [u for t in tweets if not t["is_retweet"] for u in t["urls"] + t["short_urls"]]
            token = (page.get("meta") or {}).get("next_token")
            if not token:
                break
        if newest:
            state.since[account] = newest
        state.save()  # after the pages are saved
    # every URL seen in the news tweets of this and earlier runs that is not finished
    expanded = expander.expand([u for u in news_urls if is_short(u) or settings.expand_all])
    for url in dict.fromkeys(canonical(expanded.get(u, u)) for u in news_urls):
        state.urls.setdefault(url, {"since_id": None, "next_token": None, "first_seen": date})
    state.save()
    for url, entry in state.urls.items():
        if entry.get("done_run"):
            continue
        counts["urls_searched"] += 1
        newest = entry.get("since_id")
        for _ in range(settings.max_pages):
            page = call(client.search_recent_tweets, settings, sleep, query=f'url:"{url}"',
                        since_id=entry.get("since_id"), next_token=entry.get("next_token"),
                        max_results=max(10, min(settings.max_results, 100)),
                        tweet_fields=TWEET_FIELDS, expansions=["author_id"], user_fields=["username"])
            if not page:
                entry["next_token"] = None
                break
            store.save("search", page)
            counts["search_pages"] += 1
            newest = _newest((t["tweet_id"] for t in from_page(page, "search")), newest)
            entry["next_token"] = (page.get("meta") or {}).get("next_token")
            state.save()  # the cursor moves only past saved pages
            if not entry["next_token"]:
                break
        entry["since_id"] = newest
        entry["done_run"] = True
        state.save()
    for entry in state.urls.values():  # the next run searches every URL again, from since_id
        entry.pop("done_run", None)
    state.save()
    return counts


def day_table(rows: Iterable[dict[str, Any]], expander: Expander, settings: HarvestSettings,
              date: str | None = None) -> list[dict[str, Any]]:
    """One row a tweet id (first seen wins), canonical URLs filled in; ``date`` keeps only
    tweets created that day (archive replay)."""
    seen: dict[str, dict[str, Any]] = {}
    for row in rows:
        if date and not (row["created_at"] or "").startswith(date):
            continue
        seen.setdefault(row["tweet_id"], row)
    table = sorted(seen.values(), key=lambda r: int(r["tweet_id"]) if r["tweet_id"].isdigit() else 0)
    to_expand = [u for r in table for u in r["short_urls"] + (r["urls"] if settings.expand_all else [])]
    expanded = expander.expand(to_expand) if to_expand else {}
    for r in table:
        r["canonical_urls"] = sorted({canonical(expanded.get(u, u)) for u in r["urls"] + r["short_urls"]})
    return table


def write_day(table: list[dict[str, Any]], out: str | Path, run: Run, extra: dict[str, Any]) -> None:
    with atomic_output(out, prov_path(out)) as (tmp, tmp_prov):
        writer = TableWriter(tmp, TWEETS)
        writer.write(pa.Table.from_pylist(table, schema=TWEETS))
        writer.close()
        run.write({out: tmp}, {out: tmp_prov}, rows_in=None, rows_out=len(table), extra=extra)


def harvest_day(date: str, out: str | Path, settings: HarvestSettings, source: str = "live",
                raw_dir: str | Path = "data/twitter/raw", state_path: str | Path = "data/twitter/state.json",
                archive: list[str] | None = None, url_cache: str | Path | None = None,
                client=None, rule: str = "harvest", sleep: Callable[[float], None] = time.sleep
                ) -> dict[str, Any]:
    """Harvest (or replay) one day into the tweet table ``out``."""
    try:
        datetime.date.fromisoformat(date)
    except ValueError:
        raise ValueError(f"harvest date {date!r} is not a date (YYYY-MM-DD)") from None
    params = {k: v for k, v in asdict(settings).items()}  # env var names only, never values
    expander = Expander(url_cache, timeout=settings.url_timeout, workers=settings.url_workers)
    if source == "archive":
        files = list(archive or [])
        if not files:
            raise ValueError("twitter.archive lists no files to replay")
        run = Run(rule=rule, params={"date": date, "source": source, **params}, inputs=files)
        table = day_table(read_archive(files), expander, settings, date)
        write_day(table, out, run, {"tweets": len(table)})
        return {"tweets": len(table)}
    if source != "live":
        raise ValueError(f"twitter.source must be live or archive, not {source!r}")
    store = PageStore(Path(raw_dir) / date)
    state = State(state_path)
    run = Run(rule=rule, params={"date": date, "source": source, **params}, inputs=[])
    client = client or make_client(settings)
    counts = harvest_live(client, store, state, settings, expander, sleep, date=date)
    rows = [t for kind, page in store.pages() for t in from_page(page, kind)]
    table = day_table(rows, expander, settings)
    write_day(table, out, run, {**counts, "tweets": len(table), "raw_pages": store.count})
    return {**counts, "tweets": len(table)}
