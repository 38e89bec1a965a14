"""URLs of tweets: canonical form, and expansion of shortened links over HTTP.

Canonical form: lower-case scheme and host, no default port, no fragment, no tracking
parameters (utm_*, fbclid, gclid, ...), the remaining query parameters sorted, no
trailing slash on a non-root path. The API's ``unwound_url``/``expanded_url`` is used when
present; other links on known shortener hosts (or every link, with ``expand_all``) are
followed with HEAD (then GET when HEAD is refused) through redirects, with a timeout,
a redirect limit (loops end there), bounded concurrency, and a persistent cache.
Optionally the linked page's ``twitter:title``/``twitter:description`` are read.

Past the shorteners, a link stays on its own site: where the page redirects to another site
(a consent wall, a login, a paywall's host, a parked domain), the link is kept as the last
URL on its own site, and the redirect is recorded as what it is (:meth:`Expander.crossed`:
the day's rejected rows say ``cross_host_redirect`` with the host it left for), where
taking the other site's URL would join every tweet sent there into one URL's pairs.

No request goes to a host that is not on the public internet, and each URL's requests end
by a deadline however slowly a server answers: :mod:`paramill.twitter.web`.
"""

from __future__ import annotations

import datetime
import ipaddress
from html.parser import HTMLParser
import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import requests

from paramill.errors import InputError
from paramill.io.jsonfiles import MalformedJson, merge_json, read_json
from paramill.twitter.web import PrivateAddress, deadline, web_session

TRACKING = re.compile(r"^(utm_\w+|fbclid|gclid|dclid|mc_cid|mc_eid|cmpid|ocid|ref|ref_src|"
                      r"smid|smtyp|s_cid|share|taid|at_medium|at_campaign|__twitter_impression)$", re.I)
SHORTENERS = {"t.co", "bit.ly", "ow.ly", "buff.ly", "trib.al", "dlvr.it", "tinyurl.com",
              "goo.gl", "fb.me", "ift.tt", "j.mp", "nyti.ms", "wapo.st", "cnn.it", "bbc.in",
              "reut.rs", "apne.ws", "econ.st", "on.ft.com", "gu.com", "lnkd.in", "amzn.to"}


def canonical(url: str) -> str:
    """The canonical form (module docstring). A URL that cannot be parsed (an invalid
    port, a malformed IPv6 host) raises ValueError naming it."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"invalid URL {url[:200]!r}: {exc}") from None
    scheme = (parts.scheme or "http").lower()
    host = (parts.hostname or "").lower()
    if host.startswith("www."):
        host = host[4:]
    netloc = host if port is None or (scheme, port) in (("http", 80), ("https", 443)) else f"{host}:{port}"
    query = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                   if not TRACKING.match(k))
    path = parts.path or "/"
    if len(path) > 1:
        path = path.rstrip("/")
    return urlunsplit(("https" if scheme in ("http", "https") else scheme, netloc, path,
                       urlencode(query), ""))


def _host(url: str) -> str:
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""
    return host[4:] if host.startswith("www.") else host


def site(host: str) -> str:
    """The site of ``host``: its last two labels, or three under a two-letter country code
    whose second level is short (``bbc.co.uk``, ``abc.net.au``): ``edition.cnn.com`` and
    ``cnn.com`` are one site; an address is its own."""
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host
    except ValueError:
        pass
    labels = host.split(".")
    keep = 3 if len(labels) >= 3 and len(labels[-1]) == 2 and len(labels[-2]) <= 3 else 2
    return ".".join(labels[-keep:])


def landing(chain: list[str]) -> tuple[str, str | None]:
    """Where a chain of redirects (each URL requested, the last answered) leads: past the
    shorteners, the last URL on the first site it reaches, and the host it then left for
    (None when it stays on that site)."""
    reached: str | None = None
    last = chain[-1]
    for url in chain:
        host = _host(url)
        if reached is None:
            if host in SHORTENERS:
                continue
            reached, last = site(host), url
        elif site(host) == reached:
            last = url
        else:
            return last, host
    return last, None


def is_short(url: str) -> bool:
    try:
        return (urlsplit(url).hostname or "").lower() in SHORTENERS
    except ValueError:  # unparseable: canonical() reports it
        return False


class Expander:
    """Follows redirects of URLs, with a JSON cache file (``None`` = in memory only; a
    harvest's is its month's, so the file a job reads and rewrites stays a month's size);
    public hosts only unless ``private_urls`` (module docstring). The file is read when the
    expander is made and written, merged with what other jobs added meanwhile, after each
    :meth:`expand`; inside a ``with`` block only when the block ends (on an error too): a
    harvest expands a timeline page at a time. ``earlier``: a cache only read (the one file
    for every month that paramill kept before), asked for the URLs ``cache`` lacks, on the
    first that does; what it answers is written to ``cache`` as if found, so a rebuilt day
    gets the answers its links had when it was harvested, not the web's of today."""

    def __init__(self, cache: str | Path | None = None, timeout: float = 5.0,
                 max_redirects: int = 10, workers: int = 8, session: requests.Session | None = None,
                 private_urls: bool = False, earlier: str | Path | None = None):
        self.cache_path = Path(cache) if cache else None
        self.cache: dict[str, str | dict[str, str]] = (load_url_cache(self.cache_path)
                                      if self.cache_path and self.cache_path.exists() else {})
        self._earlier: Path | dict[str, str | dict[str, str]] | None = Path(earlier) if earlier else None
        self._new: dict[str, str | dict[str, str]] = {}  # found since the file was written
        self._deferred = False  # inside a with block: written when it ends
        self.timeout = timeout
        self.workers = workers
        self.session = web_session(private_urls, session)
        self.session.max_redirects = max_redirects

    def _resolve(self, url: str) -> str | dict[str, str] | None:
        """Where ``url`` leads (:func:`landing`: a dict ``{url, left_for}`` where it left its
        site); None when the web could not say now (a timeout, a connection error, three
        times the timeout spent on it in all): not cached, so a later run asks again, where a
        loop or a host that is not public is an answer that is."""
        with deadline(3 * self.timeout) as watch:
            chain = self._follow(url, watch)
        if watch.expired or chain is None:
            return None
        final, left_for = landing(chain)
        return {"url": final, "left_for": left_for} if left_for else final

    def _follow(self, url: str, watch) -> list[str] | None:
        """The URLs requested on the way, the last the one that answered (or the loop's last,
        or the URL of a host that is not public, never requested)."""
        for method in ("head", "get"):
            try:
                resp = self.session.request(method, url, allow_redirects=True, timeout=self.timeout,
                                            stream=(method == "get"))
                resp.close()
                if resp.status_code < 400 or method == "get":
                    return [r.url for r in resp.history] + [resp.url]
            except requests.TooManyRedirects as exc:  # a loop or a very long chain
                return [url] + ([exc.response.url] if exc.response is not None else [])
            except PrivateAddress as exc:  # where the link leads, never requested
                return [url] + ([exc.request.url] if exc.request is not None else [])
            except requests.RequestException:
                if method == "get" or watch.expired:
                    return None
        return None

    def expand(self, urls: list[str]) -> dict[str, str]:
        """url -> final URL after redirects (the URL itself when it cannot be followed)."""
        todo = [u for u in dict.fromkeys(urls) if u not in self.cache]
        found: dict[str, str | dict[str, str]] = {}
        if todo and self._earlier is not None:
            if isinstance(self._earlier, Path):  # read once, on the first URL the cache lacks
                self._earlier = load_url_cache(self._earlier) if self._earlier.exists() else {}
            found = {u: self._earlier[u] for u in todo if u in self._earlier}
            todo = [u for u in todo if u not in found]
        if todo:
            with ThreadPoolExecutor(self.workers) as pool:
                for url, final in zip(todo, pool.map(self._resolve, todo)):
                    if final is not None:
                        found[url] = final
        if found:  # the results are gathered here, in the calling thread
            self.cache.update(found)
            self._new.update(found)
            if not self._deferred:
                self.save()
        return {u: _final(self.cache.get(u, u)) for u in urls}

    def crossed(self, urls: list[str]) -> dict[str, str]:
        """url -> the host it redirected to on leaving its site, for those of ``urls`` that
        did (as found or cached: a rebuilt day says the same)."""
        return {u: entry["left_for"] for u in urls
                if isinstance(entry := self.cache.get(u), dict)}

    def save(self) -> None:
        """Write what was found since the last write, with what other jobs added meanwhile."""
        if self.cache_path and self._new:
            self.cache = merge_json(self.cache_path, self._new, load_url_cache, indent=None)
        self._new = {}

    def __enter__(self) -> "Expander":
        self._deferred = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._deferred = False
        self.save()


def earlier_cache(path: str | Path | None, date: str) -> Path | None:
    """``path`` (the one-file URL cache paramill kept for every month before it kept one a
    month) when it may know the links of the day ``date``: it exists and was last written
    on or after that day (a day of slack for clocks), as it was by the day's harvest."""
    if not path or not Path(path).exists():
        return None
    written = datetime.datetime.fromtimestamp(Path(path).stat().st_mtime, datetime.timezone.utc)
    return Path(path) if date <= (written.date() + datetime.timedelta(days=1)).isoformat() else None


def _final(entry: str | dict[str, str]) -> str:
    return entry["url"] if isinstance(entry, dict) else entry


def _entry(value: object) -> bool:
    """where a URL leads: a URL, or {url, left_for} where it left its site"""
    return isinstance(value, str) or (isinstance(value, dict) and set(value) == {"url", "left_for"}
                                      and all(isinstance(v, str) for v in value.values()))


def load_url_cache(path: Path) -> dict[str, str | dict[str, str]]:
    """The URL cache in ``path`` (``{url: where it leads}``, or ``{url, left_for}`` where it
    left its site), or an error naming the file."""
    try:
        cache = read_json(path)
    except MalformedJson as exc:
        raise ValueError(f"{path}: not a URL cache ({exc.message}); remove it "
                         "to start a new one") from None
    wrong = (None if not isinstance(cache, dict) else
             next(((k, v) for k, v in cache.items() if not _entry(v)), None))
    if not isinstance(cache, dict) or wrong:
        found = (f"{wrong[0]!r} maps to {json.dumps(wrong[1])[:60]}" if wrong
                 else f"a JSON {type(cache).__name__}")
        raise ValueError(f"{path}: not a URL cache ({found}; a cache is an "
                         "object of URL: where it leads); remove it to start a new one")
    return cache


class _Attributes(HTMLParser):
    """The attributes of one tag, parsed by the standard library's HTML parser (names
    lower-cased, values unquoted and unescaped; the first of a name given twice kept)."""

    def __init__(self, tag: str):
        super().__init__()
        self.found: dict[str, str] = {}
        self.feed(tag)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is not None:
                self.found.setdefault(name, value)

    handle_startendtag = handle_starttag


#: a meta tag's start, found in the page as it is (a lowered copy's places are not the page's:
#: "İ".lower() is two characters)
_META_TAG = re.compile(r"<meta\s", re.I)


def meta_card(body: str) -> dict[str, str]:
    """The ``twitter:title`` and ``twitter:description`` of a page's ``<meta>`` tags (named
    by ``name`` or ``property``, in either order with ``content``; the last one a key meets
    wins), read in one pass: each tag found up to its ``>`` and its attributes parsed by
    ``html.parser``. The tags are found here, not by the parser fed the whole page: it goes
    back over the page for every tag never closed (18 s for 8,000 of them, growing with
    their square), where this finds each once."""
    found: dict[str, str] = {}
    tag = _META_TAG.search(body)
    while tag:
        end = body.find(">", tag.end())
        if end < 0:
            break  # no tag closes after it
        attributes = _Attributes(f"<meta {body[tag.end():end]}>").found
        key = (attributes.get("name") or attributes.get("property") or "").lower()
        if key in ("twitter:title", "twitter:description") and "content" in attributes:
            found[key.split(":")[1]] = attributes["content"]
        tag = _META_TAG.search(body, end)
    return found


def page_card(url: str, session: requests.Session | None = None, timeout: float = 5.0,
              limit: int = 200_000) -> dict[str, str]:
    """``twitter:title``/``twitter:description`` of a page (empty when unavailable; a page
    on a host that is not public is not requested unless ``session`` allows it). At most
    ``limit`` bytes are read, for at most three times ``timeout`` in all."""
    return _card(url, session or web_session(), timeout, limit) or {}


def _card(url: str, session: requests.Session, timeout: float, limit: int = 200_000
          ) -> dict[str, str] | None:
    """:func:`page_card`, or None when the page could not be read now (a timeout, a
    connection error, its deadline): an answer for another time, where a page without a
    card, or on a host that is not public, is one for good."""
    try:
        with deadline(3 * timeout) as watch:  # a server dripping a byte at a time ends here
            resp = session.get(url, timeout=timeout, stream=True)
            data = bytearray()
            read1 = getattr(resp.raw, "read1", None)  # what has arrived (urllib3 2); else small reads
            while len(data) < limit and not watch.expired:
                chunk = (read1(16384, decode_content=True) if read1 is not None
                         else resp.raw.read(1024, decode_content=True))
                if not chunk:
                    break
                data += chunk
            resp.close()
        if watch.expired:  # the page as far as it came: not the page
            return None
        body = bytes(data[:limit]).decode(resp.encoding or "utf-8", "replace")
    except (PrivateAddress, LookupError):  # never requested, or an unknown charset: for good
        return {}
    except (requests.RequestException, OSError):
        return None
    return meta_card(body)


def check_cards(cards: object, path: str | Path) -> dict[str, dict[str, str]]:
    """``cards`` (read from ``path``) if it is ``{url: {title, description}}``, each a string
    (or null); otherwise an error naming the file."""
    if not isinstance(cards, dict) or not all(
            isinstance(c, dict) and all(isinstance(v, str) or v is None for v in c.values())
            for c in cards.values()):
        raise InputError(path, None, "cards must be a JSON object of {url: {title, description}}, "
                                     "each a string (or null); a card cache may be removed to start anew")
    return cards


def load_card_cache(path: Path) -> dict[str, dict[str, str]]:
    """The card cache in ``path``, or an error naming the file."""
    try:
        return check_cards(read_json(path), path)
    except MalformedJson as exc:
        raise InputError(path, None, f"not a card cache ({exc.message}); remove it to start "
                         "anew") from None


def fetch_cards(urls: list[str], workers: int = 8, timeout: float = 5.0,
                private_urls: bool = False, cache: str | Path | None = None) -> dict[str, dict[str, str]]:
    """``page_card`` of each URL, with bounded concurrency (pages without a card left out;
    public hosts only unless ``private_urls``). ``cache``: a JSON file of the cards read
    before (a page without one as ``{}``), read first and written back: a URL is fetched once,
    where a page that could not be read now is left out of it, to be asked again."""
    cache = Path(cache) if cache else None
    known = load_card_cache(cache) if cache and cache.exists() else {}
    unique = list(dict.fromkeys(urls))
    todo = [u for u in unique if u not in known]
    if todo:
        session = web_session(private_urls)
        probe = 2 * workers  # a node without the web (a cluster's compute node) waits this many
        with ThreadPoolExecutor(workers) as pool:
            cards = list(pool.map(lambda u: _card(u, session, timeout), todo[:probe]))
            if len(todo) > probe and all(c is None for c in cards):
                print(f"paramill: warning: none of the first {probe} pages could be read (no web "
                      f"from this node?); the cards of {len(todo)} pages are left out this run and "
                      "asked for on the next", file=sys.stderr)
            else:
                cards += pool.map(lambda u: _card(u, session, timeout), todo[probe:])
        found = {u: c for u, c in zip(todo, cards) if c is not None}
        known.update(found)
        if cache and found:  # with what other jobs added meanwhile
            known = merge_json(cache, found, load_card_cache)
    return {u: known[u] for u in unique if known.get(u)}
