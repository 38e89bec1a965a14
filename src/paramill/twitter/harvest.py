"""One day's harvest: news accounts' timelines since the last harvested id, then a recent
search for every new URL, through the X API v2 (tweepy) — or the same day replayed from
archived JSONL files.

Live harvest, and what makes it safe to kill and re-run:

- every API response page is saved as it arrives, compressed, under
  ``<raw_dir>/<date>/`` (one file a page, written atomically) — credentials are never in it;
- the state file (per-account ``since_id``, per-URL search ``since_id`` and ``next_token``)
  is written atomically, and only after the pages it accounts for are saved;
- the day's tweet table is rebuilt from all of the day's saved pages, one row a tweet id.

- a cursor (an account's or a URL's ``since_id``) moves only over pages that were
  stored: a listing cut short by ``max_pages`` keeps its ``next_token`` and is continued
  by the next harvest before ``since_id`` moves past it;
- the state file is locked while a harvest runs: a second harvest on the same state ends
  at once with a message instead of fetching (and storing) everything again.

So a harvest killed at any point and re-run fetches again at most what it had not yet
recorded in the state, nothing is lost, and duplicates collapse in the table; a second run
for the same day finds nothing new and writes the same table.

Errors: a rate limit (429) waits until the reset the API gives when it is in the future,
otherwise backs off; server errors (500/502/503/504), network errors and malformed bodies
back off too: exponentially, with jitter, capped at ``backoff_max`` seconds a wait and
``retries`` retries a call. A request the API refuses as bad (400) skips that account or
URL with a rejected row; a 401 says the credentials were not accepted, a 403 that the
access tier (the free tier) may not read timelines or search. A tweet, URL or page that
cannot be used becomes a rejected row with its reason in ``rejected/<date>.parquet``; an
unusable page is never stored as if it were good, so a re-run does not meet it again.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import gzip
import json
import logging
import os
import random
import re
import sys
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

import pyarrow as pa

from paramill.io import TableWriter, atomic_output, read_json, write_json
from paramill.provenance import Run, prov_path
from paramill.settings import Settings, setting
from paramill.twitter.tweets import REJECTED_TWEETS, TWEETS, parse_page, read_archive, rejected
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
    accounts: list[Annotated[str, {"pattern": "^[A-Za-z0-9_]{1,15}$"}]] = setting(
        factory=lambda: list(NEWS_ACCOUNTS),
        doc="News accounts followed (screen names: 1-15 letters, digits or _).")
    bearer_token_env: str = setting(
        "X_BEARER_TOKEN", "Environment variable holding the bearer token.",
        pattern="^[A-Za-z_][A-Za-z0-9_]*$")
    consumer_key_env: str = setting(
        "X_CONSUMER_KEY", "OAuth 1.0a consumer key variable (used when no bearer token).",
        pattern="^[A-Za-z_][A-Za-z0-9_]*$")
    consumer_secret_env: str = setting(
        "X_CONSUMER_SECRET", "OAuth 1.0a consumer secret variable.",
        pattern="^[A-Za-z_][A-Za-z0-9_]*$")
    access_token_env: str = setting(
        "X_ACCESS_TOKEN", "OAuth 1.0a access token variable.", pattern="^[A-Za-z_][A-Za-z0-9_]*$")
    access_token_secret_env: str = setting(
        "X_ACCESS_TOKEN_SECRET", "OAuth 1.0a access token secret variable.",
        pattern="^[A-Za-z_][A-Za-z0-9_]*$")
    max_results: int = setting(100, "Tweets per API page.", minimum=5, maximum=100)
    max_pages: int = setting(20, "Pages per timeline or URL search per run.", minimum=1)
    retries: int = setting(
        5,
        "Retries a call on rate limits (429), server errors (500/502/503/504), network errors and "
        "malformed bodies; then the harvest stops.", minimum=0)
    backoff: float = setting(
        2.0, "First back-off in seconds (doubles each retry; each wait is jittered to 50-100%).",
        minimum=0)
    backoff_max: float = setting(
        900.0, "Longest single wait in seconds, of the back-off and of a rate-limit reset.",
        minimum=0)
    expand_all: bool = setting(
        False, "Follow redirects of every URL, not only known shorteners and unexpanded links.")
    url_timeout: float = setting(5.0, "Seconds per URL expansion request.", exclusiveMinimum=0)
    url_workers: int = setting(8, "Concurrent URL expansions.", minimum=1)
    search_days: int = setting(
        7, "A URL is searched again on harvests up to this many days after the one that first saw "
        "it, then dropped from the state (recent search reaches back 7 days).", minimum=0)


#: an Authorization header's value (Bearer or OAuth) and OAuth 1.0a's credential parameters,
#: as they appear in a log line, a repr of headers or an echoed JSON body
_AUTH_HEADER = re.compile(r"""(['"]?Authorization['"]?\s*[:=]\s*)(\\?['"]?)(?:OAuth\s[^\n]*|[^'",}\n]*)""",
                          re.IGNORECASE)
_OAUTH_PARAMS = re.compile(r"""(oauth_(?:consumer_key|token|signature)\\?"?\s*[=:]\s*\\?"?)[^"&,\s\\]*""",
                           re.IGNORECASE)
_SECRETS: set[str] = set()


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every Authorization header value, OAuth credential parameter and known
    secret (those of the clients made here, and ``secrets``) replaced by ``[redacted]``."""
    text = _AUTH_HEADER.sub(r"\1\2[redacted]", text)
    text = _OAUTH_PARAMS.sub(r"\1[redacted]", text)
    for secret in sorted(_SECRETS | {x for x in secrets if x}, key=len, reverse=True):
        text = text.replace(secret, "[redacted]")
    return text


_base_factory = logging.getLogRecordFactory()


def _redacting_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
    record = _base_factory(*args, **kwargs)
    if _SECRETS:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not format: left to logging
            return record
        record.msg, record.args = redact(message), None
    return record


def protect_secrets(secrets: Iterable[str]) -> None:
    """Keep ``secrets`` out of every log record of this process, whatever logger makes it
    and whatever its level: tweepy, requests-oauthlib and oauthlib print the request
    headers and the OAuth 1.0a keys at DEBUG, and a logger filter would not reach records
    made by their child loggers. The record factory blanks them when a record is made."""
    _SECRETS.update(x for x in secrets if x and len(x) >= 4)
    if logging.getLogRecordFactory() is not _redacting_factory:
        logging.setLogRecordFactory(_redacting_factory)


def client_secrets(client: Any) -> list[str]:
    """The credentials a tweepy client holds (what must never be stored or printed)."""
    return [v for k in ("bearer_token", "consumer_key", "consumer_secret", "access_token",
                        "access_token_secret")
            if isinstance(v := getattr(client, k, None), str) and v]


def make_client(settings: HarvestSettings):
    """A tweepy Client from the environment variables the settings name: app-only (bearer
    token) or OAuth 1.0a user context (the four keys; every call then sends user_auth)."""
    import tweepy

    token = os.environ.get(settings.bearer_token_env)
    keys = [os.environ.get(getattr(settings, k)) for k in
            ("consumer_key_env", "consumer_secret_env", "access_token_env", "access_token_secret_env")]
    # tweepy's DEBUG records print the request headers, oauthlib's the OAuth 1.0a keys:
    # every log record of this process has them blanked, whatever its level
    logging.getLogger("tweepy").setLevel(logging.INFO)
    protect_secrets([token or "", *[k or "" for k in keys]])
    # rate limits are waited for here (call), not by tweepy: with no usable reset header
    # tweepy's own wait retries at once, without end
    if token:
        return tweepy.Client(bearer_token=token, wait_on_rate_limit=False, return_type=dict)
    if all(keys):
        return tweepy.Client(consumer_key=keys[0], consumer_secret=keys[1], access_token=keys[2],
                             access_token_secret=keys[3], wait_on_rate_limit=False, return_type=dict)
    raise HarvestError(f"no X API credentials: set {settings.bearer_token_env} (bearer token) or "
                       f"{settings.consumer_key_env}, {settings.consumer_secret_env}, "
                       f"{settings.access_token_env}, {settings.access_token_secret_env} (OAuth 1.0a)")


class Refused(Exception):
    """The API refused one request (400, or 404 for an account or URL it does not know):
    skip what it was for, with a rejected row."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.status = status


RETRYABLE_STATUS = (429, 500, 502, 503, 504)


def backoff_delay(settings: HarvestSettings, attempt: int, rng: random.Random) -> float:
    """Exponential back-off with jitter: uniform in [½, 1] of ``backoff * 2**attempt``,
    capped at ``backoff_max``."""
    return min(settings.backoff_max, settings.backoff * 2 ** attempt) * rng.uniform(0.5, 1.0)


def call(fn: Callable[..., Any], settings: HarvestSettings, sleep: Callable[[float], None] = time.sleep,
         rng: random.Random | None = None, now: Callable[[], float] = time.time,
         **kwargs: Any) -> dict[str, Any]:
    """One API call, retried on every retryable failure at most ``settings.retries`` times."""
    import requests
    import tweepy

    rng = rng or random.Random()
    client = getattr(fn, "__self__", None)
    if client is not None and getattr(client, "bearer_token", None) is None:
        kwargs["user_auth"] = True  # OAuth 1.0a user context: sign the request
    for attempt in range(settings.retries + 1):
        wait = backoff_delay(settings, attempt, rng)
        try:
            return fn(**kwargs)
        except tweepy.Unauthorized as exc:
            raise HarvestError(
                f"the X API did not accept the credentials for {fn.__name__} (401): "
                f"{_api_message(exc)}. Check the token or keys (an authentication problem, "
                "not the access tier).") from None
        except tweepy.Forbidden as exc:
            raise HarvestError(
                f"the X API refused {fn.__name__} ({exc.response.status_code}): {_api_message(exc)}. "
                "Reading timelines and search needs the Basic access tier or higher; the free "
                "tier cannot harvest. Check the credentials' tier and project.") from None
        except tweepy.NotFound as exc:
            raise Refused(f"{fn.__name__} found nothing (404): {_api_message(exc)}", 404) from None
        except tweepy.TooManyRequests as exc:
            reset = getattr(exc, "reset_time", None)
            if reset is not None and reset + 1 - now() > 0:  # wait for the reset the API gave
                wait = min(settings.backoff_max, reset + 1 - now())
            failure = "rate limited (429)"
        except tweepy.HTTPException as exc:  # other statuses: retry those that are worth it
            status = exc.response.status_code if exc.response is not None else None
            if status is not None and 400 <= status < 500 and status not in RETRYABLE_STATUS:
                raise Refused(f"{fn.__name__} refused ({status}): {_api_message(exc)}", status) from None
            if status not in RETRYABLE_STATUS:
                raise HarvestError(f"the X API answered {fn.__name__} with {status}: "
                                   f"{_api_message(exc)}") from None
            failure = f"status {status}"
        except (requests.RequestException, ValueError) as exc:
            failure = type(exc).__name__
        if attempt == settings.retries:
            raise HarvestError(f"{fn.__name__} failed after {settings.retries} retries: {failure}")
        sleep(wait)
    raise AssertionError("unreachable")


def _api_message(exc: Any) -> str:
    try:
        body = exc.response.json()
        text = str(body.get("detail") or body.get("title") or str(body)[:200])
    except (ValueError, AttributeError):
        text = getattr(exc.response, "text", "")[:200]
    return redact(text)  # a body may echo the request's Authorization header


class State:
    """Harvest state: per-account user id, since_id and a listing cut short (next_token,
    newest id stored); per-URL search since_id/next_token."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        data = read_json(self.path) if self.path.exists() else {}
        self.users: dict[str, str] = data.get("users", {})
        self.since: dict[str, str] = data.get("since", {})
        self.pending: dict[str, dict[str, Any]] = data.get("pending", {})
        self.urls: dict[str, dict[str, Any]] = data.get("urls", {})

    def save(self) -> None:
        write_json(self.path, {"users": self.users, "since": self.since, "pending": self.pending,
                               "urls": self.urls})


@contextlib.contextmanager
def state_lock(path: str | Path):
    """An exclusive lock on ``<state>.lock`` for the whole harvest; a second harvest on the
    same state ends at once with a message naming the holder."""
    lock_path = Path(f"{path}.lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            raise HarvestError(f"another harvest ({holder}) is using {path}; two harvests on one "
                               "state would both store everything. Wait for it to end.") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} on {os.uname().nodename}\n")
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
            fcntl.flock(fh, fcntl.LOCK_UN)


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

    def pages(self, bad: list[dict[str, Any]] | None = None) -> list[tuple[str, str, Any]]:
        """``(kind, file name, page)`` of every saved page; a file that cannot be read back
        becomes a rejected row in ``bad`` instead of stopping the day."""
        out = []
        for path in sorted(self.root.glob("*.json.gz")):
            kind = path.name.split("-", 1)[1].split(".", 1)[0].split("_", 1)[0]
            try:
                with gzip.open(path, "rt", encoding="utf-8") as fh:
                    out.append((kind, str(path), json.load(fh)))
            except (OSError, EOFError, ValueError, zlib.error) as exc:
                if bad is not None:
                    bad.append(rejected(str(path), None, "unreadable_page", f"{type(exc).__name__}: {exc}"))
        return out


def _newest(page: dict[str, Any], current: str | None) -> str | None:
    """The newest decimal tweet id on a stored page (its rejected tweets too: the page is
    kept, so the cursor may pass them), or ``current``."""
    best = int(current) if current else 0
    for t in page.get("data") or []:
        i = t.get("id") if isinstance(t, dict) else None
        if isinstance(i, str) and i.isascii() and i.isdigit():
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


def canonical_urls(urls: Iterable[str], expanded: dict[str, str], where: str, record: Any,
                   bad: list[dict[str, Any]]) -> list[str]:
    """Canonical forms of ``urls`` (after expansion); an unparseable one is a rejected row."""
    out = set()
    for u in urls:
        try:
            out.add(canonical(expanded.get(u, u)))
        except ValueError as exc:
            bad.append(rejected(where, None, "invalid_url", str(exc), {"tweet": record, "url": u}))
    return sorted(out)


def _store_page(store: PageStore, kind: str, page: Any, source: str, where: str,
                bad: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Save a page that has the shape of one and return its tweets; an unusable page is
    not saved (a rejected row says why), so no re-run meets it again."""
    rows, rejects = parse_page(page, source, where)
    if rejects and rejects[0]["reason"] == "unusable_page":
        bad.extend(rejects)
        return None
    store.save(kind, page)
    return rows


def _page_args(settings: HarvestSettings, floor: int) -> dict[str, Any]:
    return {"max_results": max(floor, min(settings.max_results, 100)), "tweet_fields": TWEET_FIELDS,
            "expansions": ["author_id"], "user_fields": ["username"]}


def track_urls(state: State, urls: list[str], expander: Expander, settings: HarvestSettings,
               date: str) -> None:
    """Add the canonical forms of news tweets' ``urls`` to the URLs the state searches."""
    if not urls:
        return
    expanded = expander.expand([u for u in urls if is_short(u) or settings.expand_all])
    for url in canonical_urls(urls, expanded, "news tweets", None, []):
        state.urls.setdefault(url, {"since_id": None, "next_token": None, "first_seen": date})


def harvest_timeline(client, account: str, store: PageStore, state: State, settings: HarvestSettings,
                     counts: dict[str, int], bad: list[dict[str, Any]], api: Callable[..., dict[str, Any]],
                     expander: Expander, date: str) -> None:
    """Pages of one account's timeline newer than its ``since_id``. The listing is newest
    first: ``since_id`` moves to the newest stored id only once the listing reached its
    end; a listing cut by ``max_pages`` is kept pending (``next_token``) and continued
    first by the next harvest. The URLs of a page's news tweets enter the state in the
    same write that moves the cursor past the page, so a harvest killed or failing later
    (another account's timeline, a search) never leaves a tweet behind its cursor whose
    URLs the state does not hold."""
    pending = state.pending.get(account) or {}
    token, newest = pending.get("next_token"), pending.get("newest")
    pages = 0
    while pages < settings.max_pages:
        try:
            page = api(client.get_users_tweets, id=state.users[account], since_id=state.since.get(account),
                       pagination_token=token, **_page_args(settings, 5))
        except Refused as exc:
            bad.append(rejected(f"timeline {account}", None, "api_error", exc.message))
            return
        rows = _store_page(store, f"timeline_{account}", page, "timeline", f"timeline {account}", bad) if page else []
        if rows is None:
            break  # unusable: the cursor stays; the next harvest asks again
        if page:
            pages += 1
            counts["timeline_pages"] += 1
            newest = _newest(page, newest)
            track_urls(state, [u for t in rows if not t["is_retweet"] for u in t["urls"] + t["short_urls"]],
                       expander, settings, date)
            token = (page.get("meta") or {}).get("next_token")
        else:
            token = None
        if token:  # the cursor moves only past stored pages
            state.pending[account] = {"next_token": token, "newest": newest}
            state.save()
            continue
        state.pending.pop(account, None)
        if newest:
            state.since[account] = newest
        state.save()
        if not pending:
            break
        pending = {}  # a continued listing is done: now what is newer than it
        token = newest = None


def harvest_search(client, url: str, entry: dict[str, Any], store: PageStore, state: State,
                   settings: HarvestSettings, counts: dict[str, int], bad: list[dict[str, Any]],
                   api: Callable[..., dict[str, Any]]) -> None:
    """Recent-search pages for one URL; ``since_id`` moves only when the listing ended."""
    newest = entry.get("newest") or entry.get("since_id")
    for _ in range(settings.max_pages):
        try:
            page = api(client.search_recent_tweets, query=f'url:"{url}"', since_id=entry.get("since_id"),
                       next_token=entry.get("next_token"), **_page_args(settings, 10))
        except Refused as exc:
            bad.append(rejected(f"search {url}", None, "api_error", exc.message))
            entry["next_token"] = None
            break
        if not page:
            entry["next_token"] = None
            break
        rows = _store_page(store, "search", page, "search", f"search {url}", bad)
        if rows is None:
            return  # unusable page: the cursor stays where it was
        counts["search_pages"] += 1
        newest = _newest(page, newest)
        entry["next_token"] = (page.get("meta") or {}).get("next_token")
        entry["newest"] = newest
        state.save()  # the cursor moves only past saved pages
        if not entry["next_token"]:
            break
    if not entry.get("next_token"):
        entry["since_id"] = newest
        entry.pop("newest", None)
    # the caller saves the state with this URL marked done


def lookup_user(client, account: str, bad: list[dict[str, Any]],
                api: Callable[..., dict[str, Any]]) -> str | None:
    """The user id of ``account``; an account the API does not know (404, or an answer with
    only ``errors``) is a rejected row and a warning on stderr, never skipped in silence."""
    try:
        found = api(client.get_user, username=account)
    except Refused as exc:
        reason = "unknown_account" if exc.status == 404 else "api_error"
        bad.append(rejected(f"user {account}", None, reason, exc.message))
        print(f"paramill twitter harvest: warning: account {account!r} skipped: {exc.message}",
              file=sys.stderr)
        return None
    data = found.get("data") if isinstance(found, dict) else None
    try:
        return _id_of(data)
    except ValueError as exc:
        errors = found.get("errors") if isinstance(found, dict) else None
        detail = "; ".join(str(e.get("detail") or e.get("title") or e) if isinstance(e, dict) else str(e)
                           for e in (errors if isinstance(errors, list) else [])) or str(exc)
        bad.append(rejected(f"user {account}", None, "unknown_account", redact(detail)[:500], found))
        print(f"paramill twitter harvest: warning: account {account!r} skipped: {redact(detail)}",
              file=sys.stderr)
        return None


def _id_of(data: Any) -> str:
    """A user object's id as a decimal string (ValueError when there is none)."""
    value = data.get("id") if isinstance(data, dict) else None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.isascii() or not value.isdigit():
        raise ValueError(f"the lookup returned no user id ({json.dumps(data, default=str)[:80]})")
    return value


def harvest_live(client, store: PageStore, state: State, settings: HarvestSettings,
                 expander: Expander, sleep: Callable[[float], None] = time.sleep,
                 date: str | None = None, bad: list[dict[str, Any]] | None = None) -> dict[str, int]:
    """Fetch timelines since the last ids, then search every URL seen within
    ``search_days`` of ``date`` (default today); update the state."""
    bad = bad if bad is not None else []
    date = date or datetime.date.today().isoformat()
    rng = random.Random()
    # rate limits are waited for in call(); tweepy's own wait never ends without a reset
    client.wait_on_rate_limit = False

    def api(fn: Callable[..., Any], **kwargs: Any) -> dict[str, Any]:
        return call(fn, settings, sleep, rng, **kwargs)

    counts = {"timeline_pages": 0, "search_pages": 0, "urls_searched": 0,
              "urls_dropped": prune_urls(state, date, settings.search_days)}
    for account in settings.accounts:
        if account not in state.users:
            user_id = lookup_user(client, account, bad, api)
            if user_id is None:
                continue
            state.users[account] = user_id
            state.save()
        harvest_timeline(client, account, store, state, settings, counts, bad, api, expander, date)
    for url, entry in state.urls.items():
        if entry.get("done_run") == date:  # searched by this day's run before it was stopped
            continue
        counts["urls_searched"] += 1
        harvest_search(client, url, entry, store, state, settings, counts, bad, api)
        entry["done_run"] = date
        state.save()
    for entry in state.urls.values():  # the next run searches every URL again, from since_id
        entry.pop("done_run", None)
    state.save()
    return counts


def day_table(rows: Iterable[dict[str, Any]], expander: Expander, settings: HarvestSettings,
              date: str | None = None, bad: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row a tweet id (first seen wins), canonical URLs filled in (an unparseable URL is
    a rejected row and left out); ``date`` keeps only tweets created that day (archive replay)."""
    bad = bad if bad is not None else []
    seen: dict[str, dict[str, Any]] = {}
    for row in rows:
        if date and not (row["created_at"] or "").startswith(date):
            continue
        seen.setdefault(row["tweet_id"], row)
    table = sorted(seen.values(), key=lambda r: int(r["tweet_id"]) if r["tweet_id"].isdigit() else 0)
    to_expand = [u for r in table for u in r["short_urls"] + (r["urls"] if settings.expand_all else [])]
    expanded = expander.expand(to_expand) if to_expand else {}
    for r in table:
        r["canonical_urls"] = canonical_urls(r["urls"] + r["short_urls"], expanded,
                                             f"tweet {r['tweet_id']}", r["tweet_id"], bad)
    return table


def write_day(table: list[dict[str, Any]], bad: list[dict[str, Any]], out: str | Path,
              rejected_out: str | Path, run: Run, extra: dict[str, Any]) -> None:
    reasons: dict[str, int] = {}
    for row in bad:
        reasons[row["reason"]] = reasons.get(row["reason"], 0) + 1
        for key in ("detail", "raw"):  # an echoed request header or credential is never stored
            if isinstance(row.get(key), str):
                row[key] = redact(row[key])
    with atomic_output(out, prov_path(out), rejected_out, prov_path(rejected_out)) as (tmp, tmp_prov, tmp_bad, tmp_bad_prov):
        writer = TableWriter(tmp, TWEETS)
        writer.write(pa.Table.from_pylist(table, schema=TWEETS))
        writer.close()
        bad_writer = TableWriter(tmp_bad, REJECTED_TWEETS)
        bad_writer.write(pa.Table.from_pylist(bad, schema=REJECTED_TWEETS))
        bad_writer.close()
        run.write({out: tmp, rejected_out: tmp_bad}, {out: tmp_prov, rejected_out: tmp_bad_prov},
                  rows_in=None, rows_out=len(table), extra={**extra, "rejected": dict(sorted(reasons.items()))})


def rejected_path(out: str | Path) -> Path:
    """Where a day's rejected records go: ``rejected/<date>.parquet`` beside the day table."""
    out = Path(out)
    return out.parent / "rejected" / out.name


def harvest_day(date: str, out: str | Path, settings: HarvestSettings, source: str = "live",
                raw_dir: str | Path = "data/twitter/raw", state_path: str | Path = "data/twitter/state.json",
                archive: list[str] | None = None, url_cache: str | Path | None = None,
                client=None, rule: str = "harvest", sleep: Callable[[float], None] = time.sleep,
                rejected_out: str | Path | None = None) -> dict[str, Any]:
    """Harvest (or replay) one day into the tweet table ``out`` (and its rejected records)."""
    try:
        datetime.date.fromisoformat(date)
    except ValueError:
        raise ValueError(f"harvest date {date!r} is not a date (YYYY-MM-DD)") from None
    rejected_out = rejected_out or rejected_path(out)
    params = {k: v for k, v in asdict(settings).items()}  # env var names only, never values
    expander = Expander(url_cache, timeout=settings.url_timeout, workers=settings.url_workers)
    bad: list[dict[str, Any]] = []
    if source == "archive":
        files = list(archive or [])
        if not files:
            raise ValueError("twitter.archive lists no files to replay")
        run = Run(rule=rule, params={"date": date, "source": source, **params}, inputs=files)
        table = day_table(read_archive(files, bad), expander, settings, date, bad)
        write_day(table, bad, out, rejected_out, run, {"tweets": len(table)})
        return {"tweets": len(table), "rejected": len(bad)}
    if source != "live":
        raise ValueError(f"twitter.source must be live or archive, not {source!r}")
    with state_lock(state_path):
        store = PageStore(Path(raw_dir) / date)
        state = State(state_path)
        run = Run(rule=rule, params={"date": date, "source": source, **params}, inputs=[])
        client = client or make_client(settings)
        protect_secrets(client_secrets(client))
        counts = harvest_live(client, store, state, settings, expander, sleep, date=date, bad=bad)
        rows = []
        for kind, where, page in store.pages(bad):
            found, rejects = parse_page(page, kind, where)
            rows += found
            bad += rejects
        table = day_table(rows, expander, settings, bad=bad)
        write_day(table, bad, out, rejected_out, run, {**counts, "tweets": len(table), "raw_pages": store.count})
    return {**counts, "tweets": len(table), "rejected": len(bad)}
