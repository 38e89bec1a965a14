"""The X API v2 side of the harvest: its settings, the tweepy client, retries with jittered
back-off, and secrets kept out of every log record and stored byte."""

from __future__ import annotations

import logging
import os
import random
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlsplit

from urllib3.exceptions import MaxRetryError
from urllib3.util.retry import Retry

from paramill.run.progress import note
from paramill.config.typed import Settings, setting
from paramill.twitter.web import Adapter, deadline


#: Major English-language news accounts (Lan et al. 2017 followed news accounts like these).
NEWS_ACCOUNTS = ["nytimes", "cnn", "bbcworld", "reuters", "ap", "washingtonpost", "wsj",
                 "guardian", "foxnews", "abc", "nbcnews", "cbsnews", "npr", "usatoday",
                 "latimes", "time", "bbcbreaking", "cnnbrk", "skynews", "business"]
#: the description of a key that only steers what a live harvest asks for: the days already
#: harvested are settled (rebuilt from their saved pages, never fetched again), so changing it
#: re-runs no day's job and the next harvest takes it (a launch-only key)
STEERS = " It changes what the next live harvest asks for, never a day harvested."
#: the X API's own address (tweepy's host; requests to it go to ``api_url`` when that differs)
API_URL = "https://api.twitter.com"
#: https to any host, http to a loopback one (the credentials go with every request); a path
#: prefix may follow (a gateway's: letters, digits and . _ ~ % / + = -), never a query, a
#: fragment or user information
API_URL_PATTERN = (r"^(https://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])|http://(localhost|127(\.[0-9]{1,3}){3}|\[::1\]))"
                   r"(:[0-9]{1,5})?(/[A-Za-z0-9._~%/+=-]*)?$")
#: note_tweet: a post over 280 characters (a long post) has only its first 280 in ``text``
#: and the whole, with its links, in ``note_tweet`` (given only when asked for)
TWEET_FIELDS = ["created_at", "entities", "referenced_tweets", "author_id", "lang", "note_tweet"]


class HarvestError(RuntimeError):
    """A harvest that cannot go on (credentials, access tier, the monthly post cap); the
    message says why."""


@dataclass(frozen=True)
class HarvestSettings(Settings):
    accounts: list[Annotated[str, {"pattern": "^[A-Za-z0-9_]{1,15}$"}]] = setting(
        factory=lambda: list(NEWS_ACCOUNTS),
        doc="News accounts followed (screen names: 1-15 letters, digits or _)." + STEERS, launch=True)
    bearer_token_env: str = setting(
        "X_BEARER_TOKEN", "Environment variable holding the bearer token.",
        pattern="^[A-Za-z_][A-Za-z0-9_]*$", launch=True)
    consumer_key_env: str = setting(
        "X_CONSUMER_KEY", "OAuth 1.0a consumer key variable (used when no bearer token).",
        pattern="^[A-Za-z_][A-Za-z0-9_]*$", launch=True)
    consumer_secret_env: str = setting(
        "X_CONSUMER_SECRET", "OAuth 1.0a consumer secret variable.",
        pattern="^[A-Za-z_][A-Za-z0-9_]*$", launch=True)
    access_token_env: str = setting(
        "X_ACCESS_TOKEN", "OAuth 1.0a access token variable.", pattern="^[A-Za-z_][A-Za-z0-9_]*$", launch=True)
    access_token_secret_env: str = setting(
        "X_ACCESS_TOKEN_SECRET", "OAuth 1.0a access token secret variable.",
        pattern="^[A-Za-z_][A-Za-z0-9_]*$", launch=True)
    max_results: int = setting(100, "Tweets per API page." + STEERS, minimum=5, maximum=100, launch=True)
    max_pages: int = setting(20, "Pages per timeline or URL search per run." + STEERS, minimum=1,
                             launch=True)
    retries: int = setting(
        5,
        "Retries a call on rate limits (429), server errors (500/502/503/504), network errors and "
        "malformed bodies; then the harvest stops.", minimum=0, launch=True)
    backoff: float = setting(
        2.0, "First back-off in seconds (doubles each retry; each wait is jittered to 50-100%).",
        minimum=0, launch=True)
    backoff_max: float = setting(
        900.0, "Longest single wait in seconds, of the back-off and of a rate-limit reset.",
        minimum=0, launch=True)
    expand_all: bool = setting(
        False, "Follow redirects of every URL, not only known shorteners and unexpanded links.")
    url_timeout: float = setting(5.0, "Seconds a URL expansion or a news page's read waits on the "
                                 "server at a time; three times it in all, redirects and a "
                                 "server sending a byte at a time included.", exclusiveMinimum=0)
    url_workers: int = setting(8, "Concurrent URL expansions.", minimum=1, launch=True)
    private_urls: bool = setting(
        False, 'Follow links to hosts off the public internet (loopback, private, link-local, '
               "reserved) and read their pages' cards: for an intranet's news site. Off, such a "
               'link is kept as it is and never requested.')
    search_languages: list[Annotated[str, {"pattern": "^[a-z]{2,3}$"}]] = setting(
        factory=lambda: ["en"],
        doc="Languages a URL's search asks for (the API's lang: codes; empty: any). Tweets of "
        "other languages count against the monthly post cap and are not paired "
        "(twitter.pairs.languages)." + STEERS, launch=True)
    max_query_chars: int = setting(
        512, "Longest search query the API takes (X: 512 on the self-serve tiers, 1,024 on Pro, "
        "4,096 on Enterprise). A longer URL is searched by a shorter run of its tokens."
        + STEERS, minimum=64, launch=True)
    search_days: int = setting(
        7, "A URL is searched again on harvests up to this many days after the one that first saw "
        "it, then dropped from the state (recent search reaches back 7 days)." + STEERS, minimum=0,
        launch=True)
    api_url: str = setting(
        API_URL, "Where the X API v2 is reached: its own address, or an API gateway or proxy "
        "that serves the same routes (/2/...). https, or http to a loopback host only: the "
        "credentials go with every request.", pattern=API_URL_PATTERN,
        launch=True)
    api_timeout: float = setting(
        30.0, 'Seconds an X API request waits on the server at a time (to connect, each read), '
              'three times it in all; a request past it is retried as a failed one. Raise it on a'
              ' slow link.', exclusiveMinimum=0, launch=True)


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
        return at_address(tweepy.Client(bearer_token=token, wait_on_rate_limit=False,
                                        return_type=dict), settings.api_url, settings.api_timeout)
    if all(keys):
        return at_address(tweepy.Client(consumer_key=keys[0], consumer_secret=keys[1], access_token=keys[2],
                                        access_token_secret=keys[3], wait_on_rate_limit=False,
                                        return_type=dict), settings.api_url, settings.api_timeout)
    raise HarvestError(f"no X API credentials: set {settings.bearer_token_env} (bearer token) or "
                       f"{settings.consumer_key_env}, {settings.consumer_secret_env}, "
                       f"{settings.access_token_env}, {settings.access_token_secret_env} (OAuth 1.0a)")


class _ApiAdapter(Adapter):
    """Sends what tweepy addresses to the X API's own host to ``base`` (the rest of the URL,
    the signed query and the headers unchanged), with ``timeout`` where tweepy gives none,
    on connections a :func:`~paramill.twitter.web.deadline` watches."""

    def __init__(self, base: str, timeout: float):
        self.base, self.timeout = base, timeout
        super().__init__(public_only=False)  # a gateway may be on the cluster's own network

    def send(self, request, *args: Any, **kwargs: Any):
        if self.base != API_URL:
            request.url = self.base + request.url[len(API_URL):]
        if kwargs.get("timeout") is None:
            kwargs["timeout"] = self.timeout
        return super().send(request, *args, **kwargs)


def at_address(client: Any, api_url: str, timeout: float = 30.0) -> Any:
    """``client`` (tweepy's) with its requests going to ``api_url`` (the X API's own address,
    or a gateway: OAuth 1.0a signs the URL tweepy built, the X API's, and a gateway passes it
    on), each waiting at most ``timeout`` seconds at a time for the server."""
    client.session.mount(API_URL + "/", _ApiAdapter(api_url.rstrip("/"), timeout))
    return client


class Refused(Exception):
    """The API refused one request (400, or 404 for an account or URL it does not know):
    skip what it was for, with a rejected row."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.status = status


RETRYABLE_STATUS = (429, 500, 502, 503, 504)


def _schedule(factor: float, cap: float, retries: int) -> float:
    """The nominal wait before retry number ``retries`` (1, 2, ...): ``factor * 2**(n-1)``,
    capped at ``cap``."""
    return min(cap, factor * 2 ** (retries - 1)) if retries else 0.0


class _Backoff(Retry):
    """urllib3's retry budget (``total``, its history, exhaustion), waiting ``backoff`` before
    the first retry and twice as long before each next one, up to ``backoff_max`` (urllib3's
    own schedule waits nothing before the first)."""

    def get_backoff_time(self) -> float:
        return _schedule(self.backoff_factor, self.backoff_max, len(self.history))


class _Failure(Exception):
    """What went wrong with one try of an API call, as the retry budget records it."""


def backoff_delay(settings: HarvestSettings, attempt: int, rng: random.Random) -> float:
    """Exponential back-off with jitter: uniform in [½, 1] of ``backoff * 2**attempt``,
    capped at ``backoff_max``."""
    return _schedule(settings.backoff, settings.backoff_max, attempt + 1) * rng.uniform(0.5, 1.0)


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
    window = ""  # where a rate limit's window ends past the longest wait: said in the error
    retry = _Backoff(total=settings.retries, backoff_factor=settings.backoff,
                     backoff_max=settings.backoff_max)
    while True:
        wait = None  # the back-off, unless the API says when to come back
        try:
            with deadline(3 * settings.api_timeout):  # a server sending a byte at a time too
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
            if _usage_capped(exc):  # no wait of minutes ends it: it resets with the month
                raise HarvestError(
                    f"the X API refused {fn.__name__}: the project's monthly post cap is reached "
                    f"(429: {_api_message(exc)}). Nothing more can be read until it resets (the "
                    "developer console says when, and how much a month the tier allows); the "
                    "pages saved so far are kept, and the next harvest after the reset goes on "
                    "from them (docs/methods/twitter.md, Harvest).") from None
            reset = getattr(exc, "reset_time", None)
            left = reset + 1 - now() if reset is not None else 0
            if left > 0:  # wait for the reset the API gave
                wait = min(settings.backoff_max, left)
                window = ("" if left <= settings.backoff_max else
                          f"; its window ends at {time.strftime('%Y-%m-%d %H:%M', time.gmtime(reset))} "
                          f"UTC, {(left - 1) / 60:.0f} min from now, past backoff_max "
                          f"({settings.backoff_max:g} s)")
            failure = "rate limited (429)"
        except tweepy.HTTPException as exc:  # other statuses: retry those that are worth it
            status = exc.response.status_code if exc.response is not None else None
            if status is not None and 400 <= status < 500 and status not in RETRYABLE_STATUS:
                raise Refused(f"{fn.__name__} refused ({status}): {_api_message(exc)}", status) from None
            if status not in RETRYABLE_STATUS:
                raise HarvestError(f"the X API answered {fn.__name__} with {status}: "
                                   f"{_api_message(exc)}") from None
            failure = f"status {status}"
        except (requests.RequestException, ValueError, RecursionError) as exc:
            # RecursionError: an answer nested deeper than Python's JSON parser goes (a broken
            # proxy's or a hostile one's), retried as any unreadable answer
            failure = type(exc).__name__
        try:
            retry = retry.increment(error=_Failure(failure))
        except MaxRetryError:
            raise HarvestError(f"{fn.__name__} failed after {settings.retries} retries: {failure}"
                               + (window if failure.startswith("rate limited") else "")) from None
        if wait is None:
            wait = retry.get_backoff_time() * rng.uniform(0.5, 1.0)
        note(f"paramill twitter harvest: {fn.__name__} {failure}: waiting {wait:.1f} s, then retry "
             f"{len(retry.history)} of {settings.retries}")  # a wait of up to backoff_max is not a hang
        sleep(wait)


def _usage_capped(exc: Any) -> bool:
    """Whether a 429 is the monthly post cap (``UsageCapExceeded``, problem type
    ``…/usage-capped``), not a rate limit that a wait of minutes ends."""
    try:
        body = exc.response.json()
    except (ValueError, AttributeError, RecursionError):  # RecursionError: nested too deeply
        return False
    return isinstance(body, dict) and (body.get("title") == "UsageCapExceeded" or str(
        body.get("type", "")).endswith("/usage-capped"))


def _api_message(exc: Any) -> str:
    try:
        body = exc.response.json()
        text = str(body.get("detail") or body.get("title") or str(body)[:200])
    except (ValueError, AttributeError, RecursionError):
        text = getattr(exc.response, "text", "")[:200]
    return redact(text)  # a body may echo the request's Authorization header


def search_query(url: str, languages: list[str], limit: int = 512) -> str:
    """The recent search for the tweets of the canonical ``url`` in ``languages`` (any when
    empty), at most ``limit`` characters (X refuses a longer query: 400). X matches ``url:``
    on the tokens of a tweet's URLs, so it asks for the host and path (and query) without the
    scheme: a run of tokens in every spelling of the link, http or https, with ``www.`` or
    without, tracking parameters after; the canonical form itself (https, no ``www.``) is no
    run of a ``www.`` site's tokens. A form too long for the query loses its query string,
    then its last tokens: a shorter run of the same tokens, which every spelling of the link
    still holds (the search may find more, which the month pairs only by their own URL)."""
    parts = urlsplit(url)
    langs = " OR ".join(f"lang:{lang}" for lang in languages)
    tail = f" ({langs})" if len(languages) > 1 else f" {langs}" if langs else ""
    room = limit - len(tail) - len('url:""')
    # a quote or a space would end the quoted value: separators, as X's tokens read them
    form = _UNQUOTABLE.sub("/", parts.netloc + (parts.path or "/"))
    query = _UNQUOTABLE.sub("/", parts.query)
    if query and len(form) + 1 + len(query) <= room:
        form = f"{form}?{query}"
    elif len(form) > room:
        cut = max((m.start() for m in _SEPARATOR.finditer(form, 0, room + 1)), default=room)
        form = _SEPARATOR_RUN.sub("", form[:cut])
    return f'url:"{form}"' + tail


#: what a quoted search value cannot hold; what separates a URL's tokens
_UNQUOTABLE = re.compile(r'["\\\s]+')
_SEPARATOR = re.compile(r"[\W_]")
_SEPARATOR_RUN = re.compile(r"[\W_]+$")
