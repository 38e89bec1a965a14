"""A fake X API v2 on a loopback port: users, their timelines and the tweets a URL search
finds, with faults served in order. The harvest is pointed at it with ``api_url`` (or
:func:`paramill.twitter.api.at_address` on a tweepy client); the unit tests and the live
harvest workflow test share it."""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import threading
import time
from collections.abc import Iterator
from urllib.parse import parse_qs, unquote, urlsplit


def long_post(tid, author_id, text, url):
    """A post over 280 characters as X gives it: ``text`` its first 280 (an ellipsis at the
    end, no link when the link came later), and the whole, with its link, in ``note_tweet``."""
    whole = f"{text} {url}"
    t = tweet(tid, author_id, whole[:279] + "…")
    t["note_tweet"] = {"text": whole, "entities": {"urls": [
        {"start": len(text) + 1, "end": len(whole), "url": "https://t.co/long", "expanded_url": url}]}}
    return t


def later_version(first, tid, text):
    """The post ``first`` after an edit, as X gives it: a new id ``tid``, the new ``text``;
    both versions' edit history (X's default field) names every id, oldest first."""
    history = [*first["edit_history_tweet_ids"], str(tid)]
    first["edit_history_tweet_ids"] = history
    return {**first, "id": str(tid), "text": text, "edit_history_tweet_ids": list(history)}


def tweet(tid, author_id, text, url=None, rt=None):
    t = {"id": str(tid), "author_id": str(author_id), "text": text,
         "created_at": "2026-11-02T10:00:00.000Z", "lang": "en",
         "edit_history_tweet_ids": [str(tid)]}  # a default field of X's: the post's versions
    if url:
        t["entities"] = {"urls": [{"url": "https://t.co/z", "expanded_url": url}]}
    if rt:
        t["referenced_tweets"] = [{"type": "retweeted", "id": str(rt)}]
    return t


class FakeX:
    """Users, their tweets, and the tweets found by URL search; faults served in order."""

    def __init__(self):
        self.users = {"newsa": "100", "newsb": "200"}
        self.names = {v: k for k, v in self.users.items()} | {"300": "reader"}
        self.timelines = {"100": [], "200": []}
        self.searchable = []
        self.searched = []  # the search queries, as asked
        self.max_query = 512  # X's longest query on the self-serve tiers
        self.faults = []  # (path prefix, kind) consumed by the first matching request
        self.requests = []
        self.lock = threading.Lock()

    def fault_for(self, path):
        with self.lock:
            for i, (prefix, kind) in enumerate(self.faults):
                if path.startswith(prefix):
                    del self.faults[i]
                    return kind
        return None

    def page(self, tweets, query):
        since = int(query.get("since_id", ["0"])[0] or 0)
        size = int(query.get("max_results", ["100"])[0])
        start = int(query.get("pagination_token", query.get("next_token", ["0"]))[0])
        def key(t):  # a tweet without a decimal id (a bad record) sorts as the newest
            i = t.get("id")
            return int(i) if isinstance(i, str) and i.isdigit() else 10**15

        fresh = sorted((t for t in tweets if key(t) > since), key=lambda t: -key(t))
        fields = set(query.get("tweet.fields", [""])[0].split(","))
        # a long post's whole text and links come only when asked for (X's note_tweet field)
        chunk = [t if "note_tweet" in fields else {k: v for k, v in t.items() if k != "note_tweet"}
                 for t in fresh[start:start + size]]
        body = {"data": chunk, "includes": {"users": [{"id": t["author_id"], "username": self.names.get(str(t["author_id"]), "someone")}
                                                      for t in chunk]},
                "meta": {"result_count": len(chunk)}}
        if start + size < len(fresh):
            body["meta"]["next_token"] = str(start + size)
        if not chunk:
            body = {"meta": {"result_count": 0}}
        return body


def drip(out, data: bytes, every: float = 0.05) -> None:
    """Write ``data`` to ``out`` a byte every ``every`` seconds (each within a client's read
    timeout), until the client gives up."""
    try:
        for byte in data:
            out.write(bytes([byte]))
            out.flush()
            time.sleep(every)
    except OSError:  # the client gave up
        pass


def handler_for(fake: FakeX):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            fake.requests.append((parts.path, query, dict(self.headers)))
            if self.headers.get("Authorization", "") in ("", "Bearer None"):
                return self.reply(401, {"title": "Unauthorized", "detail": "Unauthorized"})
            fault = fake.fault_for(parts.path)
            if fault == "429":
                return self.reply(429, {"title": "Too Many Requests"},
                                  {"x-rate-limit-reset": str(int(time.time()) + 1)})
            if fault == "usage-cap":  # the monthly post cap: the 15-minute window is not spent
                return self.reply(429, {"account_id": "1", "product_name": "standard-basic",
                                        "title": "UsageCapExceeded", "period": "Monthly", "scope": "Product",
                                        "detail": "Usage cap exceeded: Monthly product cap",
                                        "type": "https://api.twitter.com/2/problems/usage-capped"},
                                  {"x-rate-limit-limit": "450", "x-rate-limit-remaining": "449",
                                   "x-rate-limit-reset": str(int(time.time()) + 900)})
            if fault == "429-hour":  # a window that ends past backoff_max
                return self.reply(429, {"title": "Too Many Requests"},
                                  {"x-rate-limit-reset": str(int(time.time()) + 3600)})
            if fault == "429-noreset":
                return self.reply(429, {"title": "Too Many Requests"})
            if fault == "429-past":
                return self.reply(429, {"title": "Too Many Requests"},
                                  {"x-rate-limit-reset": str(int(time.time()) - 3600)})
            if fault in ("500", "502", "504"):
                return self.reply(int(fault), {"title": "Server Error"})
            if fault == "400":
                return self.reply(400, {"title": "Invalid Request", "detail": "query is invalid"})
            if fault == "400-echo":  # a proxy or API error page that echoes the request headers
                return self.reply(400, {"title": "Invalid Request", "detail":
                                        f"bad request: {{'Authorization': '{self.headers.get('Authorization')}'}}"})
            if fault == "errors-only":
                name = parts.path.rsplit("/", 1)[1]
                return self.reply(200, {"errors": [{"title": "Not Found Error", "detail":
                                                    f"Could not find user with username: [{name}]."}]})
            if fault == "unusable":
                return self.reply(200, {"data": {"not": "a list"}})
            if isinstance(fault, dict):  # this body, as the API's answer
                return self.reply(200, fault)
            if fault == "503":
                return self.reply(503, {"title": "Service Unavailable"})
            if fault == "malformed":
                return self.reply(200, None, raw=b'{"data": [ {"id": ')
            if fault == "silent":  # a connection that answers nothing (dropped by the network)
                time.sleep(20)
                return None
            if fault == "drip":  # its answer a byte at a time, each within a read timeout
                return drip(self.wfile, b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 2000 + b"\r\n")
            if fault == "deep":  # JSON nested deeper than Python's parser goes
                return self.reply(200, None, raw=b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
            if fault == "free":
                return self.reply(403, {"title": "Client Forbidden", "reason": "client-not-enrolled",
                                        "detail": "When authenticating requests to the Twitter API v2 "
                                                  "endpoints, you must use keys and tokens from a Twitter "
                                                  "developer App that is attached to a Project."})
            if parts.path.startswith("/2/users/by/username/"):
                name = parts.path.rsplit("/", 1)[1]
                if name not in fake.users:
                    return self.reply(404, {"title": "Not Found Error"})
                return self.reply(200, {"data": {"id": fake.users[name], "username": name}})
            if parts.path.startswith("/2/users/") and parts.path.endswith("/tweets"):
                uid = parts.path.split("/")[3]
                return self.reply(200, fake.page(fake.timelines[uid], query))
            if parts.path == "/2/tweets/search/recent":
                asked = unquote(query["query"][0])  # url:"…" and any lang: operators
                url, langs = re.search(r'url:"([^"]+)"', asked).group(1), re.findall(r"lang:(\w+)", asked)
                fake.searched.append(asked)
                if len(asked) > fake.max_query:
                    return self.reply(400, {"title": "Invalid Request", "detail": "One or more parameters "
                                            f"to your request was invalid: query: must be at most {fake.max_query}"})
                hits = [t for t in fake.searchable if any(_phrase(url, u) for u in _links(t))
                        and (not langs or t.get("lang") in langs)]
                return self.reply(200, fake.page(hits, query))
            return self.reply(404, {"title": "Not Found Error"})

        def reply(self, code, body, headers=None, raw=None):
            data = raw if raw is not None else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    return Handler


@contextlib.contextmanager
def serve() -> Iterator[FakeX]:
    """A :class:`FakeX` served on 127.0.0.1 (its address in ``fake.base``) until the block ends."""
    fake = FakeX()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler_for(fake))
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    fake.base = f"http://127.0.0.1:{server.server_port}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()


def _links(t):
    """A post's expanded links, those of a long post's whole text included (X searches them)."""
    return [u["expanded_url"] for ents in (t.get("entities"), (t.get("note_tweet") or {}).get("entities"))
            for u in (ents or {}).get("urls", [])]


def _phrase(value, url):
    """X's ``url:`` match, as documented: tokenized; a quoted value as a run of the URL's tokens."""
    asked, tokens = re.findall(r"[a-z0-9]+", value.lower()), re.findall(r"[a-z0-9]+", url.lower())
    return any(tokens[i:i + len(asked)] == asked for i in range(len(tokens) - len(asked) + 1))


def populate(fake, start=1000, stories=3, replies=4):
    for s in range(stories):
        url = f"https://news.example.com/story-{start}-{s}?utm_source=tw"
        author = "100" if s % 2 == 0 else "200"
        fake.timelines[author].append(tweet(start + 100 * s, author, f"Big story number {s} happens today in the city {url}", url))
        for r in range(replies):
            fake.searchable.append(tweet(start + 100 * s + r + 1, "300", f"people say story {s} variant {r} is happening now {url}", url))
        fake.searchable.append(tweet(start + 100 * s + 50, "300", f"RT @newsa: Big story number {s}", url, rt=start + 100 * s))
