"""Twitter harvest, URLs, pairs and identification, against loopback servers only: a fake
X API v2 (tweepy's session is pointed at it) and a fake web for URL expansion."""

from __future__ import annotations

import gzip
import http.server
import json
import os
import re
import threading
import time
import unicodedata
from dataclasses import replace
from urllib.parse import unquote

import numpy as np
import polars as pl
import pytest
import requests
import tweepy

from paramill.errors import InputError
from tests.fake_x import drip, later_version, long_post, populate, serve, tweet
from tests.hostile import edited
from paramill.twitter.api import at_address
from paramill.twitter import identify
from paramill.twitter.harvest import HarvestError, HarvestSettings, harvest_day
from paramill.twitter.url_pairs import PairSettings, build_pairs, reject_reason
from paramill.twitter.tweettext import clean, comparable, tokenize
from paramill.twitter.tweets import from_object, read_archive
from paramill.twitter.urls import Expander, canonical, page_card, web_session

TOKEN = "SECRET-BEARER-TOKEN-0123456789"


# -- text and URLs -------------------------------------------------------------------

def test_tweet_tokenizer_and_clean_up():
    assert tokenize("RT @cnn: Storm hits #Florida :) http://t.co/abc it's 3,000 homes!") == [
        "RT", "@cnn", ":", "Storm", "hits", "#Florida", ":)", "http://t.co/abc", "it's", "3,000", "homes", "!"]
    assert clean("RT @cnn: Storm hits Florida http://t.co/abc via @reuters") == "Storm hits Florida"
    assert clean("@bob #breaking Storm hits Florida https://x.co/1") == "Storm hits Florida"
    assert comparable("Storm, hits Florida!!") == comparable("storm hits florida") == "storm hits florida"
    assert clean("Great read   h/t  @bob: more") == "Great read more"
    # a long post of spaces (25,000 characters: a note) is one pass, as any other text
    # (a leading \s* in the via pattern went over the rest of the run from every place)
    for text, cleaned, tokens in ((" " * 25_000, "", []), ("via" + " " * 25_000, "via", ["via"]),
                                  ("\t\n " * 10_000 + "via @x", "", ["via", "@x"])):
        assert (clean(text), tokenize(text)) == (cleaned, tokens)


def test_a_run_of_combining_marks_is_cut_to_the_stream_safe_thirty():
    """NFC sorts a run of combining marks by insertion: a post of 25,000 alternating marks
    ("Zalgo") took 0.3 s to clean, growing with the square of the run. A run is cut to 30,
    Unicode's stream-safe bound (UAX #15); text with shorter runs, any script, is unchanged."""
    from paramill.twitter.tweettext import MAX_MARKS, capped_marks

    zalgo = "a" + "".join("\u0301\u0316"[i % 2] for i in range(25_000))
    cut = capped_marks(f"Storm {zalgo} hits {zalgo}")
    assert cut == f"Storm a{zalgo[1:MAX_MARKS + 1]} hits a{zalgo[1:MAX_MARKS + 1]}"
    assert clean(f"Storm {zalgo} hits") == unicodedata.normalize("NFC", f"Storm a{zalgo[1:31]} hits")
    for text in ("e" + "\u0301" * 30, "日本語のテキスト" * 20, "Vi\u1ec7t Nam " * 40, "\U0001f600" * 100,
                 "\u0627\u064e\u0644\u0652" * 50):  # a run of exactly 30; runs of letters, emoji
        assert capped_marks(text) == text
    assert capped_marks("e" + "\u0301" * 31 + "x") == "e" + "\u0301" * 30 + "x"


def test_canonical_urls():
    assert canonical("HTTP://WWW.Example.com:80/a/b/?utm_source=tw&id=3&fbclid=x#top") == "https://example.com/a/b?id=3"
    assert canonical("https://example.com/?b=2&a=1") == "https://example.com/?a=1&b=2"
    assert canonical("https://example.com") == "https://example.com/"
    assert canonical("https://example.com:8443/x") == "https://example.com:8443/x"


class Web(http.server.BaseHTTPRequestHandler):
    """Redirect chains, a loop, a slow page, and a page with a Twitter card."""

    def do_HEAD(self):
        self._serve(body=False)

    def do_GET(self):
        self._serve(body=True)

    def _serve(self, body):
        path = self.path
        self.server.requested.append(path)
        if path == "/to-localhost":  # to the same server, under another name
            self._redirect(f"http://localhost:{self.server.server_port}/article")
        elif path == "/drip":  # a card one byte at a time, each within the read timeout
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=klingon")
            self.end_headers()
            drip(self.wfile, b'<meta name="twitter:title" content="Never ends">' * 50)
        elif path == "/drip-headers":  # headers a byte at a time, each within the read timeout
            drip(self.wfile, b"HTTP/1.1 301 Moved\r\nX-Pad: " + b"a" * 2000
                 + b"\r\nLocation: /article\r\n\r\n")
        elif path == "/echo-host":  # the Host header the client sent
            text = self.headers.get("Host", "").encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            if body:
                self.wfile.write(text)
        elif path.startswith("/short/"):
            n = int(path.rsplit("/", 1)[1])
            self._redirect(f"/short/{n - 1}" if n > 1 else "/article?utm_source=x")
        elif path == "/loop/a":
            self._redirect("/loop/b")
        elif path == "/loop/b":
            self._redirect("/loop/a")
        elif path == "/slow":
            time.sleep(2)
            self._redirect("/article")
        elif path == "/nohead" and self.command == "HEAD":
            self.send_response(405)
            self.end_headers()
        elif path == "/nohead":
            self._redirect("/article")
        else:
            page = (b'<html><head><meta name="twitter:title" content="Storm hits Florida">'
                    b'<meta content="Thousands lose power" property="twitter:description"></head></html>')
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            if body:
                self.wfile.write(page)

    def _redirect(self, to):
        self.send_response(301)
        self.send_header("Location", to)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


#: the paths each `web` server was asked for, by its URL
REQUESTED: dict[str, list[str]] = {}


def http_requests(web: str) -> list[str]:
    return REQUESTED[web]


@pytest.fixture
def web():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Web)
    server.requested = []
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    REQUESTED[url] = server.requested
    yield url
    server.shutdown()


def test_url_expansion_follows_chains_stops_loops_and_timeouts(web, tmp_path):
    cache = tmp_path / "cache.json"
    exp = Expander(cache, timeout=0.5, max_redirects=5, workers=4, private_urls=True)
    urls = [f"{web}/short/3", f"{web}/loop/a", f"{web}/slow", f"{web}/nohead", f"{web}/article"]
    out = exp.expand(urls)
    assert out[f"{web}/short/3"] == f"{web}/article?utm_source=x"
    assert out[f"{web}/loop/a"].startswith(f"{web}/loop/")  # the loop ends at the redirect limit
    assert out[f"{web}/slow"] == f"{web}/slow"  # timed out: kept as it is
    assert out[f"{web}/nohead"] == f"{web}/article"  # HEAD refused, GET followed
    assert canonical(out[f"{web}/short/3"]) == canonical(f"{web}/article")
    # cached on disk: a new expander answers without the network
    again = Expander(cache, session=None).expand([f"{web}/short/3"])
    assert again == {f"{web}/short/3": f"{web}/article?utm_source=x"}
    # but not a timeout (the web could not say, this time): the next run asks again
    saved = json.loads(cache.read_text())
    assert f"{web}/slow" not in saved and saved[f"{web}/loop/a"].startswith(f"{web}/loop/")
    before = len(http_requests(web))
    later = Expander(cache, timeout=5.0, private_urls=True).expand([f"{web}/slow", f"{web}/short/3"])
    assert later == {f"{web}/slow": f"{web}/article", f"{web}/short/3": f"{web}/article?utm_source=x"}
    assert {p for p in http_requests(web)[before:]} == {"/slow", "/article"}
    loopback = web_session(private_urls=True)
    assert page_card(f"{web}/article", loopback) == {"title": "Storm hits Florida",
                                                     "description": "Thousands lose power"}
    assert page_card("http://127.0.0.1:9/none", loopback, timeout=0.2) == {}
    from paramill.twitter.urls import fetch_cards

    cards = fetch_cards([f"{web}/article", f"{web}/article", "http://127.0.0.1:9/x"], timeout=0.5,
                        private_urls=True)
    assert cards == {f"{web}/article": {"title": "Storm hits Florida", "description": "Thousands lose power"}}


def test_links_to_hosts_off_the_public_internet_are_never_requested(web, monkeypatch):
    """A tweet's link to a loopback, private or link-local host (a cloud's metadata service),
    first or at a redirect, is kept as it is and not requested: by the expander and by the
    card fetcher, unless private_urls."""
    from paramill.twitter import web as web_module
    from paramill.twitter.urls import fetch_cards
    from paramill.twitter.web import is_public

    for host in ("127.0.0.1", "localhost", "10.1.2.3", "192.168.0.1", "169.254.169.254",
                 "::1", "::ffff:127.0.0.1", "2130706433", "0.0.0.0", "224.0.0.1"):
        assert not is_public(host), host
    assert is_public("8.8.8.8") and is_public("2001:4860:4860::8888")
    server = web.rsplit(":", 1)
    out = Expander(timeout=0.5).expand([f"{web}/short/2", f"{server[0]}:{server[1]}/article"])
    assert out == {f"{web}/short/2": f"{web}/short/2", f"{web}/article": f"{web}/article"}
    assert fetch_cards([f"{web}/article"], timeout=0.5) == {}
    requested = http_requests(web)
    assert requested == []  # nothing reached the server
    # a public first hop whose redirect leads to a private host: the redirect is not followed
    monkeypatch.setattr(web_module, "is_public", lambda host: host != "localhost")
    # (127.0.0.1 and localhost are two sites: the link is kept on its own, the redirect said)
    expander = Expander(timeout=0.5)
    assert expander.expand([f"{web}/to-localhost"]) == {f"{web}/to-localhost": f"{web}/to-localhost"}
    assert expander.crossed([f"{web}/to-localhost"]) == {f"{web}/to-localhost": "localhost"}
    assert requested == ["/to-localhost"]  # HEAD of the first hop only
    expander = Expander(timeout=0.5, private_urls=True)
    assert expander.expand([f"{web}/to-localhost"]) == {f"{web}/to-localhost": f"{web}/to-localhost"}
    assert requested[1:] == ["/to-localhost", "/article"]  # followed when allowed


def test_a_redirect_to_another_site_keeps_the_link_on_its_own_and_is_a_rejected_row(tmp_path):
    """Past the shorteners a link stays on its site: a news page that redirects to a consent
    wall, a login or a parked domain was filed under that other site's URL (every tweet sent
    there joined into one URL's pairs). The link is kept as the last URL on its site, and
    the redirect is a rejected row of its own, with the host it left for, counted in the
    day's record; the cache remembers it, so a rebuilt day says the same."""
    from paramill.twitter.harvest import day_table
    from paramill.twitter.urls import landing, site

    assert site("edition.cnn.com") == site("cnn.com") == "cnn.com"
    assert site("news.bbc.co.uk") == "bbc.co.uk" and site("10.0.0.1") == "10.0.0.1"
    short = ["https://t.co/x", "https://bit.ly/y", "https://www.nytimes.com/a", "https://nytimes.com/a/"]
    assert landing(short) == ("https://nytimes.com/a/", None)
    assert landing(["https://t.co/x", "https://news.com/a", "https://edition.news.com/a",
                    "https://consent.example/?u=1", "https://news.com/b"]) == (
        "https://edition.news.com/a", "consent.example")
    assert landing(["https://t.co/x"]) == ("https://t.co/x", None)  # a shortener's own answer

    cache = tmp_path / "urls.json"
    cache.write_text(json.dumps({"https://t.co/a": {"url": "https://news.com/a", "left_for": "consent.example"},
                                 "https://t.co/b": "https://news.com/b"}))
    rows = [{"tweet_id": "1", "created_at": "2026-11-02", "urls": [], "short_urls": ["https://t.co/a"]},
            {"tweet_id": "2", "created_at": "2026-11-02", "urls": [], "short_urls": ["https://t.co/b"]}]
    bad: list = []
    table = day_table(rows, Expander(cache), SETTINGS, bad=bad)  # from its cache: as a rebuilt day
    assert [r["canonical_urls"] for r in table] == [["https://news.com/a"], ["https://news.com/b"]]
    assert [(b["where"], b["reason"]) for b in bad] == [("tweet 1", "cross_host_redirect")]
    assert bad[0]["detail"] == ("https://t.co/a redirects from https://news.com/a to another site, "
                                "consent.example: the link is kept as https://news.com/a")


def test_a_name_that_rebinds_to_a_private_address_after_the_check_is_never_connected(web, monkeypatch):
    """DNS rebinding: the name looked public when it was checked (the check is made to say
    so here) and resolves to loopback when the connection looks it up. The connection goes
    to an address that was itself checked, or nowhere: nothing reaches the server, where a
    connection resolving the name afresh would have."""
    import socket

    from paramill.twitter import web as web_module

    real_check, system = web_module.is_public, socket.getaddrinfo
    monkeypatch.setattr(web_module, "is_public", lambda host: host == "rebind.test" or real_check(host))
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, *a, **k: system(
        "127.0.0.1" if host == "rebind.test" else host, *a, **k))
    port = web.rsplit(":", 1)[1]
    short, url = f"http://rebind.test:{port}/short/1", f"http://rebind.test:{port}/article"
    assert Expander(timeout=0.5).expand([short]) == {short: short}  # kept as it is
    assert page_card(url, web_session(), timeout=0.5) == {}
    assert http_requests(web) == []
    with pytest.raises(web_module.PrivateAddress, match="rebind.test resolves to 127.0.0.1"):
        web_module.checked_addresses("rebind.test")


def test_a_public_name_is_connected_at_the_address_checked_with_its_own_name(web, monkeypatch):
    """The pinned connection reaches the address the name resolved to, in the order resolved
    (an unreachable first address is skipped), and sends the name, not the address, as Host."""
    from paramill.twitter import web as web_module

    real = web_module.is_public
    monkeypatch.setattr(web_module, "is_public",  # the test's loopback server counts as public
                        lambda host: host in ("news.test", "127.0.0.1", "127.0.0.2") or real(host))
    import socket

    system = socket.getaddrinfo

    def two(host, port, *args, **kwargs):  # 127.0.0.2 first: nothing listens there
        if host == "news.test":
            return system("127.0.0.2", port, *args, **kwargs) + system("127.0.0.1", port, *args, **kwargs)
        return system(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", two)
    assert web_module.checked_addresses("news.test") == ["127.0.0.2", "127.0.0.1"]
    port = web.rsplit(":", 1)[1]
    response = web_session().get(f"http://news.test:{port}/echo-host", timeout=2)
    assert response.text == f"news.test:{port}"
    assert http_requests(web) == ["/echo-host"]


def test_a_name_of_many_addresses_that_never_answer_is_given_up_at_the_deadline(monkeypatch):
    """A link's host may list dozens of addresses that never answer (its owner writes its
    DNS), each waited on for the connect timeout in turn: 30 such took the expander 18 s at a
    0.3 s timeout. The addresses are tried until the URL's deadline, then no more."""
    import socket

    from paramill.twitter import web as web_module

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    held = socket.create_connection(listener.getsockname())  # the queue full: SYNs go unanswered
    monkeypatch.setattr(web_module, "is_public", lambda host: True)
    monkeypatch.setattr(web_module, "checked_addresses", lambda host: ["127.0.0.1"] * 30)
    try:
        given_up(f"http://many.test:{listener.getsockname()[1]}/x")
    finally:
        held.close()
        listener.close()


def test_a_connect_begun_before_the_deadline_ends_at_it(monkeypatch):
    """A connect is waited on for its connect timeout: one begun just before the deadline ran
    that long past it (a 5 s timeout in a 1 s deadline: 5.0 s). It is given no more than the
    deadline leaves."""
    import socket

    import requests

    from paramill.twitter import web as web_module

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    held = socket.create_connection(listener.getsockname())  # the queue full: SYNs go unanswered
    monkeypatch.setattr(web_module, "is_public", lambda host: True)
    monkeypatch.setattr(web_module, "checked_addresses", lambda host: ["127.0.0.1"])
    started = time.monotonic()
    try:
        with pytest.raises(requests.exceptions.ConnectTimeout), web_module.deadline(1.0):
            web_module.web_session().get(f"http://slow.test:{listener.getsockname()[1]}/x", timeout=5)
    finally:
        held.close()
        listener.close()
    assert 0.9 < time.monotonic() - started < 2.5


def test_a_name_whose_lookup_never_answers_is_given_up_at_the_deadline(tmp_path, monkeypatch):
    """A link's host is its owner's to resolve: a name whose servers never answer held a
    worker for the system resolver's timeouts (5 s a lookup here), two lookups a request (the
    check, then the pinned connection's), unbounded by the URL's deadline. The lookup is waited on until the deadline: the link is kept as it
    is and not cached, and the card not read, in about the deadline; with private_urls and on
    the X API's connections too."""
    import socket

    import requests

    from paramill.twitter.api import API_URL, _ApiAdapter
    from paramill.twitter.web import deadline

    system, release = socket.getaddrinfo, threading.Event()

    def silent(host, *args, **kwargs):
        if host == "silent-dns.test":
            release.wait(5)
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return system(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", silent)
    url, cache = "http://silent-dns.test/x", tmp_path / "cache.json"
    try:
        started = time.monotonic()
        assert Expander(cache, timeout=0.3).expand([url]) == {url: url}
        assert Expander(cache, timeout=0.3, private_urls=True).expand([url]) == {url: url}
        assert not cache.exists()  # the web could not say: asked again next time
        assert page_card(url, web_session(), timeout=0.3) == {}
        api = requests.Session()
        api.mount(API_URL + "/", _ApiAdapter("http://silent-dns.test:9", 0.3))
        with pytest.raises(requests.exceptions.ConnectTimeout, match="silent-dns.test"), deadline(0.9):
            api.get(API_URL + "/2/users/me")
        assert time.monotonic() - started < 6  # four calls of a 0.9 s deadline; 30 s before
    finally:
        release.set()


def test_a_requests_name_is_looked_up_once_for_its_check_and_its_connection(web, monkeypatch):
    """The check that a host is public and the connection to the address checked share one
    lookup of the name within a call (they made two)."""
    import socket

    from paramill.twitter import web as web_module

    system, looked = socket.getaddrinfo, []

    def counted(host, *args, **kwargs):
        looked.append(host)
        return system("127.0.0.1" if host == "news.test" else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", counted)
    monkeypatch.setattr(web_module, "_global", lambda address: True)  # loopback counts as public
    url = f"http://news.test:{web.rsplit(':', 1)[1]}/article"
    assert Expander(timeout=2).expand([url]) == {url: url}
    assert http_requests(web) == ["/article"] and looked.count("news.test") == 1


def test_a_pinned_https_connection_checks_the_certificate_of_the_name(monkeypatch):
    """Over TLS the pinned connection (to the checked address) still sends the name as SNI
    and checks the certificate against the name: a certificate for news.test, served on
    loopback, verifies for https://news.test and not for another name of the same address."""
    import socket
    import ssl
    from pathlib import Path

    from paramill.twitter import web as web_module

    tls = Path(__file__).parent / "tls"
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls / "news.test.crt", tls / "news.test.key")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Web)
    server.requested = []
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        real, system = web_module.is_public, socket.getaddrinfo
        names = ("news.test", "other.test")
        monkeypatch.setattr(web_module, "is_public", lambda h: h in names + ("127.0.0.1",) or real(h))
        monkeypatch.setattr(socket, "getaddrinfo", lambda host, *a, **k: system(
            "127.0.0.1" if host in names else host, *a, **k))
        port = server.server_port
        session = web_session()
        got = session.get(f"https://news.test:{port}/echo-host", timeout=2, verify=str(tls / "news.test.crt"))
        assert got.text == f"news.test:{port}"
        with pytest.raises(requests.exceptions.SSLError, match="other.test"):
            session.get(f"https://other.test:{port}/echo-host", timeout=2, verify=str(tls / "news.test.crt"))
        assert server.requested == ["/echo-host"]
    finally:
        server.shutdown()


def test_a_pages_card_is_read_from_its_meta_tags_in_one_pass():
    """twitter:title and twitter:description, named by name or property, before or after
    content, any case, quoted either way or bare; the last a key meets wins. Pages made to
    defeat a scanner (tags never closed, a 200 KB attribute name, quotes never closed) are
    read in one pass: the two regular expressions this replaced took 17.7 s over 21.6 KB of
    unclosed tags and hours over 200 KB (README, bad input)."""
    from paramill.twitter.urls import meta_card

    page = ("""<html><head><META NAME='Twitter:Title' CONTENT="It's &amp; here"/>"""
            "<metadata name='twitter:title' content='not a meta tag'>"
            "<meta content=\"Thousands lose power\" property=\"twitter:description\">"
            "<meta property=og:title content=other><meta name=twitter:description content=bare>"
            "<meta name=\"twitter:title\"></head>")
    assert meta_card(page) == {"title": "It's & here", "description": "bare"}
    assert meta_card('<p>İstanbul</p><meta name="twitter:title" content="Deprem">') == {"title": "Deprem"}
    assert meta_card("<p>no card</p>") == {} and meta_card("<meta name='twitter:title' content='x'") == {}
    for hostile in ('<meta name="twitter:title" ' * 8000, '<meta content="x" ' * 12000 + ">",
                    "<meta " + "a" * 200_000 + ">", "<meta " + 'a="' * 60_000 + ">",
                    "<meta " + "a " * 100_000 + ">", "<meta a=b>" * 20_000):
        assert meta_card(hostile) == {}
    assert meta_card('<meta content="x" ' * 12000 + 'name="twitter:title">') == {"title": "x"}


def test_a_page_card_read_ends_at_its_deadline(web):
    """A page that drips a byte every 0.05 s (each read within the timeout) is read for three
    timeouts, not until it ends (about two minutes); an unknown charset is no card, not an error."""
    started = time.monotonic()
    assert page_card(f"{web}/drip", web_session(private_urls=True), timeout=0.3) == {}
    assert time.monotonic() - started < 2.5


def test_a_server_sending_its_headers_a_byte_at_a_time_is_given_up_at_the_deadline(web, tmp_path):
    """requests' timeout bounds each read: headers dripped a byte every 0.05 s held the
    expander and the card reader for the 100 s the server took (a header may hold 64 KiB: it
    could be hours). Each URL's requests end by three timeouts; the URL is kept as it is and
    not cached, to be asked again, as after a timeout."""
    cache = tmp_path / "cache.json"
    url = f"{web}/drip-headers"
    started = time.monotonic()
    assert Expander(cache, timeout=0.3, private_urls=True).expand([url]) == {url: url}
    assert page_card(url, web_session(private_urls=True), timeout=0.3) == {}
    assert time.monotonic() - started < 4
    assert not cache.exists() or url not in json.loads(cache.read_text())
    assert http_requests(web) == ["/drip-headers"] * 2  # HEAD (no GET after it), the card's GET


def test_through_an_http_proxy_the_deadline_holds_too(monkeypatch):
    """A cluster reaches the web through an HTTP proxy (`http_proxy`), which passes a slow
    server's bytes on as they come: its connections are watched as a direct one's (they were
    requests' own, and a dripping answer held the expander for as long as it took)."""
    asked = []

    class Proxy(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            asked.append(self.path)  # the absolute URL, as a client asks a proxy
            drip(self.wfile, b"HTTP/1.1 301 Moved\r\nX-Pad: " + b"a" * 2000 + b"\r\n\r\n")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    url = given_up_through(monkeypatch, server, f"http://127.0.0.1:{server.server_port}")
    assert asked == [url, url]  # through the proxy: HEAD, then the card's GET


def given_up_through(monkeypatch, server, proxy: str) -> str:
    """A public URL (the public-only session sends it on) asked through ``proxy``, served by
    ``server`` (started here, shut down after), which passes a dripped answer on: the
    expander and the card reader give up at the deadline. Returns the URL."""
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("all_proxy", "ALL_PROXY") if proxy.startswith("socks") else ("http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(name, proxy)
    try:
        return given_up("http://8.8.8.8/story")
    finally:
        server.shutdown()
        server.server_close()


def given_up(url: str) -> str:
    """``url`` kept as it is by the expander and no card read for it, each given up at its
    deadline (a 0.3 s timeout: both within 4 s)."""
    started = time.monotonic()
    assert Expander(timeout=0.3).expand([url]) == {url: url}
    assert page_card(url, web_session(), timeout=0.3) == {}
    assert time.monotonic() - started < 4
    return url


def test_through_a_socks_proxy_the_deadline_holds_too(monkeypatch):
    """A SOCKS proxy (`all_proxy=socks5h://…`; `ssh -D` makes one) is a cluster's way out
    too: its connections were PySocks', unwatched, and an answer it passed on a byte at a
    time (2,000 header bytes at 0.05 s) held the expander and the card reader 100 s each."""
    import ipaddress
    import socketserver

    asked = []

    class Socks5(socketserver.BaseRequestHandler):
        def handle(self):
            read = self.request.makefile("rb")
            methods = read.read(2)[1]
            read.read(methods)
            self.request.sendall(b"\x05\x00")  # no authentication
            _, _, _, kind = read.read(4)
            host = (read.read(read.read(1)[0]).decode() if kind == 3
                    else str(ipaddress.ip_address(read.read(4 if kind == 1 else 16))))
            asked.append((host, int.from_bytes(read.read(2), "big")))
            self.request.sendall(b"\x05\x00\x00\x01" + bytes(6))  # connected
            read.readline()  # the request's first line; the answer drips
            drip(self.request.makefile("wb", buffering=0),
                 b"HTTP/1.1 301 Moved\r\nX-Pad: " + b"a" * 2000 + b"\r\n\r\n")

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Socks5)
    server.daemon_threads = True
    given_up_through(monkeypatch, server, f"socks5h://127.0.0.1:{server.server_address[1]}")
    assert asked == [("8.8.8.8", 80)] * 2  # through the proxy: HEAD, then the card's GET


def test_a_tls_handshake_dripped_a_byte_at_a_time_is_given_up_at_the_deadline():
    """The deadline reaches the TLS handshake (before any header): a server that opens a TLS
    record and sends it a byte at a time."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    port, stop = listener.getsockname()[1], threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                conn.sendall(b"\x16\x03\x03\x40\x00")  # a handshake record of 16 KiB
                while not stop.is_set():
                    conn.sendall(b"\x02")
                    time.sleep(0.05)
            except OSError:
                pass
            finally:
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        url = f"https://127.0.0.1:{port}/x"
        started = time.monotonic()
        assert Expander(timeout=0.3, private_urls=True).expand([url]) == {url: url}
        assert page_card(url, web_session(private_urls=True), timeout=0.3) == {}
        assert time.monotonic() - started < 4
    finally:
        stop.set()
        listener.close()


def test_each_page_card_is_read_once_and_a_page_not_read_now_is_asked_again(web, tmp_path, capsys):
    """twitter.pairs.fetch_cards (on, as the paper dropped tweets equal to the page's card):
    the month's job runs again each day of the month, and read every news page each time."""
    from paramill.twitter.urls import fetch_cards

    cache = tmp_path / "card-cache" / "2026-11.json"
    urls = [f"{web}/article", f"{web}/echo-host", f"{web}/drip", f"{web}/article"]
    card = {"title": "Storm hits Florida", "description": "Thousands lose power"}
    first = fetch_cards(urls, timeout=0.2, private_urls=True, cache=cache)
    assert first == {f"{web}/article": card}
    # the page without a card is an answer; the page that ran past its deadline is not
    assert json.loads(cache.read_text()) == {f"{web}/article": card, f"{web}/echo-host": {}}
    before = len(http_requests(web))
    assert fetch_cards(urls, timeout=0.2, private_urls=True, cache=cache) == first
    assert http_requests(web)[before:] == ["/drip"]
    # a node that reaches no page (a cluster's compute node without the web) gives up after
    # twice the workers' pages instead of waiting out every page's deadline
    dead = [f"http://127.0.0.1:9/{i}" for i in range(40)]
    capsys.readouterr()
    assert fetch_cards(dead, workers=2, timeout=0.2, private_urls=True, cache=cache) == {}
    assert "none of the first 4 pages could be read (no web from this node?); the cards of 40 pages" \
        in capsys.readouterr().err
    assert not set(dead) & set(json.loads(cache.read_text()))
    cache.write_text('{"https://a.example/": "a title"}')  # edited by hand: not a card cache
    with pytest.raises(InputError, match=r"2026-11\.json: cards must be a JSON object"):
        fetch_cards(urls, timeout=0.2, private_urls=True, cache=cache)


def test_two_harvests_expanding_side_by_side_keep_each_others_urls_and_cards(web, tmp_path, monkeypatch):
    """Past days re-run by a changed setting rebuild side by side: each read the URL cache and
    the month's card cache at start and wrote its own view back, losing the other's entries."""
    from paramill.twitter import urls as urls_module
    from paramill.twitter.urls import fetch_cards

    cache, cards = tmp_path / "url-cache.json", tmp_path / "card-cache" / "2026-11.json"
    one, two = (Expander(cache, timeout=0.5, private_urls=True) for _ in range(2))  # both read it empty
    one.expand([f"{web}/short/2"])
    assert two.expand([f"{web}/nohead"]) == {f"{web}/nohead": f"{web}/article"}
    assert json.loads(cache.read_text()) == {f"{web}/short/2": f"{web}/article?utm_source=x",
                                             f"{web}/nohead": f"{web}/article"}
    assert two.cache == json.loads(cache.read_text())  # and it now knows the other's
    fetch_cards([f"{web}/echo-host"], timeout=0.5, private_urls=True, cache=cards)
    read = urls_module._card

    def other_job_writes_meanwhile(url, *args, **kw):  # while this job reads its pages
        cards.write_text(json.dumps({**json.loads(cards.read_text()), "https://b.example/": {}}))
        return read(url, *args, **kw)

    monkeypatch.setattr(urls_module, "_card", other_job_writes_meanwhile)
    fetch_cards([f"{web}/article"], workers=1, timeout=0.5, private_urls=True, cache=cards)
    assert json.loads(cards.read_text()) == {f"{web}/echo-host": {}, "https://b.example/": {},
                                             f"{web}/article": {"title": "Storm hits Florida",
                                                                "description": "Thousands lose power"}}


def test_inside_a_with_block_the_url_cache_is_written_once_when_it_ends(web, tmp_path, monkeypatch):
    """A harvest expands a timeline page at a time, and the cache, one file for every month
    harvested, was read and rewritten whole after each; now once, when the day ends or stops."""
    from paramill.twitter import urls as urls_module

    cache = tmp_path / "url-cache.json"
    writes = []
    merge = urls_module.merge_json
    monkeypatch.setattr(urls_module, "merge_json", lambda *a, **k: writes.append(a[1]) or merge(*a, **k))
    with Expander(cache, timeout=0.5, private_urls=True) as exp:
        exp.expand([f"{web}/short/2"])
        exp.expand([f"{web}/nohead", f"{web}/short/2"])
        assert not cache.exists() and writes == []
    assert writes == [{f"{web}/short/2": f"{web}/article?utm_source=x", f"{web}/nohead": f"{web}/article"}]
    assert json.loads(cache.read_text()) == writes[0]
    with pytest.raises(RuntimeError, match="stopped"):  # a harvest that stops keeps what it found
        with Expander(cache, timeout=0.5, private_urls=True) as exp:
            exp.expand([f"{web}/short/3"])
            raise RuntimeError("stopped")
    assert f"{web}/short/3" in json.loads(cache.read_text()) and len(writes) == 2
    Expander(cache, timeout=0.5, private_urls=True).expand([f"{web}/short/1"])  # outside: at once
    assert f"{web}/short/1" in json.loads(cache.read_text()) and len(writes) == 3


def test_a_url_cache_that_is_not_json_is_an_error_naming_it(tmp_path):
    cache = tmp_path / "cache.json"
    cache.write_text("{half")
    with pytest.raises(ValueError, match=r"cache.json: not a URL cache .*remove it"):
        Expander(cache)
    for shape, found in (('["https://t.co/a"]', "a JSON list"),
                         ('{"https://t.co/a": 5}', "'https://t.co/a' maps to 5")):
        cache.write_text(shape)  # JSON, but not a cache's shape: it failed later, in a lookup
        with pytest.raises(ValueError, match=rf"cache.json: not a URL cache \({found}; .*remove it"):
            Expander(cache)
    cache.write_text('{"https://t.co/a": "https://a.com/1"}')
    assert Expander(cache).expand(["https://t.co/a"]) == {"https://t.co/a": "https://a.com/1"}


def test_the_earlier_one_file_url_cache_answers_first_is_copied_and_never_written(web, tmp_path):
    """The URL cache is a month's file now; the one file of every month kept before is only
    read, for the links it knows, which go into the month's file, so a rebuilt day gets the
    answers its links had when it was harvested (the web's may have changed since)."""
    earlier, cache = tmp_path / "url-cache.json", tmp_path / "url-cache" / "2026-11.json"
    earlier.write_text(json.dumps({f"{web}/short/2": "https://then.example/story"}))
    kept = earlier.read_bytes()
    exp = Expander(cache, timeout=0.5, private_urls=True, earlier=earlier)
    before = len(http_requests(web))
    assert exp.expand([f"{web}/short/2", f"{web}/nohead"]) == {
        f"{web}/short/2": "https://then.example/story", f"{web}/nohead": f"{web}/article"}
    assert "/short/2" not in http_requests(web)[before:]  # the earlier answer, not the web's
    assert json.loads(cache.read_text()) == {f"{web}/short/2": "https://then.example/story",
                                             f"{web}/nohead": f"{web}/article"}
    assert earlier.read_bytes() == kept
    earlier.write_text("{half")  # read once, when a link was missing; not again
    assert exp.expand([f"{web}/nohead"]) == {f"{web}/nohead": f"{web}/article"}
    with pytest.raises(ValueError, match=r"url-cache.json: not a URL cache"):
        Expander(cache, earlier=earlier).expand(["https://t.co/new"])
    # all in the month's file: the earlier one is not read
    assert Expander(cache, earlier=earlier).expand([f"{web}/nohead"]) == {f"{web}/nohead": f"{web}/article"}


def test_the_earlier_url_cache_is_read_for_the_days_it_was_written_on_or_after(tmp_path):
    import os
    from paramill.twitter.urls import earlier_cache

    earlier = tmp_path / "url-cache.json"
    assert earlier_cache(earlier, "2026-11-02") is None and earlier_cache("", "2026-11-02") is None
    earlier.write_text("{}")
    last = time.mktime(time.strptime("2026-11-10 12:00", "%Y-%m-%d %H:%M"))
    os.utime(earlier, (last, last))
    assert earlier_cache(earlier, "2026-11-02") == earlier  # harvested while it was kept
    assert earlier_cache(earlier, "2026-11-11") == earlier  # a day of slack for clocks
    assert earlier_cache(earlier, "2026-11-12") is None  # harvested after: it cannot know


def test_a_days_links_on_shorteners_are_followed_into_its_months_cache(tmp_path):
    """The API's expanded_url of a news account's link is often its own shortener (nyti.ms,
    trib.al): the state tracked the article it leads to, but the day's table kept the short
    link, so the news tweet never met its readers' tweets in the month's pairs."""
    from paramill.twitter.harvest import track_urls
    from paramill.twitter.store import State

    path = tmp_path / "a.jsonl"
    rows = [tweet(1, 9, "x https://t.co/z", "https://bit.ly/x")]
    path.write_text(json.dumps(rows[0]) + "\n")
    earlier, cache = tmp_path / "url-cache.json", tmp_path / "url-cache" / "2026-11.json"
    earlier.write_text(json.dumps({"https://bit.ly/x": "https://n.com/story?utm_source=tw"}))
    harvest_day("2026-11-02", tmp_path / "d.parquet", SETTINGS, source="archive", archive=[str(path)],
                url_cache=cache, earlier_url_cache=earlier)
    assert pl.read_parquet(tmp_path / "d.parquet")["canonical_urls"].to_list() == [["https://n.com/story"]]
    assert json.loads(cache.read_text()) == {"https://bit.ly/x": "https://n.com/story?utm_source=tw"}
    state = State(tmp_path / "state.json")
    track_urls(state, ["https://bit.ly/x"], Expander(cache), SETTINGS, "2026-11-02")
    assert list(state.urls) == ["https://n.com/story"]  # what the day's table holds


@pytest.mark.parametrize("state, where", [
    ('[]', "the file is [], not an object"),
    ('{"users": ["cnn"]}', 'users is ["cnn"], not an object of account: user id'),
    ('{"users": {"cnn": "x1"}}', """users['cnn'] is "x1", not a user id"""),
    ('{"since": {"cnn": null}}', "since['cnn'] is null, not a newest tweet id"),
    ('{"pending": {"cnn": "tok"}}', """pending['cnn'] is "tok", not an object"""),
    ('{"pending": {"cnn": {"next_token": 5}}}', "pending['cnn'].next_token is 5, not a paging token"),
    ('{"urls": 1}', "urls is 1, not an object of"),
    ('{"urls": {"https://a.com/1": {"first_seen": null}}}',
     "urls['https://a.com/1'].first_seen is null, not a date"),
    ('{"urls": {"https://a.com/1": {"first_seen": "2026-02-30"}}}',
     """urls['https://a.com/1'].first_seen is "2026-02-30", not a date"""),
    ('{"urls": {"https://a.com/1": {"since_id": -4}}}', "urls['https://a.com/1'].since_id is -4, not a tweet id"),
])
def test_a_harvest_state_of_the_wrong_shape_is_an_error_naming_it_and_the_entry(tmp_path, state, where):
    """A state that is JSON but not a state's shape (edited by hand, or another file put in
    its place) is an error naming the file and the entry before anything is fetched; it was a
    TypeError or AttributeError somewhere in the harvest, after the API had been called."""
    from paramill.twitter.store import State

    path = tmp_path / "state.json"
    path.write_text(state)
    with pytest.raises(InputError) as caught:
        State(path)
    assert str(caught.value).startswith(f"{path}: not a harvest state: {where}")
    assert "move the file away to start a new state" in str(caught.value)


def test_a_harvest_state_with_any_field_of_another_json_type_loads_or_is_an_error(tmp_path):
    """Every field of a state set to each value of other JSON types: the state loads and the
    harvest's own reading of it (pruning by first-seen date, saving) runs, or it is an error
    naming the file; never a traceback."""
    from paramill.twitter.store import settled
    from paramill.twitter.store import State, prune_urls

    good = {"users": {"newsa": "100"}, "since": {"newsa": "1200"},
            "pending": {"newsb": {"next_token": "t1", "newest": "1150"}},
            "urls": {"https://a.com/1": {"since_id": "1100", "next_token": None, "newest": "1101",
                                         "first_seen": "2026-11-01", "done_run": "2026-11-02"}},
            "latest_day": "2026-11-02", "completed_day": "2026-11-02"}
    path, loaded, refused = tmp_path / "state.json", 0, 0
    for _, _, changed in edited(good):
        path.write_text(json.dumps(changed))
        try:
            state = State(path)
        except InputError as exc:
            assert str(exc).startswith(f"{path}: not a harvest state: "), exc
            refused += 1
            continue
        prune_urls(state, "2026-11-20", 7)
        for day in ("2026-11-01", "2026-11-02", "2026-11-20"):
            settled(state, tmp_path / "raw", day, "2026-11-20")
        state.save()
        loaded += 1
    assert loaded > 30 and refused > 170, (loaded, refused)


def test_a_harvest_state_keeps_what_it_does_not_know_and_reads_numbers_as_ids(tmp_path):
    from paramill.twitter.store import State

    path = tmp_path / "state.json"
    path.write_text(json.dumps({"users": {"cnn": 759251}, "since": {"cnn": "1200"},
                                "urls": {"https://a.com/1": {"since_id": 1100, "first_seen": "2026-11-02",
                                                             "note": "by hand"}}}))
    state = State(path)
    assert state.users == {"cnn": "759251"} and state.since == {"cnn": "1200"}
    assert state.urls["https://a.com/1"] == {"since_id": "1100", "first_seen": "2026-11-02",
                                             "note": "by hand"}
    assert state.pending == {}


# -- tweet objects ---------------------------------------------------------------------

def test_v1_and_v2_objects_and_archive_errors(tmp_path):
    v2 = {"data": [{"id": "5", "author_id": "9", "text": "Hi https://t.co/x", "created_at": "2026-11-02T10:00:00.000Z",
                    "entities": {"urls": [{"url": "https://t.co/x", "expanded_url": "https://a.com/1",
                                           "unwound_url": "https://a.com/1?x=1"}]},
                    "referenced_tweets": [{"type": "retweeted", "id": "4"}]}],
          "includes": {"users": [{"id": "9", "username": "CNN"}]}}
    (row,), rejects = from_object(v2, "timeline")
    assert not rejects
    assert row["author"] == "cnn" and row["urls"] == ["https://a.com/1?x=1"] and row["is_retweet"]
    v1 = {"id_str": "7", "created_at": "Mon Nov 02 10:00:00 +0000 2026", "full_text": "Yo",
          "user": {"screen_name": "Bob", "id_str": "3"}, "entities": {"urls": [{"url": "https://t.co/y"}]}}
    (row,), _ = from_object(v1, "archive")
    assert row["created_at"] == "2026-11-02T10:00:00Z" and row["short_urls"] == ["https://t.co/y"]
    assert not row["is_retweet"] and row["author"] == "bob"
    bad = tmp_path / "bad.jsonl.gz"
    with gzip.open(bad, "wt") as fh:
        fh.write(json.dumps(v1) + "\n\n{broken\n" + json.dumps({"text": "no id"}) + "\n[1]\n"
                 + json.dumps({"data": [{"id": "8", "text": "ok"}, {"text": "no id"}, 5]}) + "\n")
    rejected = []
    rows = list(read_archive([bad], rejected))
    assert [r["tweet_id"] for r in rows] == ["7", "8"]
    assert [(r["record"], r["reason"]) for r in rejected] == [
        (3, "not_json"), (4, "no_id"), (5, "not_a_tweet"), (6, "no_id"), (6, "not_a_tweet")]
    assert all(r["where"] == str(bad) for r in rejected)
    strict = tmp_path / "strict.jsonl"  # archive lines are read strictly, one bad line at a time
    strict.write_bytes(json.dumps(v1).encode() + b"\n{\"text\": \"caf\xe9\"}\n"
                       + json.dumps(v1).replace("Yo", "Hi").encode() + b"\n")
    rejected = []
    assert [r["text"] for r in read_archive([strict], rejected)] == ["Yo", "Hi"]
    assert [(r["record"], r["reason"]) for r in rejected] == [(2, "invalid_utf8")]
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(bad.read_bytes()[:-10])
    with pytest.raises(InputError, match=r"cut.jsonl.gz:\d+: gzip data is truncated"):
        list(read_archive([cut]))
    deep = tmp_path / "deep.jsonl"  # deeper than Python's parser goes: a rejected line
    deep.write_text(json.dumps(v1) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    rejected = []
    assert [r["text"] for r in read_archive([deep], rejected)] == ["Yo"]
    assert [(r["record"], r["reason"], r["detail"]) for r in rejected] == [
        (2, "not_json", "not JSON: nested too deeply to read")]
    binary = tmp_path / "not-json.jsonl"  # not one line is JSON: the wrong file, not bad records
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\nIHDR\n")
    with pytest.raises(InputError, match=r"not-json.jsonl:1: no line could be read as JSON "
                                         r"\(not_json 2, invalid_utf8 1, not_text 1\).*a line \(JSONL\)"):
        list(read_archive([strict, binary], []))


@pytest.mark.parametrize("kind", ["v2 page", "v1.1 tweet"])
def test_any_field_of_the_wrong_json_type_gives_rows_or_rejected_rows_never_an_exception(kind):
    """A page or tweet object is the API's (or an archive's) to get wrong: any field set to any
    other JSON type (:data:`tests.hostile.WRONG_JSON`) gives tweet rows that fit the day's table and rejected rows that fit the
    rejected table, never an exception. (``includes.users`` set to a number or true stopped a
    harvest with a TypeError: a truthy value that is not a list was iterated.)"""
    import pyarrow as pa

    from paramill.twitter.tweets import REJECTED_TWEETS, TWEETS

    good = {
        "v2 page": {"data": [{"id": "5", "author_id": "9", "text": "Hi https://t.co/x", "lang": "en",
                              "created_at": "2026-11-02T10:00:00.000Z",
                              "entities": {"urls": [{"url": "https://t.co/x", "expanded_url": "https://a.com/1",
                                                     "unwound_url": "https://a.com/1?x=1"}]},
                              "referenced_tweets": [{"type": "retweeted", "id": "4"}]}],
                     "includes": {"users": [{"id": "9", "username": "CNN"}]}, "meta": {"result_count": 1}},
        "v1.1 tweet": {"id_str": "7", "created_at": "Mon Nov 02 10:00:00 +0000 2026", "full_text": "Yo",
                       "user": {"screen_name": "Bob", "id_str": "3"},
                       "extended_tweet": {"full_text": "Yo there", "entities": {"urls": [{"url": "https://t.co/y"}]}},
                       "retweeted_status": {"id_str": "6"}, "entities": {"urls": [{"url": "https://t.co/y"}]}},
    }[kind]
    cases = 0
    for path, value, obj in edited(good):
        rows, rejects = from_object(obj, "archive", "a.jsonl", 1)
        pa.Table.from_pylist(rows, schema=TWEETS)  # raises where a value does not fit
        pa.Table.from_pylist(rejects, schema=REJECTED_TWEETS)
        empty_page = path == ("data",) and value == []  # a page of no tweets says nothing
        assert len(rows) + len(rejects) >= 1 - empty_page, (path, value)
        cases += 1
    assert cases > 200


# -- the fake X API (tests/fake_x.py) -----------------------------------------------------

@pytest.fixture
def fake_x():
    with serve() as fake:
        yield fake


def client_for(fake):
    client = tweepy.Client(bearer_token=TOKEN, wait_on_rate_limit=True, return_type=dict)
    return at_address(client, fake.base)


SETTINGS = HarvestSettings(accounts=["newsa", "newsb", "nobody"], max_results=5, max_pages=10,
                           retries=3, backoff=0.0)


def harvest(fake, tmp_path, date="2026-11-02", settings=SETTINGS, **kw):
    """A live harvest of ``date`` as the day's cron runs it: on that day (``today``)."""
    kw.setdefault("today", date)
    kw.setdefault("sleep", lambda s: None)
    out = tmp_path / "days" / f"{date}.parquet"
    stats = harvest_day(date, out, settings, source="live", raw_dir=tmp_path / "raw",
                        state_path=tmp_path / "state.json", url_cache=tmp_path / "urls.json",
                        client=kw.pop("client", None) or client_for(fake), **kw)
    return stats, pl.read_parquet(out)


def expected_ids(fake):
    ids = {t.get("id") for ts in fake.timelines.values() for t in ts} | {t["id"] for t in fake.searchable}
    return ids - {None}  # a tweet without an id is rejected, never in a table


def test_harvest_finds_every_tweet_with_paging_and_survives_faults(fake_x, tmp_path):
    populate(fake_x, stories=3, replies=12)  # 13 tweets a URL: two search pages of 10
    fake_x.faults = [("/2/users/100/tweets", "429"), ("/2/tweets/search/recent", "503"),
                     ("/2/tweets/search/recent", "malformed"), ("/2/users/200/tweets", "deep")]
    stats, table = harvest(fake_x, tmp_path)
    assert set(table["tweet_id"]) == expected_ids(fake_x)
    assert table["tweet_id"].n_unique() == table.height
    assert stats["search_pages"] >= 6 and not fake_x.faults  # every fault was served
    assert any("pagination_token" in q or "next_token" in q for _, q, _ in fake_x.requests)
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["since"] == {"newsa": "1200", "newsb": "1100"}
    assert all(v["next_token"] is None for v in state["urls"].values())
    assert table.filter(pl.col("is_retweet")).height == 3
    # credentials never in the saved JSON, state, table or provenance
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            assert TOKEN.encode() not in data, path
    assert all(h.get("Authorization") == f"Bearer {TOKEN}" for _, _, h in fake_x.requests)


def test_an_api_that_answers_nothing_or_a_byte_at_a_time_is_retried(fake_x, tmp_path):
    """tweepy sets no timeout: a connection that answers nothing (the network dropped it) held
    the harvest until the job's time limit, and one that answers a byte at a time, each within
    a read timeout, as long as it liked. A request waits `api_timeout` at a time and three
    times it in all, then is retried as a failed one."""
    populate(fake_x)
    fake_x.faults = [("/2/users/100/tweets", "silent"), ("/2/tweets/search/recent", "drip")]
    client = at_address(tweepy.Client(bearer_token=TOKEN, return_type=dict), fake_x.base, 0.3)
    started = time.monotonic()
    stats, table = harvest(fake_x, tmp_path, settings=replace(SETTINGS, api_timeout=0.3), client=client)
    assert time.monotonic() - started < 10  # 20 s of silence, 100 s of dripping
    assert set(table["tweet_id"]) == expected_ids(fake_x) and not fake_x.faults


def test_second_run_same_day_is_idempotent_and_next_day_gets_only_new(fake_x, tmp_path):
    populate(fake_x)
    _, first = harvest(fake_x, tmp_path)
    before = len(fake_x.requests)
    _, again = harvest(fake_x, tmp_path)
    assert again.equals(first)
    since_used = [q.get("since_id") for p, q, _ in fake_x.requests[before:] if p.endswith("/tweets")]
    assert since_used and all(s for s in since_used)  # asked only for newer tweets
    populate(fake_x, start=5000, stories=2)
    _, nxt = harvest(fake_x, tmp_path, date="2026-11-03")
    assert set(nxt["tweet_id"]) == expected_ids(fake_x) - set(first["tweet_id"])


def test_a_day_before_the_latest_harvest_is_rebuilt_from_its_pages_never_fetched(fake_x, tmp_path):
    """Re-running an earlier day's live harvest (a changed twitter.harvest setting re-runs
    every day's job) fetched what the API has now: the new tweets were filed under the old
    day and taken from the day they were harvested on. It is rebuilt from its saved pages,
    with no request and no move of the state; a day never harvested is an error."""
    populate(fake_x)
    _, first = harvest(fake_x, tmp_path)
    populate(fake_x, start=5000, stories=2)
    _, second = harvest(fake_x, tmp_path, date="2026-11-03")
    state = (tmp_path / "state.json").read_bytes()
    assert json.loads(state)["latest_day"] == "2026-11-03"
    populate(fake_x, start=9000, stories=1)  # tweets the next harvest is for
    before = len(fake_x.requests)
    stats, again = harvest(fake_x, tmp_path, settings=replace(SETTINGS, retries=9))
    assert len(fake_x.requests) == before and (tmp_path / "state.json").read_bytes() == state
    assert again.equals(first) and stats["rebuilt_after"] == "2026-11-03"
    from paramill.twitter.store import state_lock

    with state_lock(tmp_path / "state.json"):  # today's harvest running: a past day still rebuilds
        assert harvest(fake_x, tmp_path, settings=replace(SETTINGS, url_workers=2))[1].equals(first)
    assert len(fake_x.requests) == before
    _, third = harvest(fake_x, tmp_path, date="2026-11-04")
    assert set(third["tweet_id"]) == expected_ids(fake_x) - set(first["tweet_id"]) - set(second["tweet_id"])
    assert len(fake_x.requests) > before
    with pytest.raises(InputError, match=r"2026-11-01: no live harvest of 2026-11-01 was made, "
                                         r"and 2026-11-01 is before the latest day harvested \(2026-11-04\)"):
        harvest(fake_x, tmp_path, date="2026-11-01")
    assert not (tmp_path / "raw" / "2026-11-01").exists()
    assert not (tmp_path / "days" / "2026-11-01.parquet").exists()
    # a state from before latest_day was kept: the newest folder of saved pages says it
    legacy = json.loads(state)
    del legacy["latest_day"]
    (tmp_path / "state.json").write_text(json.dumps(legacy))
    before = len(fake_x.requests)
    assert harvest(fake_x, tmp_path, date="2026-11-03")[1].equals(second)
    assert len(fake_x.requests) == before


def test_the_latest_day_harvested_to_its_end_is_rebuilt_once_it_has_passed(fake_x, tmp_path):
    """The latest day's job re-run days later (a changed setting re-runs every day's) fetched
    everything new since and filed it under that day, taken from the day that harvests it.
    Once its harvest ran to its end and the day is past (UTC) it is rebuilt from its pages; on
    the day itself it fetches what is new, and a harvest that stopped part way continues."""
    populate(fake_x)
    _, first = harvest(fake_x, tmp_path)
    populate(fake_x, start=5000, stories=2)
    _, same_day = harvest(fake_x, tmp_path)  # run again on the day: what is new is fetched
    assert set(same_day["tweet_id"]) == expected_ids(fake_x) > set(first["tweet_id"])
    state = (tmp_path / "state.json").read_bytes()
    assert json.loads(state)["completed_day"] == "2026-11-02"
    populate(fake_x, start=9000, stories=1)
    before = len(fake_x.requests)
    stats, later = harvest(fake_x, tmp_path, settings=replace(SETTINGS, max_pages=9), today="2026-11-09")
    assert len(fake_x.requests) == before and (tmp_path / "state.json").read_bytes() == state
    assert later.equals(same_day) and stats["rebuilt_after"] == "2026-11-02"
    # a harvest stopped part way (an account's timeline failing past its retries) is not complete
    fake_x.faults = [("/2/users/200/tweets", "500")] * (SETTINGS.retries + 1)
    with pytest.raises(HarvestError):
        harvest(fake_x, tmp_path, date="2026-11-09")
    assert json.loads((tmp_path / "state.json").read_text())["completed_day"] == "2026-11-02"
    _, ninth = harvest(fake_x, tmp_path, date="2026-11-09", today="2026-11-10")  # so it continues
    # a day to come (a mistyped date) would file today's tweets under it and settle today
    with pytest.raises(ValueError, match=r"2026-11-11 is after today \(2026-11-10, UTC\)"):
        harvest(fake_x, tmp_path, date="2026-11-11", today="2026-11-10")
    assert not (tmp_path / "raw" / "2026-11-11").exists()
    assert set(ninth["tweet_id"]) == expected_ids(fake_x) - set(same_day["tweet_id"])
    assert json.loads((tmp_path / "state.json").read_text())["completed_day"] == "2026-11-09"


def test_how_a_harvest_is_launched_changes_nothing_it_writes(fake_x, tmp_path, monkeypatch):
    """twitter.harvest's launch-only keys (x-launch: the rule passes them outside its params,
    so changing one re-runs no day): the variables the credentials are read from, the address
    the API is reached at, how calls are retried and waited on, how many URL expansions run at
    once. A harvest of the same API with each value writes the same table."""
    from paramill import config
    from paramill.twitter.api import make_client

    assert set(config.marked("launch", "twitter", "harvest")) == {
        "bearer_token_env", "consumer_key_env", "consumer_secret_env", "access_token_env",
        "access_token_secret_env", "retries", "backoff", "backoff_max", "url_workers", "api_url",
        "api_timeout",
        # and what steers the next fetch alone (test_what_steers_a_fetch_never_changes_a_settled_day)
        "accounts", "max_results", "max_pages", "search_days", "search_languages", "max_query_chars"}
    populate(fake_x, stories=3, replies=12)
    faults = [("/2/users/100/tweets", "429"), ("/2/tweets/search/recent", "503")]
    other = replace(SETTINGS, retries=9, backoff=0.5, backoff_max=10.0, url_workers=1, api_timeout=7.0,
                    bearer_token_env="OTHER_TOKEN", api_url=fake_x.base.replace("127.0.0.1", "localhost"))
    monkeypatch.delenv("X_BEARER_TOKEN", raising=False)
    monkeypatch.setenv("OTHER_TOKEN", TOKEN)  # the same credentials from another variable
    tables = []
    for name, settings, client in (("a", SETTINGS, None), ("b", other, make_client(other))):
        (tmp_path / name).mkdir()
        fake_x.faults = list(faults)
        tables.append(harvest(fake_x, tmp_path / name, settings=settings, client=client)[1])
        assert not fake_x.faults
    assert tables[1].equals(tables[0]) and tables[0].height > 20
    assert fake_x.requests[-1][2]["Host"].startswith("localhost:")  # b reached it by the other name


def test_what_steers_a_fetch_never_changes_a_settled_day(fake_x, tmp_path):
    """accounts, max_results, max_pages and search_days are launch-only: they steer what a live
    harvest asks for, and a day harvested is settled (rebuilt from its pages, never fetched
    again), so a day's table never depends on them and changing one re-runs no day's job."""
    populate(fake_x, stories=3, replies=12)
    _, first = harvest(fake_x, tmp_path)
    populate(fake_x, start=5000, stories=1)
    harvest(fake_x, tmp_path, date="2026-11-03")
    before = len(fake_x.requests)
    for steer in ({"accounts": ["newsb"]}, {"max_results": 100, "max_pages": 1}, {"search_days": 0}):
        _, again = harvest(fake_x, tmp_path, settings=replace(SETTINGS, **steer), today="2026-11-04")
        assert again.equals(first), steer
    assert len(fake_x.requests) == before


def test_urls_are_searched_for_search_days_then_dropped(fake_x, tmp_path):
    populate(fake_x, stories=2)

    def searched(since):
        return {unquote(q["query"][0]) for p, q, _ in fake_x.requests[since:] if p == "/2/tweets/search/recent"}

    harvest(fake_x, tmp_path, date="2026-11-02")
    first = set(json.loads((tmp_path / "state.json").read_text())["urls"])
    assert len(first) == 2
    before = len(fake_x.requests)
    stats, _ = harvest(fake_x, tmp_path, date="2026-11-09")  # 7 days on: still searched
    assert searched(before) == {f'url:"{u[8:]}" lang:en' for u in first} and stats["urls_dropped"] == 0
    populate(fake_x, start=5000, stories=1)
    before = len(fake_x.requests)
    stats, table = harvest(fake_x, tmp_path, date="2026-11-10")  # 8 days: dropped
    state = json.loads((tmp_path / "state.json").read_text())["urls"]
    assert stats["urls_dropped"] == 2 and not set(state) & first and len(state) == 1
    assert searched(before) == {f'url:"{u[8:]}" lang:en' for u in state}
    assert all(e["first_seen"] == "2026-11-10" for e in state.values())
    assert table.height == 1 + 4 + 1  # the new story, its 4 replies and its retweet
    with pytest.raises(ValueError, match="not a date"):
        harvest(fake_x, tmp_path, date="10/11/2026")


def test_a_www_sites_tweets_are_found_by_the_search(fake_x, tmp_path):
    """X matches url: on the tokens of a tweet's URLs; the search asked for the canonical
    form (https, no www.), which is no run of the tokens of http://www.… or https://www.…:
    the tweets of every www. site went unfound. It asks for host and path now."""
    url = "http://www.news.example.com/storm-story?utm_source=tw"
    fake_x.timelines["100"].append(tweet(2000, "100", f"Big storm story happens today in the city {url}", url))
    fake_x.searchable += [tweet(2000 + r, "300", f"people say the storm story {r} is happening {url}", url)
                          for r in (1, 2)]
    _, table = harvest(fake_x, tmp_path)
    assert set(table["tweet_id"]) == {"2000", "2001", "2002"}
    assert fake_x.searched == ['url:"news.example.com/storm-story" lang:en']


def test_an_english_corpus_searches_and_pairs_english_tweets(fake_x, tmp_path):
    """Lan et al. built an English corpus (their search asked for lang=en); the search asked
    for every language, so another language's tweets spent the monthly post cap and were
    paired with the English news tweet."""
    from paramill.twitter.api import search_query
    from paramill.twitter.url_pairs import PairSettings, build_pairs

    assert search_query("https://a.com/1", ["en"]) == 'url:"a.com/1" lang:en'
    assert search_query("https://a.com/1?id=2", ["en", "de"]) == 'url:"a.com/1?id=2" (lang:en OR lang:de)'
    assert search_query("https://a.com/1", []) == 'url:"a.com/1"'
    populate(fake_x, stories=1, replies=4)
    fake_x.searchable[1]["lang"] = "es"  # a reply in Spanish: not asked for
    _, table = harvest(fake_x, tmp_path)
    assert fake_x.searchable[1]["id"] not in set(table["tweet_id"]) and table.height == 1 + 3 + 1
    _, every = harvest(fake_x, tmp_path / "any", settings=replace(SETTINGS, search_languages=[]))
    assert fake_x.searchable[1]["id"] in set(every["tweet_id"])
    # pairs: the month's table may hold them (an archive, or pages asked for any language)
    pairs, reasons = build_pairs(every, ["newsa", "newsb"], PairSettings(min_tokens=1))
    assert fake_x.searchable[1]["id"] not in {p["tweet_b"] for p in pairs}
    assert reasons["other_language"] == 1
    unknown = every.with_columns(pl.lit(None, pl.String).alias("lang"))  # a table that names none: kept
    assert len(build_pairs(unknown, ["newsa", "newsb"], PairSettings(min_tokens=1))[0]) == len(pairs) + 1
    assert len(build_pairs(every, ["newsa", "newsb"], PairSettings(min_tokens=1, languages=()))[0]) == len(pairs) + 1


def test_a_killed_harvest_rerun_loses_nothing_and_duplicates_nothing(fake_x, tmp_path):
    populate(fake_x, stories=3, replies=7)
    # the job is killed in the middle of the URL searches
    calls = {"n": 0}
    original = tweepy.Client.search_recent_tweets

    def dying(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # killed
        return original(self, *a, **k)

    tweepy.Client.search_recent_tweets = dying
    try:
        with pytest.raises(KeyboardInterrupt):
            harvest(fake_x, tmp_path)
    finally:
        tweepy.Client.search_recent_tweets = original
    assert not (tmp_path / "days" / "2026-11-02.parquet").exists()  # nothing half-written
    _, table = harvest(fake_x, tmp_path)
    assert set(table["tweet_id"]) == expected_ids(fake_x)
    assert table["tweet_id"].n_unique() == table.height


def test_debug_logging_never_prints_the_credentials(fake_x, tmp_path, monkeypatch, caplog):
    import logging

    from paramill.twitter.api import make_client

    populate(fake_x, stories=1)
    monkeypatch.setenv("X_BEARER_TOKEN", TOKEN)
    client = make_client(SETTINGS)
    at_address(client, fake_x.base)
    logging.getLogger("tweepy.client").setLevel(logging.DEBUG)  # a user's DEBUG config
    try:
        with caplog.at_level(logging.DEBUG, logger="tweepy.client"):
            client.get_user(username="newsa")
    finally:
        logging.getLogger("tweepy.client").setLevel(logging.NOTSET)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "Making API request" in text and "Authorization': '[redacted]" in text
    assert TOKEN not in text and fake_x.requests[-1][2]["Authorization"] == f"Bearer {TOKEN}"


def test_free_tier_refusal_is_one_clear_message(fake_x, tmp_path):
    populate(fake_x)
    fake_x.faults = [("/2/users/by/username/", "free")]
    with pytest.raises(HarvestError, match="Basic access tier or higher.*free") as info:
        harvest(fake_x, tmp_path)
    assert "attached to a Project" in str(info.value) and TOKEN not in str(info.value)


def test_the_monthly_post_cap_stops_the_harvest_at_once_and_the_next_goes_on(fake_x, tmp_path):
    """A 429 UsageCapExceeded is not a rate limit: its reset header is 15 minutes ahead, and
    the harvest waited up to backoff_max five times (about 75 minutes) before failing with
    'rate limited'. It stops at the first, saying so; what was saved is kept."""
    populate(fake_x, stories=2)
    fake_x.faults = [("/2/tweets/search/recent", "usage-cap")]
    waits = []
    with pytest.raises(HarvestError, match=r"monthly post cap is reached \(429: Usage cap exceeded: "
                                           r"Monthly product cap\)\. Nothing more can be read") as info:
        harvest(fake_x, tmp_path, sleep=waits.append)
    assert waits == [] and TOKEN not in str(info.value)
    assert sum(p == "/2/tweets/search/recent" for p, _, _ in fake_x.requests) == 1  # no retry
    assert list((tmp_path / "raw" / "2026-11-02").iterdir())  # the timelines' pages are kept
    _, table = harvest(fake_x, tmp_path, date="2026-11-02")  # after the reset: it goes on
    assert set(table["tweet_id"]) == expected_ids(fake_x)


def test_a_rate_limit_window_past_the_longest_wait_is_named_when_the_harvest_gives_up(fake_x, tmp_path):
    """A cron log said 'rate limited (429)' after the retries, not that the window would have
    ended an hour later (a 24-hour window, or a limit shared with another job)."""
    populate(fake_x)
    fake_x.faults = [("/2/users/by/username/", "429-hour")] * 4
    waits = []
    with pytest.raises(HarvestError, match=r"get_user failed after 3 retries: rate limited \(429\); its "
                                           r"window ends at \d{4}-\d\d-\d\d \d\d:\d\d UTC, (59|60) min "
                                           r"from now, past backoff_max \(900 s\)"):
        harvest(fake_x, tmp_path, sleep=waits.append)
    assert waits == [900.0] * 3  # each wait at most backoff_max


def test_missing_credentials_and_persistent_server_errors(fake_x, tmp_path, monkeypatch):
    from paramill.twitter.api import make_client

    monkeypatch.delenv("X_BEARER_TOKEN", raising=False)
    with pytest.raises(HarvestError, match="X_BEARER_TOKEN"):
        make_client(HarvestSettings())
    monkeypatch.setenv("X_BEARER_TOKEN", TOKEN)
    assert make_client(HarvestSettings()).bearer_token == TOKEN
    populate(fake_x)
    fake_x.faults = [("/2/users/by/username/", "503")] * 4
    with pytest.raises(HarvestError, match="after 3 retries"):
        harvest(fake_x, tmp_path)


def test_archive_replay_keeps_the_day(tmp_path):
    path = tmp_path / "a.jsonl"
    rows = [tweet(1, 9, "x https://a.com/1", "https://a.com/1"), tweet(2, 9, "y")]
    rows[1]["created_at"] = "2026-11-03T01:00:00Z"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "d.parquet"
    stats = harvest_day("2026-11-02", out, SETTINGS, source="archive", archive=[str(path)])
    table = pl.read_parquet(out)
    assert stats["tweets"] == 1 and table["canonical_urls"].to_list() == [["https://a.com/1"]]


# -- pairs ---------------------------------------------------------------------------------

def test_pairs_drop_retweets_copies_titles_and_short_tweets():
    url = "https://n.com/1"
    t = pl.DataFrame([
        {"tweet_id": "1", "author": "news", "text": "Storm knocks out power to thousands of homes in Florida", "canonical_urls": [url], "is_retweet": False},
        {"tweet_id": "2", "author": "ann", "text": "Thousands of Florida homes lost electricity after the storm hit", "canonical_urls": [url], "is_retweet": False},
        {"tweet_id": "3", "author": "bob", "text": "RT @news: Storm knocks out power", "canonical_urls": [url], "is_retweet": True},
        {"tweet_id": "4", "author": "cid", "text": "Storm knocks out power to thousands of homes in Florida!!! via @news", "canonical_urls": [url], "is_retweet": False},
        {"tweet_id": "5", "author": "dan", "text": "so sad", "canonical_urls": [url], "is_retweet": False},
        {"tweet_id": "6", "author": "eve", "text": "Hurricane season brings a record storm to the Florida coast", "canonical_urls": [url], "is_retweet": False},
        {"tweet_id": "7", "author": "fay", "text": "Another tweet on another link entirely here", "canonical_urls": ["https://n.com/2"], "is_retweet": False},
        # in Czech, and no language code to say so (an archive's tweets have none)
        {"tweet_id": "8", "author": "gus", "text": "Bouře na Floridě přerušila dodávky elektřiny tisícům domácností", "canonical_urls": [url], "is_retweet": False},
    ])
    cards = {url: {"title": "Hurricane season brings a record storm to the Florida coast"}}
    pairs, reasons = build_pairs(t, ["news"], PairSettings(), cards)
    assert [(p["tweet_a"], p["tweet_b"]) for p in pairs] == [("1", "2")]
    assert reasons == {"earlier_version": 0, "auto_retweet": 1, "manual_retweet": 1, "too_short": 1,
                       "page_title": 1, "not_english": 1, "pairs": 1}
    pairs, reasons = build_pairs(t, ["news"], PairSettings(min_english=0), cards)
    assert ("1", "8") in [(p["tweet_a"], p["tweet_b"]) for p in pairs] and "not_english" not in reasons
    assert reject_reason("A b c, d!", "a b c d", None, 1) == "manual_retweet"  # punctuation only


# -- identification ---------------------------------------------------------------------

def test_overlap_features_by_hand():
    p, r, f = identify.prf("a b c d".split(), "a b x".split(), 1)
    assert (p, r) == (2 / 4, 2 / 3) and f == pytest.approx(2 * p * r / (p + r))
    assert identify.prf(["a"], ["a"], 2) == (0.0, 0.0, 0.0)
    feats = identify.baseline_features("Running dogs run", "The dog runs")
    assert len(feats) == 18 == len(identify.BASELINE)
    assert feats[0] == 0.0  # no shared token
    assert feats[9] > 0.0  # stems: run, dog shared
    assert identify.features([("a b", "a b")], True).shape == (1, 22)


def test_readers(tmp_path):
    raw = tmp_path / "raw.tsv"
    raw.write_text("a b\tc d\t(5,6)\thttp://u\ne f\tg h\t(3,6)\thttp://u\ni j\tk l\t(1,6)\thttp://u\n")
    pairs, labels, dropped = identify.read_labelled(raw, "url_raw")
    assert labels == [1, 0] and dropped == 1 and pairs[0] == ("a b", "c d")
    pit = tmp_path / "pit.tsv"
    pit.write_text("1\tT\ts1\ts2\t(3, 2)\tx\ty\n1\tT\ts3\ts4\t(2, 3)\tx\ty\n1\tT\ts5\ts6\t(0, 5)\tx\ty\n")
    assert identify.read_labelled(pit, "pit2015")[1:] == ([1, 0], 1)
    toks = tmp_path / "toks"
    toks.mkdir()
    for name, text in (("a.toks", "x\ny\n"), ("b.toks", "x\nz\n"), ("sim.txt", "1\n0\n")):
        (toks / name).write_text(text)
    assert identify.read_labelled(toks, "toks")[1] == [1, 0]
    raw.write_text("a\tb\tfive\n")
    with pytest.raises(InputError, match="raw.tsv:1"):
        identify.read_labelled(raw, "url_raw")
    # the boundaries: url_raw n = 2 no, 4 yes; PIT pos = 1 no, 3 yes
    raw.write_text("a\tb\t(4,6)\tu\nc\td\t(2,6)\tu\n")
    assert identify.read_labelled(raw, "url_raw")[1:] == ([1, 0], 0)
    pit.write_text("1\tT\ts1\ts2\t(1, 4)\tx\ty\n1\tT\ts3\n")
    with pytest.raises(InputError, match="pit.tsv:2: expected PIT-2015 fields"):
        identify.read_labelled(pit, "pit2015")
    pit.write_text("1\tT\ts1\ts2\t(1, 4)\tx\ty\n")
    assert identify.read_labelled(pit, "pit2015")[1:] == ([0], 0)


def test_max_f1_and_lr_learn_a_toy_set(tmp_path):
    result = identify.max_f1([0, 0, 1, 1], np.array([0.1, 0.4, 0.35, 0.8]))
    assert result["f1"] == pytest.approx(0.8) and result["recall"] == 1.0
    pos = [(f"the storm hits town number {i} today", f"today the storm hit town number {i}") for i in range(30)]
    neg = [(f"the storm hits town number {i} today", f"my cat likes fish {i} very much") for i in range(30)]
    settings = identify.IdentifySettings()
    cv = identify.cross_validate(pos + neg, [1] * 30 + [0] * 30, False, settings)
    assert cv["f1"] == 1.0
    from paramill.twitter.identify import train_identifier

    data = tmp_path / "l.tsv"
    data.write_text("".join(f"{a}\t{b}\t({5 if k < 30 else 0},6)\tu\n" for k, (a, b) in enumerate(pos + neg)))
    result = train_identifier([identify.LabelledData(path=str(data), format="twitter-url")], [],
                              tmp_path / "m.npz",
                              tmp_path / "r.json", settings)
    assert result["evaluations"][0]["lr"]["f1"] == 1.0
    model = identify.Identifier.load(tmp_path / "m.npz")
    p = model.score([pos[0], neg[0]])
    assert p[0] > 0.5 > p[1]


def test_a_harvest_reads_its_news_pages_cards_into_the_months_cache(fake_x, tmp_path, monkeypatch):
    """The harvest reaches the web (a month's job may run on a node that does not): the cards
    of the day's news pages are read there, into the month's cache, when fetch_cards is on."""
    from paramill.twitter import urls

    populate(fake_x, stories=2, replies=3)
    asked = []

    def fetch(found, **kw):
        asked.append((sorted(set(found)), kw))
        return {u: {"title": "t"} for u in found if u.endswith("-0")}

    monkeypatch.setattr(urls, "fetch_cards", fetch)
    stats, _ = harvest(fake_x, tmp_path, settings=replace(SETTINGS, url_timeout=2.0, private_urls=True),
                       card_cache=tmp_path / "card-cache" / "2026-11.json")
    assert asked == [(["https://news.example.com/story-1000-0", "https://news.example.com/story-1000-1"],
                      {"workers": SETTINGS.url_workers, "timeout": 2.0, "private_urls": True,
                       "cache": tmp_path / "card-cache" / "2026-11.json"})]  # news tweets' pages only
    assert stats["news_pages"] == 2 and stats["page_cards"] == 1
    harvest(fake_x, tmp_path / "off")  # fetch_cards off: no cache given, no page read
    assert len(asked) == 1


def _identifier(tmp_path):
    """A logistic-regression identifier fitted on 40 made-up labelled pairs: ``m.npz``."""
    from paramill.twitter.identify import train_identifier

    pos = [(f"the storm hits town number {i} today", f"today the storm hit town number {i}") for i in range(20)]
    neg = [(f"the storm hits town number {i} today", f"my cat likes fish {i} very much") for i in range(20)]
    data = tmp_path / "l.tsv"
    data.write_text("".join(f"{a}\t{b}\t({5 if k < 20 else 0},6)\tu\n" for k, (a, b) in enumerate(pos + neg)))
    train_identifier([identify.LabelledData(path=str(data), format="twitter-url")], [], tmp_path / "m.npz",
                     tmp_path / "r.json", identify.IdentifySettings(model="lr"))
    return tmp_path / "m.npz"


def test_a_news_tweet_of_a_months_last_days_meets_the_tweets_of_the_next_months_days(tmp_path, monkeypatch):
    """A URL's tweets are filed under the days the harvest found them, up to 7 after its news
    tweet's: a news tweet of 31 October met no tweet found on 1 November (each month paired
    its own days). The days before a month (twitter.pairs.context_days) pair with its days,
    never with each other, so each pair is made once, in the month of its later tweet."""
    from paramill.twitter.month import score_month
    from paramill.twitter.url_pairs import PairSettings

    url = "https://n.example.com/storm"
    said = {"1": ("newsa", "2026-10-31", "Storm knocks out power to thousands of homes across Florida"),
            "2": ("ann", "2026-10-31", "Thousands of Florida homes lost their electricity after the storm"),
            "3": ("bob", "2026-11-01", "The storm left thousands of homes in Florida without any power"),
            "4": ("cid", "2026-11-01", "Hurricane season brings a record storm to the Florida coast again")}
    archive = tmp_path / "a.jsonl"
    rows = []
    for tid, (author, date, text) in said.items():
        rows.append({**tweet(tid, 50 + int(tid), f"{text} https://t.co/z", url),
                     "created_at": f"{date}T10:00:00Z", "author": {"username": author}})
    archive.write_text("".join(json.dumps(r) + "\n" for r in rows))
    days = {d: tmp_path / "days" / f"{d}.parquet" for d in ("2026-10-31", "2026-11-01")}
    for date, out in days.items():
        harvest_day(date, out, SETTINGS, source="archive", archive=[str(archive)])
    model = _identifier(tmp_path)
    settings = PairSettings(fetch_cards=False, min_tokens=3)

    def month(name, own, context=()):
        out = {k: tmp_path / name / f"month.{k}" for k in ("pairs", "tsv", "json")}
        stats = score_month(own, model, ["newsa"], out["pairs"], out["tsv"], out["json"], name,
                            settings, context=list(context))
        return stats, {(r["tweet_a"], r["tweet_b"]) for r in pl.read_parquet(out["pairs"]).to_dicts()}

    october, pairs_10 = month("2026-10", [days["2026-10-31"]])
    november, pairs_11 = month("2026-11", [days["2026-11-01"]], [days["2026-10-31"]])
    assert pairs_10 == {("1", "2")} and pairs_11 == {("1", "3"), ("1", "4")}
    assert (november["tweets"], november["days_before"], november["tweets_before"], november["pairs"]) == (2, 1, 2, 2)
    # a tweet filed under a day of each month is the earlier month's: no pair made twice
    again = tmp_path / "again" / "2026-11-02.parquet"
    harvest_day("2026-11-02", again, SETTINGS, source="archive", archive=[str(archive)])
    assert pl.read_parquet(again).height == 0
    archive.write_text(archive.read_text().replace("2026-10-31T", "2026-11-02T").replace("2026-11-01T", "2026-11-02T"))
    harvest_day("2026-11-02", again, SETTINGS, source="archive", archive=[str(archive)])
    twice, pairs_twice = month("2026-11", [days["2026-11-01"], again], [days["2026-10-31"]])
    assert pairs_twice == pairs_11 and twice["tweets"] == 2
    _, alone = month("2026-11", [days["2026-11-01"]])  # months apart (context_days: 0)
    assert alone == set()
    # the news page's card, read by its day's harvest into October's cache: read from there
    from paramill.twitter import urls
    from paramill.twitter.month import score_month as month_of

    asked = []
    monkeypatch.setattr(urls, "fetch_cards", lambda found, **kw: asked.append(list(found)) or {})
    october_cards = tmp_path / "card-cache" / "2026-10.json"
    october_cards.parent.mkdir()
    october_cards.write_text(json.dumps({url: {"title": said["4"][2]}}))
    out = {k: tmp_path / "cards" / f"month.{k}" for k in ("pairs", "tsv", "json")}
    stats = month_of([days["2026-11-01"]], model, ["newsa"], out["pairs"], out["tsv"], out["json"],
                     "2026-11", PairSettings(min_tokens=3), context=[days["2026-10-31"]],
                     card_cache=tmp_path / "card-cache" / "2026-11.json", context_card_cache=october_cards)
    assert stats["filtered"]["page_title"] == 1 and stats["pairs"] == 1 and asked == [[]]
    # only the days before the month, within context_days, and none of its own
    with pytest.raises(InputError, match="2026-11-01.parquet: is the day table of 2026-11-01, "
                                         "not of the 7 days before 2026-11"):
        month("2026-11", [days["2026-11-01"]], [days["2026-11-01"]])
    (tmp_path / "other.parquet").symlink_to(days["2026-10-31"])  # a name that says no day
    with pytest.raises(InputError, match="other.parquet: is one of the month's days and a day before it"):
        month("2026-10", [days["2026-10-31"]], [tmp_path / "other.parquet"])


def test_an_edited_post_found_before_and_after_its_edit_is_paired_once(fake_x, tmp_path):
    """X gives each edit of a post a new id, and a search (or a timeline) may find the post
    before and after its edit: both versions were paired, the same pair twice or twice near
    it. Of a post's versions only the latest is paired; a day table written before the
    versions were read pairs as it did."""
    import pyarrow.parquet as pq

    from paramill.twitter.month import score_month
    from paramill.twitter.url_pairs import latest_versions

    url = "https://news.example.com/storm"
    news = tweet(5000, "100", f"Storm knocks out power to thousands of homes in Florida {url}", url)
    reader = tweet(5001, "300", f"Thousands of Florida homes lost electricty after the storm {url}", url)
    news_edit = later_version(news, 5003, f"Storm knocks out power to many thousands of homes in Florida {url}")
    reader_edit = later_version(reader, 5004, f"Thousands of Florida homes lost electricity after the storm {url}")
    fake_x.timelines["100"] += [news, news_edit]
    fake_x.searchable += [reader, reader_edit,
                          tweet(5002, "400", f"Hurricane brings a record storm to the Florida coast {url}", url)]
    _, day = harvest(fake_x, tmp_path)
    assert dict(zip(day["tweet_id"], day["first_version"])) == {
        "5000": None, "5001": None, "5002": None, "5003": "5000", "5004": "5001"}
    model = _identifier(tmp_path)

    def month(table):
        out = {k: tmp_path / f"month.{k}" for k in ("pairs", "tsv", "json")}
        stats = score_month([table], model, ["newsa"], out["pairs"], out["tsv"], out["json"], "2026-11",
                            PairSettings(fetch_cards=False, min_tokens=3))
        return stats, {(r["tweet_a"], r["tweet_b"]) for r in pl.read_parquet(out["pairs"]).to_dicts()}

    stats, pairs = month(tmp_path / "days" / "2026-11-02.parquet")
    assert pairs == {("5003", "5004"), ("5003", "5002")}
    assert stats["filtered"]["earlier_version"] == 2 and stats["tweets"] == 5
    old = tmp_path / "old" / "2026-11-02.parquet"  # harvested before first_version was read
    old.parent.mkdir()
    pq.write_table(pq.read_table(tmp_path / "days" / "2026-11-02.parquet").drop_columns("first_version"), old)
    stats, pairs = month(old)
    assert len(pairs) == 6 and stats["filtered"]["earlier_version"] == 0
    # ids compared as numbers; another author's tweet that names a first version is none of its
    kept, earlier = latest_versions(pl.DataFrame({"tweet_id": ["5", "6", "10", "9"], "author": ["a", "b", "a", "a"],
                                                  "first_version": [None, "5", "5", None]}))
    assert earlier == {"5": "10"} and kept["tweet_id"].to_list() == ["6", "10", "9"]
    # a news tweet of a month's last day, edited after its day's harvest: the month before
    # paired its first version with that day's reader (a context tweet here), so its latest
    # version meets only the month's own tweets (before: the same pair again, near it)
    url = "https://n.com/edit"

    def row(tid, author, text, first=None):
        return {"tweet_id": tid, "author": author, "text": f"{text} {url}", "canonical_urls": [url],
                "is_retweet": False, "lang": "en", "first_version": first}

    month = pl.DataFrame([row("6000", "news", "Storm knocks out power to thousands of homes in Florida"),
                          row("6002", "ann", "Thousands of Florida homes lost electricity after the storm"),
                          row("6003", "news", "Storm knocks out power to many thousands of homes in Florida", "6000"),
                          row("6004", "bob", "The storm left thousands of homes in Florida without any power")])
    pairs, reasons = build_pairs(month, ["news"], PairSettings(fetch_cards=False, min_tokens=3),
                                 context=frozenset({"6000", "6002"}))
    assert [(p["tweet_a"], p["tweet_b"]) for p in pairs] == [("6003", "6004")]
    assert reasons["earlier_version"] == 0  # the days before counted theirs
    # the version of an archive's v1.1 objects (and the enterprise API's), and a history
    # that is not one
    v1 = {"id_str": "8", "text": "x", "user": {"screen_name": "a"},
          "edit_history": {"initial_tweet_id": "7", "edit_tweet_ids": ["7", "8"]}}
    assert from_object(v1, "archive")[0][0]["first_version"] == "7"
    assert from_object({**v1, "id_str": "7"}, "archive")[0][0]["first_version"] is None
    _, bad = from_object({"id": "9", "text": "x", "edit_history_tweet_ids": "9"}, "archive")
    assert bad[0]["reason"] == "bad_field" and "edit_history_tweet_ids is a str" in bad[0]["detail"]


def test_a_month_reads_its_news_pages_cards_through_its_cache_and_drops_tweets_equal_to_one(
        fake_x, tmp_path, monkeypatch):
    from paramill.twitter import urls
    from paramill.twitter.month import score_month
    from paramill.twitter.url_pairs import PairSettings

    populate(fake_x, stories=2, replies=3)
    _, day = harvest(fake_x, tmp_path)
    _identifier(tmp_path)
    asked = []

    def fetch(found, cache=None, **access):  # story 0's page has the text of one reply as its title
        asked.append((sorted(found), cache, access))
        return {u: {"title": "people say story 0 variant 1 is happening now"} for u in found if "-0" in u}

    monkeypatch.setattr(urls, "fetch_cards", fetch)
    out = {k: tmp_path / f"month.{k}" for k in ("pairs", "tsv", "json")}
    stats = score_month([tmp_path / "days" / "2026-11-02.parquet"], tmp_path / "m.npz", ["newsa", "newsb"],
                        out["pairs"], out["tsv"], out["json"], "2026-11", PairSettings(),
                        card_cache=tmp_path / "cards.json", card_access={"private_urls": True, "timeout": 2.0})
    assert asked == [(["https://news.example.com/story-1000-0", "https://news.example.com/story-1000-1"],
                      tmp_path / "cards.json", {"private_urls": True, "timeout": 2.0})]  # canonical, once
    assert stats["filtered"]["page_title"] == 1
    kept = set(pl.read_parquet(out["pairs"])["s2"])
    assert "people say story 0 variant 1 is happening now" not in kept
    assert {"people say story 0 variant 0 is happening now", "people say story 1 variant 1 is happening now"} <= kept
    assert PairSettings.from_dict({}).fetch_cards is True  # the paper's default: cards read
    score_month([tmp_path / "days" / "2026-11-02.parquet"], tmp_path / "m.npz", ["newsa", "newsb"],
                out["pairs"], out["tsv"], out["json"], "2026-11", PairSettings(fetch_cards=False))
    assert len(asked) == 1  # off: no page read


# -- harvest faults that must not poison a day or lose tweets -----------------------------

def test_a_bad_tweet_url_or_page_is_a_rejected_row_and_reruns_complete(fake_x, tmp_path):
    populate(fake_x, stories=2, replies=3)
    fake_x.timelines["100"].append({"author_id": "100", "text": "no id at all", "lang": "en"})
    fake_x.timelines["200"].append(tweet(1999, "200", "bad port http://example.com:99999/x",
                                         "http://example.com:99999/x"))
    fake_x.faults = [("/2/tweets/search/recent", "400"), ("/2/tweets/search/recent", "unusable")]
    stats, table = harvest(fake_x, tmp_path)
    bad = pl.read_parquet(tmp_path / "days" / "rejected" / "2026-11-02.parquet")
    reasons = sorted(bad["reason"].to_list())
    assert "no_id" in reasons and "invalid_url" in reasons and "api_error" in reasons
    assert "unusable_page" in reasons and not fake_x.faults
    assert "1999" in set(table["tweet_id"])  # the tweet stays; its unusable URL does not
    assert table.filter(pl.col("tweet_id") == "1999")["canonical_urls"].to_list() == [[]]
    # nothing unusable was stored: a re-run of the day completes and finds the rest
    for page in (tmp_path / "raw" / "2026-11-02").glob("*.json.gz"):
        assert isinstance(json.loads(gzip.decompress(page.read_bytes())).get("data", []), list)
    _, again = harvest(fake_x, tmp_path)
    assert set(again["tweet_id"]) == expected_ids(fake_x)
    record = json.loads((tmp_path / "days" / "2026-11-02.parquet.prov.json").read_text())
    assert record["rejected"]["no_id"] >= 1


HOSTILE_PAGES = [  # tweet 1 is older than the fake's: a cursor moved past it misses none
    {"data": [{"id": "1", "author_id": "100", "text": "x"}], "meta": ["next_token", "5"]},
    {"data": [{"id": "1", "author_id": "100", "text": "x"}], "meta": {"next_token": 5}},
    {"data": [{"id": "1", "author_id": "100", "text": "x"}], "meta": {"next_token": {"a": 1}}},
    {"data": [{"id": "1", "author_id": "100", "text": "x"}], "meta": "end"},
    {"data": [{"id": 1, "author_id": 100, "text": 7}], "includes": {"users": 1}, "meta": {}},
    {"data": [{"id": "1", "author_id": "100", "text": "x"}], "includes": "users"},
]


def test_pages_whose_fields_have_other_json_types_never_stop_or_poison_a_harvest(fake_x, tmp_path):
    """The API's answers are parsed, not trusted: a page whose ``meta`` or ``next_token`` is
    not what paging needs is not used (a rejected row; the cursor stays; nothing is saved),
    and other fields of the wrong type become rejected tweets. (A ``meta`` of a list or a
    string was an AttributeError that stopped the harvest, and a number for ``next_token``
    was saved in the state as a cursor.) The state stays readable, and a re-run finds every
    tweet."""
    from paramill.twitter.store import State

    populate(fake_x, stories=2, replies=3)
    fake_x.faults = ([("/2/users/100/tweets", page) for page in HOSTILE_PAGES]
                     + [("/2/tweets/search/recent", page) for page in HOSTILE_PAGES])
    unusable = 0
    for _ in range(2 * len(HOSTILE_PAGES)):  # a run meets one or two of them
        harvest(fake_x, tmp_path)
        bad = pl.read_parquet(tmp_path / "days" / "rejected" / "2026-11-02.parquet")
        unusable += bad.filter(pl.col("reason") == "unusable_page").height
        state = State(tmp_path / "state.json")  # every cursor in it is one the API could give
        assert all(isinstance(v.get("next_token"), (str, type(None))) for v in state.pending.values())
        if not fake_x.faults:
            break
    assert not fake_x.faults and unusable == 2 * 4  # the four pages with a meta of no use, twice
    _, again = harvest(fake_x, tmp_path)
    assert expected_ids(fake_x) <= set(again["tweet_id"])


def test_a_saved_page_that_cannot_be_read_back_is_a_rejected_row(fake_x, tmp_path):
    populate(fake_x, stories=1)
    harvest(fake_x, tmp_path)
    page = sorted((tmp_path / "raw" / "2026-11-02").glob("*.json.gz"))[0]
    page.write_bytes(page.read_bytes()[:20])  # a page cut short on disk
    _, table = harvest(fake_x, tmp_path)
    bad = pl.read_parquet(tmp_path / "days" / "rejected" / "2026-11-02.parquet")
    assert bad.filter(pl.col("reason") == "unreadable_page")["where"].to_list() == [str(page)]


def test_max_pages_never_moves_since_id_past_pages_not_fetched(fake_x, tmp_path, capsys):
    for i in range(30):
        fake_x.timelines["100"].append(tweet(1000 + i, "100", f"story {i}"))
    settings = HarvestSettings(accounts=["newsa"], max_results=5, max_pages=2, retries=1, backoff=0.0)
    seen, cuts = set(), []
    days = [f"2026-11-{d:02d}" for d in range(2, 8)]
    for day in days[:4]:
        stats, table = harvest(fake_x, tmp_path, date=day, settings=settings)
        seen |= set(table["tweet_id"])
        cuts.append(stats["listings_cut"])
    # the first two harvests stop at 2 pages of 5 and say so; the third reaches the end
    assert cuts == [1, 1, 0, 0]
    assert capsys.readouterr().err.count("warning: 1 listing(s) reached max_pages (2) and continue on "
                                         "the next harvest (timeline newsa)") == 2
    assert seen == {t["id"] for t in fake_x.timelines["100"]}  # 30 tweets, 10 a harvest
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["since"]["newsa"] == "1029" and state["pending"] == {}
    fake_x.timelines["100"].append(tweet(2000, "100", "later story"))
    _, table = harvest(fake_x, tmp_path, date=days[4], settings=settings)
    assert set(table["tweet_id"]) == {"2000"}


def test_search_cut_by_max_pages_continues_before_since_id_moves(fake_x, tmp_path):
    populate(fake_x, stories=1, replies=25)  # 27 tweets for the URL: 3 search pages of 10
    settings = HarvestSettings(accounts=["newsa"], max_results=10, max_pages=1, retries=1, backoff=0.0)
    seen = set()
    for day in ("2026-11-02", "2026-11-03", "2026-11-04"):
        _, table = harvest(fake_x, tmp_path, date=day, settings=settings)
        seen |= set(table["tweet_id"])
    assert seen == expected_ids(fake_x)


@pytest.mark.parametrize("fault", ["429-noreset", "429-past", "500", "502", "504"])
def test_retryable_statuses_back_off_with_jitter_and_a_cap_and_end(fake_x, tmp_path, fault):
    from paramill.twitter.api import backoff_delay

    populate(fake_x, stories=1)
    fake_x.faults = [("/2/users/by/username/", fault)] * 50
    waits = []
    settings = HarvestSettings(accounts=["newsa"], retries=6, backoff=1.0, backoff_max=8.0)
    out = tmp_path / "d.parquet"
    with pytest.raises(HarvestError, match="failed after 6 retries"):
        harvest_day("2026-11-02", out, settings, raw_dir=tmp_path / "raw", state_path=tmp_path / "s.json",
                    client=client_for(fake_x), sleep=waits.append)
    assert len(fake_x.requests) == 7 and len(waits) == 6  # bounded: 1 try + 6 retries
    for attempt, wait in enumerate(waits):
        nominal = min(8.0, 2.0 ** attempt)
        assert nominal / 2 <= wait <= nominal
    assert max(waits) <= 8.0 and len(set(waits)) == len(waits)  # capped, jittered
    import random

    rng = random.Random(1)
    assert [round(backoff_delay(settings, a, rng), 6) for a in (0, 5, 9)] != [1.0, 8.0, 8.0]


def test_a_rate_limit_with_a_future_reset_waits_for_it(fake_x, tmp_path, capsys):
    populate(fake_x, stories=1)
    fake_x.faults = [("/2/users/by/username/", "429")]
    waits = []
    settings = HarvestSettings(accounts=["newsa"], retries=2, backoff=0.01)
    harvest_day("2026-11-02", tmp_path / "d.parquet", settings, raw_dir=tmp_path / "raw",
                state_path=tmp_path / "s.json", client=client_for(fake_x), sleep=waits.append)
    assert len(waits) == 1 and 0.5 < waits[0] <= 2.5  # until the reset (+1 s), not the back-off
    # the log says what it waits for (a wait of up to backoff_max, 900 s, is not a hang)
    err = capsys.readouterr().err
    assert f"get_user rate limited (429): waiting {waits[0]:.1f} s, then retry 1 of 2\n" in err
    # and how far the day's harvest is: accounts, then URL searches
    assert re.search(r"harvest 2026-11-02: timelines: 100%.* 1/1 ", err)
    assert re.search(r"harvest 2026-11-02: URL searches: 100%.* 1/1 ", err)


def test_oauth1_user_context_signs_every_request(fake_x, tmp_path, monkeypatch):
    from paramill.twitter.api import make_client

    populate(fake_x, stories=1)
    monkeypatch.delenv("X_BEARER_TOKEN", raising=False)
    for name in ("X_CONSUMER_KEY", "X_CONSUMER_SECRET", "X_ACCESS_TOKEN", "X_ACCESS_TOKEN_SECRET"):
        monkeypatch.setenv(name, f"{name.lower()}-value")
    client = make_client(replace(SETTINGS, api_url=fake_x.base))  # the config's address
    stats = harvest_day("2026-11-02", tmp_path / "d.parquet", SETTINGS, raw_dir=tmp_path / "raw",
                        state_path=tmp_path / "s.json", client=client, sleep=lambda s: None)
    assert stats["tweets"] == len(expected_ids(fake_x))
    headers = [h.get("Authorization", "") for _, _, h in fake_x.requests]
    assert headers and all(h.startswith("OAuth ") and "oauth_signature=" in h for h in headers)


def test_the_api_is_reached_at_the_configured_address_and_only_over_https_off_loopback(fake_x, monkeypatch):
    from paramill.twitter.api import make_client

    # a gateway's path prefix is kept, the route follows it; the query and headers unchanged
    client = at_address(tweepy.Client(bearer_token=TOKEN, return_type=dict), fake_x.base + "/gw/")
    with pytest.raises(tweepy.errors.NotFound):
        client.get_user(username="newsa")
    path, _, headers = fake_x.requests[-1]
    assert path == "/gw/2/users/by/username/newsa" and headers["Authorization"] == f"Bearer {TOKEN}"
    own = at_address(tweepy.Client(bearer_token=TOKEN), "https://api.twitter.com/", 7.0)
    adapter = own.session.get_adapter("https://api.twitter.com/2/users/me")
    assert (adapter.base, adapter.timeout) == ("https://api.twitter.com", 7.0)  # the API's own address
    for ok in ("https://api.x.com", "https://gw.example.org:8443/x/", "http://127.0.0.1:8080",
               "http://localhost/gw", "http://[::1]:9"):
        assert HarvestSettings.from_dict({"api_url": ok}).api_url == ok
    # credentials in clear over a network, or a URL that hides a host, a query or a user
    for bad in ("http://api.example.org", "http://127.0.0.1.example.org", "ftp://api.x.com",
                "https://user@api.x.com", "https://api.x.com/?q=1", "https://api.x.com/#f", "api.x.com",
                "https://api.x.com/$(id)", "https://api.x.com`id`", "https://api.x.com/a'b"):
        with pytest.raises(ValueError, match="api_url"):
            HarvestSettings.from_dict({"api_url": bad})
    monkeypatch.setenv("X_BEARER_TOKEN", TOKEN)
    make_client(HarvestSettings(api_url=fake_x.base)).get_user(username="newsa")
    assert fake_x.requests[-1][0] == "/2/users/by/username/newsa"


def test_an_authentication_failure_is_not_blamed_on_the_tier(fake_x, tmp_path):
    populate(fake_x, stories=1)
    client = tweepy.Client(bearer_token=None, consumer_key=None, return_type=dict)
    at_address(client, fake_x.base)
    client.bearer_token = "None"  # sends "Bearer None", as the unsupported set-up did
    with pytest.raises(HarvestError) as info:
        harvest_day("2026-11-02", tmp_path / "d.parquet", SETTINGS, raw_dir=tmp_path / "raw",
                    state_path=tmp_path / "s.json", client=client, sleep=lambda s: None)
    assert "did not accept the credentials" in str(info.value) and "(401)" in str(info.value)
    assert "tier" not in str(info.value).replace("not the access tier", "")


def test_two_harvests_on_one_state_run_one_after_another(fake_x, tmp_path, capsys):
    """Two harvests started at once on one state (two cron entries, a manual run beside
    cron) collided: the second now waits for the first, saying so, then reads the state the
    first left, so two at once fetch and store what two one after another do."""
    import threading
    import time

    from paramill.twitter.store import state_lock

    populate(fake_x, stories=2)
    held, release, results = threading.Event(), threading.Event(), {}

    def holder():  # a harvest holding the lock a while
        with state_lock(tmp_path / "held" / "state.json"):
            held.set()
            release.wait(30)

    first = threading.Thread(target=holder)
    first.start()
    assert held.wait(30)
    waiting = threading.Thread(target=lambda: results.setdefault("waited", harvest(fake_x, tmp_path / "held")))
    waiting.start()
    time.sleep(0.5)
    assert waiting.is_alive() and not fake_x.requests  # it waits, and has fetched nothing
    release.set()
    first.join(30)
    waiting.join(60)
    assert set(results["waited"][1]["tweet_id"]) == expected_ids(fake_x)
    err = capsys.readouterr().err
    assert "another harvest (pid" in err and "waiting for it to end" in err

    def counted(folder, at_once):
        before = len(fake_x.requests)
        runs = [threading.Thread(target=lambda k=k: results.setdefault((folder, k), harvest(fake_x, tmp_path / folder)))
                for k in range(2)]
        for run in runs:
            run.start()
            if not at_once:
                run.join(60)
        for run in runs:
            run.join(60)
        pages = sorted(p.name for p in (tmp_path / folder / "raw").rglob("*.json.gz"))
        return len(fake_x.requests) - before, pages, [results[(folder, k)][1] for k in range(2)]

    one_then_other = counted("sequential", at_once=False)
    both_at_once = counted("together", at_once=True)
    assert both_at_once[:2] == one_then_other[:2]  # the same requests, the same pages stored
    assert all(t.equals(one_then_other[2][0]) for t in both_at_once[2] + one_then_other[2])


def test_a_harvest_on_a_file_system_without_locks_runs_and_says_so(fake_x, tmp_path, monkeypatch,
                                                                   capsys):
    """Some cluster file systems are mounted without locks: flock answers ENOLCK (NFS without
    its lock daemon), ENOSYS (Lustre's noflock) or EOPNOTSUPP. The harvest failed there on
    every run; it now runs unlocked with a warning. Any other error is still an error."""
    import errno

    from paramill.twitter import store

    def no_locks(fh, how):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    populate(fake_x, stories=1)
    monkeypatch.setattr(store.fcntl, "flock", no_locks)
    _, table = harvest(fake_x, tmp_path)
    assert set(table["tweet_id"]) == expected_ids(fake_x)
    assert "keeps no locks (No locks available)" in capsys.readouterr().err

    def bad(fh, how):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(store.fcntl, "flock", bad)
    with pytest.raises(OSError, match="Input/output error"):
        with store.state_lock(tmp_path / "other.json"):
            pass


# -- trust, round 2: kills, 5xx, malformed tweets, unknown accounts, secrets -----------

def _days_until_done(fake, tmp_path, dates, kill_at, settings=SETTINGS, tries=60):
    """Harvest each date, re-running a killed run (as Snakemake reruns a failed job) until it
    completes; ``kill_at()`` says at which API call of a run the process dies (None: never)."""
    import functools

    calls = {"n": 0, "kill": None}
    originals = {name: getattr(tweepy.Client, name)
                 for name in ("get_user", "get_users_tweets", "search_recent_tweets")}

    def dying(original):
        @functools.wraps(original)
        def wrapper(self, *a, **k):
            calls["n"] += 1
            if calls["n"] == calls["kill"]:
                raise KeyboardInterrupt  # the job is killed here
            return original(self, *a, **k)
        return wrapper

    tables, kills = {}, 0
    try:
        for name, original in originals.items():
            setattr(tweepy.Client, name, dying(original))
        for n, date in enumerate(dates):
            if n:
                fake.add_day(date)  # new tweets between harvests
            for _ in range(tries):
                calls["n"], calls["kill"] = 0, kill_at()
                try:
                    _, tables[date] = harvest(fake, tmp_path, date=date, settings=settings)
                    break
                except (KeyboardInterrupt, HarvestError):
                    kills += 1
            else:
                raise AssertionError(f"{date} never completed in {tries} runs")
    finally:
        for name, original in originals.items():
            setattr(tweepy.Client, name, original)
    return tables, kills


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_a_seeded_kill_loop_loses_no_tweet_and_duplicates_none(fake_x, tmp_path, seed):
    import random

    rng = random.Random(seed)
    populate(fake_x, start=1000, stories=4, replies=3)
    day_starts = iter(range(5000, 100000, 4000))
    fake_x.add_day = lambda date: populate(fake_x, start=next(day_starts), stories=3, replies=3)
    dates = [f"2026-11-{d:02d}" for d in range(2, 6)]
    tables, kills = _days_until_done(fake_x, tmp_path, dates, lambda: rng.randint(1, 14))
    assert kills >= 3  # the loop really killed runs (many at every seed)
    got = [i for t in tables.values() for i in t["tweet_id"].to_list()]
    assert set(got) == expected_ids(fake_x)
    assert len(got) == len(set(got))  # no tweet in two days, none twice in a day


def test_an_account_answering_500_between_accounts_loses_no_url(fake_x, tmp_path):
    populate(fake_x, stories=4, replies=3)
    # newsa's timeline is stored and its cursor moves; then newsb keeps answering 500
    fake_x.faults = [("/2/users/200/tweets", "500")] * (SETTINGS.retries + 1)
    with pytest.raises(HarvestError, match="after 3 retries"):
        harvest(fake_x, tmp_path)
    state = json.loads((tmp_path / "state.json").read_text())
    newsa_urls = {canonical(t["entities"]["urls"][0]["expanded_url"]) for t in fake_x.timelines["100"]}
    assert state["since"].get("newsa") and newsa_urls <= set(state["urls"])
    _, table = harvest(fake_x, tmp_path)  # the API is well again
    assert set(table["tweet_id"]) == expected_ids(fake_x)


@pytest.mark.parametrize("field,value,detail", [
    ("text", ["a", "list"], "text is a list, not a string"),
    ("lang", {"code": "en"}, "lang is a dict, not a string"),
    ("id", {"nested": 1}, "is not a decimal id"),
    ("id", "12.5", "is not a decimal id"),
    ("id", True, "is not a decimal id"),
    ("id", 12.5, "is not a decimal id"),
    ("id", "١٢", "is not a decimal id"),
    ("author_id", [1], "is not a decimal id"),
    ("created_at", 20261102, "created_at is a int, not a string"),
    ("entities", {"urls": [{"expanded_url": ["http://a.example/x"]}]}, "expanded_url is a list"),
    ("entities", {"urls": "http://a.example/x"}, "entities.urls is a str, not a list"),
    ("referenced_tweets", [{"type": "retweeted", "id": "x1"}], "is not a decimal id"),
])
def test_a_malformed_tweet_is_a_rejected_row_and_its_day_reruns(fake_x, tmp_path, field, value, detail):
    populate(fake_x, stories=2, replies=2)
    bad = tweet(1990, "100", "a tweet with one field of the wrong type", "https://x.example/s")
    bad[field] = value
    fake_x.timelines["100"].append(bad)
    for _ in range(2):  # live mode stores the raw page: a re-run of the day reads it again
        _, table = harvest(fake_x, tmp_path)
        rejected = pl.read_parquet(tmp_path / "days" / "rejected" / "2026-11-02.parquet")
        row = rejected.filter(pl.col("reason") == "bad_field")
        # a tweet whose id can be read is passed by the cursor (its page is kept); one whose
        # id cannot be read is fetched again, and rejected again, by a re-run
        assert row.height == (1 if field != "id" else row.height) >= 1, rejected.to_dicts()
        assert all(detail in d for d in row["detail"]), row["detail"].to_list()
        assert "1990" not in set(table["tweet_id"])
        every = [t.get("id") for ts in fake_x.timelines.values() for t in ts] + \
            [t["id"] for t in fake_x.searchable]
        good = {i for i in every if isinstance(i, str) and i.isascii() and i.isdigit()}
        assert set(table["tweet_id"]) == good - {"1990"}
        assert all(i.isascii() and i.isdigit() for i in table["tweet_id"])


def test_malformed_archive_records_are_rejected_rows(tmp_path):
    lines = [json.dumps(tweet(5, "100", "fine")),
             json.dumps({**tweet(6, "100", "x"), "text": ["list"]}),
             json.dumps({"id_str": "7", "text": "v1", "user": {"screen_name": ["x"]}}),
             json.dumps({"id_str": "8.5", "text": "v1", "user": {"screen_name": "x"}})]
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(lines) + "\n")
    bad = []
    rows = list(read_archive([path], bad))
    assert [r["tweet_id"] for r in rows] == ["5"]
    assert [(b["record"], b["reason"]) for b in bad] == [(2, "bad_field"), (3, "bad_field"), (4, "bad_field")]


def test_a_tweet_whose_json_escapes_decode_to_no_text_is_a_rejected_row_and_the_day_is_written(tmp_path):
    """A post cut inside an emoji leaves half a surrogate pair, which JSON writes as
    ``\\ud83d``; ``\\u0000`` a NUL. Either in what a row keeps (its text, its author) is a
    rejected row (``invalid_utf8``, ``not_text``) where it failed the day's Parquet; in a field
    the row does not keep (the author's profile) it changes nothing. Archive lines and API
    pages alike."""
    cut = {**tweet(1, 9, "Storm hits the coast \ud83d"), "created_at": "2026-11-02T10:00:00Z"}
    nul = {**tweet(2, 9, "in the\u0000park"), "created_at": "2026-11-02T10:00:00Z"}
    whole = {**tweet(3, 9, "a whole emoji \ud83d\ude00 https://a.com/1", "https://a.com/1"),
             "created_at": "2026-11-02T10:00:00Z"}
    v1 = {"id_str": "4", "created_at": "Mon Nov 02 10:00:00 +0000 2026", "full_text": "fine",
          "user": {"screen_name": "Bob", "id_str": "3", "description": "bio \ud800"}}
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (cut, nul, whole, v1)) + "\n")
    out = tmp_path / "d.parquet"
    stats = harvest_day("2026-11-02", out, SETTINGS, source="archive", archive=[str(path)])
    table = pl.read_parquet(out)
    assert sorted(table["tweet_id"].to_list()) == ["3", "4"] and stats["tweets"] == 2
    assert "a whole emoji \U0001f600" in table.filter(pl.col("tweet_id") == "3")["text"][0]
    bad = []
    list(read_archive([path], bad))
    assert [(b["record"], b["reason"]) for b in bad] == [(1, "invalid_utf8"), (2, "not_text")]
    assert bad[0]["detail"].startswith("field text: a lone surrogate \\ud83d at character 21")
    assert "\\ud83d" in bad[0]["raw"]  # the record as JSON writes it
    page = {"data": [{"id": "5", "text": "ok"}, {"id": "6", "author_id": "7", "text": "ok"}],
            "includes": {"users": [{"id": "7", "username": "bad\udc00name"}]}}
    rows, rejects = from_object(page, "timeline")
    assert [r["tweet_id"] for r in rows] == ["5"]
    assert [(r["reason"], r["detail"][:30]) for r in rejects] == [("invalid_utf8", "field author: a lone surrogate")]


def test_an_archived_tweet_naming_a_key_twice_is_a_rejected_row_and_its_page_is_not(tmp_path):
    """A tweet object of an archive that gives a key twice (`"text"`, an entity's URL) has no
    one value for it (Python kept the last): a rejected row `duplicate_key`, the other tweets
    of its line (a v2 page holds up to 100) kept. A user object that does names no user: its
    tweets' author is their author_id."""
    one = json.dumps({**tweet(1, 9, "first text"), "created_at": "2026-11-02T10:00:00Z"})
    twice = one.replace('"text": "first text"', '"text": "first text", "text": "second text"')
    page = json.dumps({"data": [{"id": "5", "author_id": "7", "text": "fine", "created_at":
                                 "2026-11-02T10:00:00Z"},
                                {"id": "6", "author_id": "8", "text": "also fine", "created_at":
                                 "2026-11-02T10:00:00Z", "entities": {"urls": [
                                     {"expanded_url": "https://a.com/1"}]}}],
                       "includes": {"users": [{"id": "7", "username": "ann"},
                                              {"id": "8", "username": "bob"}]}})
    page = page.replace('"username": "bob"', '"username": "bob", "username": "eve"')
    nested = page.replace('{"expanded_url": "https://a.com/1"}',
                          '{"expanded_url": "https://a.com/1", "expanded_url": "https://b.com/2"}')
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join([twice, page, nested]) + "\n")
    bad = []
    rows = list(read_archive([path], bad))
    assert [(r["tweet_id"], r["author"]) for r in rows] == [("5", "ann"), ("6", "8"), ("5", "ann")]
    assert [(b["record"], b["reason"], b["detail"][:22]) for b in bad] == [
        (1, "duplicate_key", "the key 'text' is give"), (3, "duplicate_key", "the key 'expanded_url'")]


def test_an_api_answer_nested_deeper_than_json_parses_is_an_unreadable_answer():
    """An error answer's body nested deeper than Python's JSON parser goes: its message is
    the body's text, and it is no monthly cap (a RecursionError escaped both)."""
    from types import SimpleNamespace

    from paramill.twitter.api import _api_message, _usage_capped

    deep = "[" * 100_000 + "]" * 100_000

    def parse():
        return json.loads(deep)

    exc = SimpleNamespace(response=SimpleNamespace(json=parse, text=deep))
    assert _api_message(exc) == "[" * 200 and _usage_capped(exc) is False


@pytest.mark.parametrize("fault", [None, "errors-only"])
def test_an_unknown_account_is_a_rejected_row_and_a_warning(fake_x, tmp_path, capsys, fault):
    populate(fake_x, stories=1)
    settings = HarvestSettings(accounts=["newsa", "ghost"], max_results=5, retries=1, backoff=0.0)
    if fault:
        fake_x.faults = [("/2/users/by/username/ghost", fault)]
    _, table = harvest(fake_x, tmp_path, settings=settings)
    rejected = pl.read_parquet(tmp_path / "days" / "rejected" / "2026-11-02.parquet")
    row = rejected.filter(pl.col("reason") == "unknown_account")
    assert row["where"].to_list() == ["user ghost"]
    assert ("Could not find user with username: [ghost]" if fault else "404") in row["detail"][0]
    assert "warning: account 'ghost' skipped" in capsys.readouterr().err
    assert table.height > 0  # the known account was harvested


OAUTH_ENV = ("X_CONSUMER_KEY", "X_CONSUMER_SECRET", "X_ACCESS_TOKEN", "X_ACCESS_TOKEN_SECRET")


def test_no_secret_reaches_a_log_or_a_stored_row_at_any_level(fake_x, tmp_path, monkeypatch, caplog):
    import logging

    from paramill.twitter.api import make_client

    populate(fake_x, stories=1)
    monkeypatch.delenv("X_BEARER_TOKEN", raising=False)
    secrets = {name: f"{name.lower()}-Zq9{i}secret" for i, name in enumerate(OAUTH_ENV)}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    client = make_client(SETTINGS)
    at_address(client, fake_x.base)
    fake_x.faults = [("/2/tweets/search/recent", "400-echo")]
    loggers = [logging.getLogger(n) for n in ("", "tweepy", "oauthlib", "requests_oauthlib", "urllib3")]
    levels = [lg.level for lg in loggers]
    try:
        for lg in loggers:
            lg.setLevel(logging.DEBUG)  # a user's logging config at DEBUG, every library
        with caplog.at_level(logging.DEBUG):
            harvest_day("2026-11-02", tmp_path / "d.parquet", SETTINGS, raw_dir=tmp_path / "raw",
                        state_path=tmp_path / "s.json", client=client, sleep=lambda s: None)
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)
    echoed = [h for _, _, h in fake_x.requests if h.get("Authorization", "").startswith("OAuth ")]
    assert echoed and not fake_x.faults  # the echo was served, with a real OAuth header
    names = {r.name for r in caplog.records}
    assert any(n.startswith("oauthlib") or n.startswith("requests_oauthlib") for n in names), names
    text = "\n".join(r.getMessage() for r in caplog.records) + caplog.text
    stored = b"".join(gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
                      for p in tmp_path.rglob("*") if p.is_file())
    rejected = pl.read_parquet(tmp_path / "rejected" / "d.parquet")
    assert "[redacted]" in rejected.filter(pl.col("reason") == "api_error")["detail"][0]
    for value in secrets.values():
        assert value not in text, value
        assert value.encode() not in stored, value


def test_cards_given_on_the_command_line_are_checked(tmp_path):
    from paramill.errors import InputError
    from paramill.twitter.month import load_cards

    assert load_cards(None) == {}
    with pytest.raises(InputError, match="none.json"):
        load_cards(tmp_path / "none.json")
    bad = tmp_path / "cards.json"
    bad.write_text('["https://a.example/1"]')
    with pytest.raises(InputError, match=r"cards.json: cards must be a JSON object"):
        load_cards(bad)
    bad.write_text('{"https://a.example/1": {"title": "Storm"}')
    with pytest.raises(InputError, match=r"cards.json:1: not JSON"):
        load_cards(bad)
    bad.write_text('{"https://a.example/1": {"title": 5}}')  # failed later, in comparing texts
    with pytest.raises(InputError, match=r"cards.json: cards must be .*each a string"):
        load_cards(bad)
    bad.write_text('{"https://a.example/1": {"title": "Storm", "description": null}}')
    assert load_cards(bad) == {"https://a.example/1": {"title": "Storm", "description": None}}


def test_a_url_too_long_for_the_search_is_searched_by_its_leading_tokens(fake_x, tmp_path):
    """X refuses a query over 512 characters (400): a news tweet linking a URL longer than
    about 490 characters got a rejected row and none of its replies."""
    from paramill.twitter.api import search_query

    slug = "-".join(f"word{i}" for i in range(100))  # a 700-character path
    url = f"https://www.news.example.com/{slug}?id=7&utm_source=tw"
    fake_x.timelines["100"].append(tweet(3000, "100", f"Big storm story happens today in the city {url}", url))
    fake_x.searchable += [tweet(3000 + r, "300", f"people say the storm story {r} is happening {url}", url)
                          for r in (1, 2)]
    stats, table = harvest(fake_x, tmp_path)
    assert set(table["tweet_id"]) == {"3000", "3001", "3002"}
    [asked] = fake_x.searched
    assert len(asked) <= 512 and asked.startswith('url:"news.example.com/word0-word1-') and asked.endswith('" lang:en')
    kept = asked[len('url:"'):-len('" lang:en')]
    assert f"news.example.com/{slug}".startswith(kept) and kept[-1].isalnum()  # whole tokens only
    assert f"news.example.com/{slug}"[len(kept)] == "-"
    # the query string goes first; a quote or a space in a path cannot end the quoted value
    assert search_query("https://a.com/x?" + "k=v&" * 200, ["en"]) == 'url:"a.com/x" lang:en'
    assert search_query('https://a.com/x"y z', []) == 'url:"a.com/x/y/z"'
    assert search_query("https://a.com/" + "café-" * 200, [], 64) == 'url:"a.com/' + "-".join(["café"] * 10) + '"'
    assert len(search_query("https://a.com/" + "x" * 600, ["en"])) <= 512  # one token: cut where it must be
    # languages that leave a link too little of the query are a config error, not 400s
    from paramill import config
    from paramill.io.yamlfiles import ConfigError

    many = [a + b for a in "abcdefgh" for b in "abcdefgh"][:60]
    with pytest.raises(ConfigError, match=r"twitter.advanced.harvest.search_languages \(60 languages\) and "
                                          r"twitter.advanced.harvest.max_query_chars \(512\): the language operators "
                                          r"take 659 characters"):
        config.resolve({"twitter": {"advanced": {"harvest": {"search_languages": many}}}})
    fits = config.resolve({"twitter": {"advanced": {"harvest": {"search_languages": many, "max_query_chars": 1024}}}})
    assert len(search_query(url, many, 1024)) <= 1024
    assert fits["twitter"]["harvest"]["max_query_chars"] == 1024
    # a tier that takes longer queries asks for the whole link
    fake_x.searched.clear()
    fake_x.max_query = 1024
    harvest(fake_x, tmp_path / "pro", settings=replace(SETTINGS, max_query_chars=1024))
    assert fake_x.searched == [f'url:"news.example.com/{slug}?id=7" lang:en']


def test_a_long_post_is_harvested_whole_with_the_link_past_its_first_280_characters(fake_x, tmp_path):
    """X gives a post over 280 characters (a long post) as its first 280 in ``text`` and the
    whole in ``note_tweet``, only when asked for: the harvest kept the cut text, and a link
    past the cut was in no table, so the news tweet's article was never searched for."""
    from paramill.twitter.tweets import from_v2

    url = "https://news.example.com/long-story"
    lead = "Our investigation, in full: " + " ".join(f"finding {i} of the story" for i in range(20))
    fake_x.timelines["100"].append(long_post(4000, "100", lead, url))
    fake_x.searchable += [long_post(4001, "300", "A reader's long reply says the investigation "
                                    + "shows much " * 30, url),
                          tweet(4002, "300", f"people say the investigation is happening {url}", url)]
    _, table = harvest(fake_x, tmp_path)
    news = table.filter(pl.col("tweet_id") == "4000").row(0, named=True)
    assert news["text"] == f"{lead} {url}" and len(news["text"]) > 280 and not news["text"].endswith("…")
    assert news["canonical_urls"] == ["https://news.example.com/long-story"]
    assert set(table["tweet_id"]) == {"4000", "4001", "4002"}  # its article was searched for
    assert table.filter(pl.col("tweet_id") == "4001")["text"][0].endswith(url)
    # a saved page of before (no note_tweet asked for): the text as it was; the same link
    # in both the note and the first 280 characters is one link
    cut = from_v2({"id": "1", "text": "short " * 60, "entities": {"urls": [{"url": "https://t.co/a",
                  "expanded_url": url}]}, "note_tweet": {"text": "whole", "entities": {"urls": [
                      {"url": "https://t.co/a", "expanded_url": url}]}}}, {}, "search")
    assert cut["text"] == "whole" and cut["urls"] == [url]
    with pytest.raises(ValueError, match="note_tweet is a str, not an object"):
        from_v2({"id": "2", "text": "x", "note_tweet": "whole"}, {}, "search")
