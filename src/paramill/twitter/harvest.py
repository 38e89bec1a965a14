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
- the state file is locked while a harvest runs: a second harvest on the same state waits
  for it to end, then reads the state it left (it fetches only what is new), instead of
  fetching (and storing) everything again beside it.

So a harvest killed at any point and re-run fetches again at most what it had not yet
recorded in the state, nothing is lost, and duplicates collapse in the table; a second run
for the same day finds nothing new and writes the same table. A settled day is never fetched
again: one before the latest day harvested (the state's ``latest_day``), or the latest once
its harvest ran to its end (``completed_day``) and the day is past (UTC). The API returns
what is there now, which would be filed under the old day and taken from the new one. Its
table is rebuilt from its saved pages (a changed setting of the URL expansions re-runs
every day's job; what only steers a fetch is launch-only and re-runs none), without
the state's lock, so those jobs run side by side and beside today's harvest; a day that has
no pages is an error.

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
import json
import random
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pyarrow as pa

from paramill.run.job import output_job
from paramill.io.tablewrite import TableWriter
from paramill.run.progress import note, progress
from paramill.provenance import Run
from paramill.twitter.api import (
    TWEET_FIELDS,
    HarvestError,
    HarvestSettings,
    Refused,
    call,
    client_secrets,
    make_client,
    protect_secrets,
    redact,
    search_query,
)
from paramill.twitter.store import (PageStore, State, latest_harvest, newest_id, prune_urls,
                                    saved_pages, settled, state_lock)
from paramill.twitter.tweets import REJECTED_TWEETS, TWEETS, parse_page, read_archive, rejected
from paramill.twitter.urls import Expander, canonical, earlier_cache, is_short

#: what the command line takes from here (the error and settings are the API module's)
__all__ = ["HarvestError", "HarvestSettings", "harvest_day"]


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
    meta = page.get("meta")  # it moves the cursor: a page whose paging is not the API's is not used
    token = meta.get("next_token") if isinstance(meta, dict) else None
    if not (meta is None or isinstance(meta, dict)) or not (token is None or isinstance(token, str)):
        bad.append(rejected(where, None, "unusable_page", "its meta is not an object with a "
                            "next_token string (or none)", page))
        return None
    store.save(kind, page)
    return rows


def _page_args(settings: HarvestSettings, floor: int) -> dict[str, Any]:
    return {"max_results": max(floor, min(settings.max_results, 100)), "tweet_fields": TWEET_FIELDS,
            "expansions": ["author_id"], "user_fields": ["username"]}


def followed(urls: Iterable[str], settings: HarvestSettings) -> list[str]:
    """The links of ``urls`` followed over HTTP: those on a known shortener host (an API's
    ``expanded_url`` is often one, nyti.ms, trib.al), every one with ``expand_all``."""
    return [u for u in urls if settings.expand_all or is_short(u)]


def track_urls(state: State, urls: list[str], expander: Expander, settings: HarvestSettings,
               date: str) -> None:
    """Add the canonical forms of news tweets' ``urls`` to the URLs the state searches."""
    if not urls:
        return
    expanded = expander.expand(followed(urls, settings))
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
            newest = newest_id(page, newest)
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
    query = search_query(url, settings.search_languages, settings.max_query_chars)
    for _ in range(settings.max_pages):
        try:
            page = api(client.search_recent_tweets, query=query, since_id=entry.get("since_id"),
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
        newest = newest_id(page, newest)
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
    with progress(f"harvest {date}: timelines", unit="accounts", total=len(settings.accounts)) as bar:
        for account in settings.accounts:
            if account not in state.users and (user_id := lookup_user(client, account, bad, api)):
                state.users[account] = user_id
                state.save()
            if account in state.users:
                harvest_timeline(client, account, store, state, settings, counts, bad, api, expander, date)
            bar.update()
    with progress(f"harvest {date}: URL searches", unit="URLs", total=len(state.urls)) as bar:
        for url, entry in state.urls.items():
            if entry.get("done_run") != date:  # not searched by this day's run before it stopped
                counts["urls_searched"] += 1
                harvest_search(client, url, entry, store, state, settings, counts, bad, api)
                entry["done_run"] = date
                state.save()
            bar.update()
    for entry in state.urls.values():  # the next run searches every URL again, from since_id
        entry.pop("done_run", None)
    state.completed_day = date
    state.save()
    cut = [f"timeline {a}" for a in settings.accounts if a in state.pending] + [
        f"search {u}" for u, entry in state.urls.items() if entry.get("next_token")]
    counts["listings_cut"] = len(cut)
    if cut:  # continued by the next harvest; cut on every one, the harvest falls behind
        note(f"paramill twitter harvest: warning: {len(cut)} listing(s) reached max_pages "
             f"({settings.max_pages}) and continue on the next harvest ({', '.join(cut[:3])}"
             f"{', …' if len(cut) > 3 else ''}); cut on every harvest, the harvest falls behind "
             "(and a URL is dropped after search_days): raise twitter.harvest.max_pages")
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
    # the same links as the news tweets' whose URLs the state tracks, so the two meet
    to_expand = [u for r in table for u in r["short_urls"] + followed(r["urls"], settings)]
    expanded = expander.expand(to_expand) if to_expand else {}
    crossed = expander.crossed(to_expand) if to_expand else {}
    for r in table:
        r["canonical_urls"] = canonical_urls(r["urls"] + r["short_urls"], expanded,
                                             f"tweet {r['tweet_id']}", r["tweet_id"], bad)
        for url in dict.fromkeys(r["short_urls"] + r["urls"]):
            if url in crossed:  # kept on its own site, the redirect recorded as what it is
                bad.append(rejected(f"tweet {r['tweet_id']}", None, "cross_host_redirect",
                                    f"{url} redirects from {expanded[url]} to another site, "
                                    f"{crossed[url]}: the link is kept as {expanded[url]}",
                                    {"tweet": r["tweet_id"], "url": url, "left_for": crossed[url]}))
    return table


def write_day(table: list[dict[str, Any]], bad: list[dict[str, Any]], out: str | Path,
              rejected_out: str | Path, run: Run, extra: dict[str, Any]) -> None:
    reasons: dict[str, int] = {}
    for row in bad:
        reasons[row["reason"]] = reasons.get(row["reason"], 0) + 1
        for key in ("detail", "raw"):  # an echoed request header or credential is never stored
            if isinstance(row.get(key), str):
                row[key] = redact(row[key])
    with output_job(run, out, rejected_out) as job:
        tmp, tmp_bad = job.paths
        writer = TableWriter(tmp, TWEETS)
        writer.write(pa.Table.from_pylist(table, schema=TWEETS))
        writer.close()
        bad_writer = TableWriter(tmp_bad, REJECTED_TWEETS)
        bad_writer.write(pa.Table.from_pylist(bad, schema=REJECTED_TWEETS))
        bad_writer.close()
        job.rows_out = len(table)
        job.extra = {**extra, "rejected": dict(sorted(reasons.items()))}


def rejected_path(out: str | Path) -> Path:
    """Where a day's rejected records go: ``rejected/<date>.parquet`` beside the day table."""
    out = Path(out)
    return out.parent / "rejected" / out.name


def harvest_day(date: str, out: str | Path, settings: HarvestSettings, source: str = "live",
                raw_dir: str | Path = "data/twitter/raw", state_path: str | Path = "data/twitter/state.json",
                archive: list[str] | None = None, url_cache: str | Path | None = None,
                client=None, rule: str = "harvest", sleep: Callable[[float], None] = time.sleep,
                rejected_out: str | Path | None = None, today: str | None = None,
                card_cache: str | Path | None = None, earlier_url_cache: str | Path | None = None
                ) -> dict[str, Any]:
    """Harvest (or replay) one day into the tweet table ``out`` (and its rejected records);
    ``today``: the UTC date now (a test's clock); ``url_cache``: the month's followed links,
    and ``earlier_url_cache`` the one file of every month kept before, read for the days it
    may know (:func:`~paramill.twitter.urls.earlier_cache`); ``card_cache``: the month's page
    cards, into which the day's news pages' cards are read (:func:`read_cards`)."""
    try:
        datetime.date.fromisoformat(date)
    except ValueError:
        raise ValueError(f"harvest date {date!r} is not a date (YYYY-MM-DD)") from None
    rejected_out = rejected_out or rejected_path(out)
    params = {k: v for k, v in asdict(settings).items()}  # env var names only, never values
    if source not in ("live", "archive"):
        raise ValueError(f"twitter.source must be live or archive, not {source!r}")
    today = today or datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    if source == "live" and date > today:  # what it fetched would be filed under a day to come
        raise ValueError(f"harvest date {date} is after today ({today}, UTC): a live harvest "
                         "fetches what is there now and files it under its date; harvest today's")
    # a live day that may still fetch holds the state's lock from before its caches are read
    # to after they are written, so a second harvest waits and starts from all the first
    # left; a settled day reads only its own pages, which no harvest writes again, and the
    # state (written atomically): without the lock, so the days a changed setting re-runs
    # may rebuild side by side, beside today's harvest
    fetches = source == "live" and not settled(State(state_path), raw_dir, date, today)
    # the month's URL cache is written once, when the day ends (or stops)
    with state_lock(state_path) if fetches else contextlib.nullcontext(), \
            Expander(url_cache, timeout=settings.url_timeout, workers=settings.url_workers,
                     private_urls=settings.private_urls,
                     earlier=earlier_cache(earlier_url_cache, date)) as expander:
        bad: list[dict[str, Any]] = []
        if source == "archive":
            files = list(archive or [])
            if not files:
                raise ValueError("twitter.archive lists no files to replay")
            run = Run(rule=rule, params={"date": date, "source": source, **params}, inputs=files)
            table = day_table(read_archive(files, bad), expander, settings, date, bad)
            cards = read_cards(table, settings, card_cache)
            write_day(table, bad, out, rejected_out, run, {"tweets": len(table), **cards})
            return {"tweets": len(table), "rejected": len(bad), **cards}
        run = Run(rule=rule, params={"date": date, "source": source, **params}, inputs=[])
        state = State(state_path)
        why = settled(state, raw_dir, date, today)
        if why:
            counts: dict[str, Any] = {"rebuilt_after": latest_harvest(state, raw_dir)}
            store = saved_pages(Path(raw_dir) / date, date, why)
        else:
            store = PageStore(Path(raw_dir) / date)
            state.latest_day = date
            state.save()
            client = client or make_client(settings)
            protect_secrets(client_secrets(client))
            counts = harvest_live(client, store, state, settings, expander, sleep, date=date, bad=bad)
        rows = []
        for kind, where, page in store.pages(bad):
            found, rejects = parse_page(page, kind, where)
            rows += found
            bad += rejects
        table = day_table(rows, expander, settings, bad=bad)
        counts.update(read_cards(table, settings, card_cache))
        write_day(table, bad, out, rejected_out, run, {**counts, "tweets": len(table), "raw_pages": store.count})
        return {**counts, "tweets": len(table), "rejected": len(bad)}


def read_cards(table: list[dict[str, Any]], settings: HarvestSettings, card_cache: str | Path | None
               ) -> dict[str, int]:
    """The cards of the day's news pages (``twitter.pairs.fetch_cards``) read into the
    month's ``card_cache``, where the harvest runs: it reaches the web, where a month's job
    may run on a node that does not, and reads each page when its tweet is new, as Lan et
    al. did. The month's job reads what is missing. ``{}`` without a cache."""
    if not card_cache:
        return {}
    from paramill.twitter.urls import fetch_cards

    accounts = {a.lower() for a in settings.accounts}
    urls = [u for r in table if (r["author"] or "").lower() in accounts for u in r["canonical_urls"] or []]
    cards = fetch_cards(urls, workers=settings.url_workers, timeout=settings.url_timeout,
                        private_urls=settings.private_urls, cache=card_cache)
    return {"news_pages": len(set(urls)), "page_cards": len(cards)}
