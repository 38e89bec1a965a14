"""Tweet objects of API v1.1 and v2 (live pages or archived JSONL) into one table."""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from paramill.formats.rows import Bad
from paramill.formats.reading import json_lines, some_readable
from paramill.formats import jsontext

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
    # an edited post's first version (X gives each edit a new id), null for a first version
    pa.field("first_version", pa.string()),
])
#: columns a day table written before they were added may lack (read as nulls)
TWEETS_ADDED = ("first_version",)

_V1_TIME = "%a %b %d %H:%M:%S %z %Y"
#: longest archive line read (one tweet object, or a v2 page of up to 100 with its includes)
MAX_ARCHIVE_LINE_BYTES = 16 << 20


def _iso(value: str | None) -> str | None:
    if not value:
        return None
    try:
        stamp = _dt.datetime.strptime(value, _V1_TIME)
    except ValueError:
        stamp = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return stamp.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


_DECIMAL_ID = re.compile(r"[0-9]{1,20}")


class BadField(ValueError):
    """A tweet field of the wrong type or form: the tweet becomes a rejected row."""


def _id(value: Any, what: str, required: bool = True) -> str | None:
    """A tweet or user id as its decimal string: an int or a string of 1-20 digits (ASCII);
    anything else (a float, a bool, an object, ``"12.5"``) is refused."""
    if value is None or value == "":
        if required:
            raise BadField(f"{what} is missing")
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    if isinstance(value, str) and _DECIMAL_ID.fullmatch(value):
        return value
    raise BadField(f"{what} {json.dumps(value, default=str)[:60]} is not a decimal id")


def _text(value: Any, what: str, default: str | None = None) -> str | None:
    """A string field (None stays None, or ``default``); another type is refused."""
    if value is None:
        return default
    if not isinstance(value, str):
        raise BadField(f"{what} is a {type(value).__name__}, not a string")
    return value


def _object(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadField(f"{what} is a {type(value).__name__}, not an object")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadField(f"{what} is a {type(value).__name__}, not a list")
    return value


def _urls(*sources: tuple[Any, str]) -> tuple[list[str], list[str]]:
    """The links of ``(entities, name)`` sources in order (a long post's ``note_tweet``
    entities, then those of its first 280 characters): expanded (or unwound), and those left
    as short links; a later source's link an earlier one gave is not repeated."""
    expanded: list[str] = []
    short: list[str] = []
    for entities, what in sources:
        seen = (set(expanded), set(short))
        for u in _list(_object(entities, what).get("urls"), f"{what}.urls"):
            u = _object(u, f"{what}.urls[]")
            best = (_text(u.get("unwound_url"), "unwound_url")
                    or _text(u.get("expanded_url"), "expanded_url"))
            if best:
                if best not in seen[0]:
                    expanded.append(best)
            elif _text(u.get("url"), "url") and u["url"] not in seen[1]:
                short.append(u["url"])
    return expanded, short


def _first_version(history: Any, what: str, own: str | None) -> str | None:
    """The id of a post's first version from its edit history (ids oldest first, its own
    among them), or None when the post is its own first version or names no history."""
    ids = _list(history, what)
    first = _id(ids[0], f"{what}[0]") if ids else None
    return first if first != own else None


def from_v2(tweet: dict[str, Any], users: dict[str, str], source: str) -> dict[str, Any]:
    refs = [_object(r, "referenced_tweets[]")
            for r in _list(tweet.get("referenced_tweets"), "referenced_tweets")]
    retweet_of = next((_id(r.get("id"), "referenced_tweets[].id") for r in refs
                       if r.get("type") == "retweeted"), None)
    note = _object(tweet.get("note_tweet"), "note_tweet")  # a long post: its whole text
    expanded, short = _urls((note.get("entities"), "note_tweet.entities"), (tweet.get("entities"), "entities"))
    author_id = _id(tweet.get("author_id"), "author_id", required=False) or ""
    author = (_text(_object(tweet.get("author"), "author").get("username"), "author.username")
              or users.get(author_id) or author_id)
    tweet_id = _id(tweet.get("id"), "id")
    return {"tweet_id": tweet_id, "author": author.lower() if author else None,
            "author_id": author_id or None,
            "created_at": _iso(_text(tweet.get("created_at"), "created_at")),
            "text": _text(note.get("text"), "note_tweet.text") or _text(tweet.get("text"), "text", ""),
            "urls": expanded, "short_urls": short,
            "canonical_urls": None, "is_retweet": retweet_of is not None, "retweet_of": retweet_of,
            "lang": _text(tweet.get("lang"), "lang"), "source": source,
            "first_version": _first_version(tweet.get("edit_history_tweet_ids"),
                                            "edit_history_tweet_ids", tweet_id)}


def from_v1(tweet: dict[str, Any], source: str) -> dict[str, Any]:
    extended = _object(tweet.get("extended_tweet"), "extended_tweet")
    text = (_text(extended.get("full_text"), "extended_tweet.full_text")
            or _text(tweet.get("full_text"), "full_text") or _text(tweet.get("text"), "text") or "")
    entities = extended.get("entities") or tweet.get("entities")
    expanded, short = _urls((entities, "entities"))
    retweeted = _object(tweet.get("retweeted_status"), "retweeted_status") or None
    user = _object(tweet.get("user"), "user")
    tweet_id = _id(tweet.get("id_str") or tweet.get("id"), "id")
    history = _object(tweet.get("edit_history"), "edit_history")  # v1.1 and enterprise
    initial = history.get("initial_tweet_id")
    versions, what = (([initial], "edit_history.initial_tweet_id") if initial is not None
                      else (history.get("edit_tweet_ids"), "edit_history.edit_tweet_ids"))
    return {"tweet_id": tweet_id,
            "author": (_text(user.get("screen_name"), "user.screen_name") or "").lower() or None,
            "author_id": _id(user.get("id_str") or user.get("id"), "user.id", required=False),
            "created_at": _iso(_text(tweet.get("created_at"), "created_at")), "text": text,
            "urls": expanded, "short_urls": short, "canonical_urls": None,
            "is_retweet": retweeted is not None,
            "retweet_of": (_id(retweeted.get("id_str") or retweeted.get("id"), "retweeted_status.id")
                           if retweeted else None),
            "lang": _text(tweet.get("lang"), "lang"), "source": source,
            "first_version": _first_version(versions, what, tweet_id)}


#: Records that could not be used: one row each, with the reason (as bitext's rejected rows).
REJECTED_TWEETS = pa.schema([
    pa.field("where", pa.string()),   # the archive file or the saved API page
    pa.field("record", pa.int64()),   # line of the archive file, or position in the page
    pa.field("reason", pa.string()),  # no_id | not_a_tweet | bad_field | not_json | duplicate_key | invalid_utf8 | not_text | line_too_long | unknown_account | unusable_page | unreadable_page | invalid_url | cross_host_redirect | api_error
    pa.field("detail", pa.string()),
    pa.field("raw", pa.string()),     # the record, cut to REJECTED_TEXT_CHARS
])
REJECTED_TEXT_CHARS = 1000


def rejected(where: str, record: int | None, reason: str, detail: str, raw: Any = None) -> dict[str, Any]:
    text = raw if isinstance(raw, str) or raw is None else json.dumps(raw, default=str)
    return {"where": str(where), "record": record, "reason": reason, "detail": detail[:500],
            "raw": text[:REJECTED_TEXT_CHARS] if text is not None else None}


def _one(convert, obj: Any, where: str, index: int, bad: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``convert(obj)``, or a rejected row when the object is not a usable tweet."""
    if not isinstance(obj, dict):
        bad.append(rejected(where, index, "not_a_tweet", f"a {type(obj).__name__}, not an object", obj))
        return None
    if obj.get("id") in (None, "") and obj.get("id_str") in (None, ""):
        bad.append(rejected(where, index, "no_id", "tweet without an id", obj))
        return None
    if (key := jsontext.repeated(obj)) is not None:  # an archive's object, read with marks
        bad.append(rejected(where, index, *jsontext.twice(key), obj))
        return None
    try:
        row = convert(obj)
    except BadField as exc:
        bad.append(rejected(where, index, "bad_field", str(exc), obj))
        return None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        bad.append(rejected(where, index, "not_a_tweet", f"{type(exc).__name__}: {exc}", obj))
        return None
    if found := jsontext.problem(row):  # a NUL or a lone surrogate in what the row keeps
        bad.append(rejected(where, index, *found, obj))
        return None
    return row


def parse_page(page: Any, source: str, where: str = "") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The tweets of one v2 API response page (``data`` + ``includes.users``), and the
    rejected rows of those that cannot be used (the page is rejected whole when its shape
    is not a page's). A tweet object of an archive that names a key twice is ``duplicate_key``;
    a user object that does names no user (its tweets' author is their author_id)."""
    bad: list[dict[str, Any]] = []
    if not isinstance(page, dict) or not isinstance(page.get("data") or [], list):
        return [], [rejected(where, None, "unusable_page", "not an API page (no list of tweets)", page)]
    includes = page.get("includes")
    listed = includes.get("users") if isinstance(includes, dict) else None
    users = {}
    for u in listed if isinstance(listed, list) else []:  # anything else names no user
        if isinstance(u, dict) and isinstance(u.get("id"), (str, int)) \
                and isinstance(u.get("username"), str) and jsontext.repeated(u) is None:
            users[str(u["id"])] = u["username"]
    rows = [_one(lambda t: from_v2(t, users, source), t, where, i, bad)
            for i, t in enumerate(page.get("data") or [])]
    return [r for r in rows if r is not None], bad


def from_object(obj: Any, source: str, where: str = "", index: int = 0
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A v2 page, a v2 tweet or a v1.1 tweet: (rows, rejected rows)."""
    if isinstance(obj, dict) and "data" in obj and isinstance(obj["data"], list):
        return parse_page(obj, source, where)
    if isinstance(obj, dict) and "data" in obj and isinstance(obj["data"], dict):  # single-tweet v2 response
        return parse_page({"data": [obj["data"]], "includes": obj.get("includes")}, source, where)
    bad: list[dict[str, Any]] = []
    if isinstance(obj, dict) and ("id_str" in obj or "user" in obj):
        row = _one(lambda t: from_v1(t, source), obj, where, index, bad)
    elif isinstance(obj, dict) and ("id" in obj or "text" in obj):
        row = _one(lambda t: from_v2(t, {}, source), obj, where, index, bad)
    else:
        row = None
        bad.append(rejected(where, index, "not_a_tweet", "neither a v1.1 nor a v2 tweet object", obj))
    return ([row] if row is not None else []), bad


def read_archive(paths: Iterable[str | Path], bad: list[dict[str, Any]] | None = None
                 ) -> Iterator[dict[str, Any]]:
    """Tweets from JSONL files (plain or compressed) of v1.1/v2 objects or v2 pages.

    A line that is not JSON (or not UTF-8, or over 16 MiB) or not a tweet becomes a rejected
    row in ``bad`` (given or not, it never stops the replay); a file that cannot be read, or
    of which not one line is JSON, raises InputError.
    """
    bad = bad if bad is not None else []
    for path in paths:
        lines = json_lines(path, MAX_ARCHIVE_LINE_BYTES, text=False)  # _one checks the rows
        for item in some_readable(lines, str(path), "JSON", "An archive holds a v1.1 or v2 "
                                  "tweet object, or a v2 response page, a line (JSONL)"):
            if isinstance(item, Bad):  # not JSON, not UTF-8, or longer than the limit
                bad.append(rejected(str(path), item.line_no, item.reason, item.detail, item.text))
                continue
            line_no, obj = item
            rows, rejects = from_object(obj, "archive", str(path), line_no)
            for r in rejects:
                r["record"] = line_no
            bad.extend(rejects)
            yield from rows
