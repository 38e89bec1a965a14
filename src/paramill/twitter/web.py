"""The web a tweet's links are followed on: public hosts only, and a deadline on each call.

A tweet's link is anyone's to write, so no request goes to a host that is not on the public
internet (loopback, private, link-local such as a cloud's metadata service at 169.254.169.254,
multicast, reserved), first or at any redirect: the URL is kept as it is, unrequested
(:class:`PrivateAddress`; ``private_urls`` lifts it, for an intranet's news site). The
connection goes to an address that was checked, so a name cannot resolve to a public address
for the check and to a private one for the connection.

requests' ``timeout`` bounds each wait on the socket, not a call: a server that sends its
headers (or a TLS handshake, or a page) a byte at a time, each within the timeout, held a
worker for as long as it liked (2,000 header bytes at 0.05 s: 100 s at a 0.5 s timeout, and
a header may hold 64 KiB). :func:`deadline` puts a limit on everything a call does: its
connections' sockets are shut down when it passes, which ends any wait on them at once, and
a name is looked up on a helper thread waited on until then (the system resolver's own
timeouts, 5 s a try and server, are the name's owner's to use: a link to a name whose
servers never answer held a worker for 10 s a lookup, two lookups a request).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from contextlib import contextmanager
from typing import Iterator
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError


class PrivateAddress(requests.RequestException):
    """A request to a host that is not on the public internet, refused before connecting."""


def _lookup(host: str) -> list[str] | None:
    """The distinct addresses ``host`` resolves to, in the resolver's order (None when it
    does not resolve)."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    return True


def _resolve(host: str) -> list[str] | None:
    """:func:`_lookup`; inside a :func:`deadline`, made once a call (the check before a
    request and its connection share it) on a helper thread, waited on until the deadline:
    :class:`TimeoutError` when it passes first (the thread is left to the resolver's own
    timeouts, its answer unused)."""
    watch = _current()
    if watch is None or _literal(host):
        return _lookup(host)
    if host not in watch.resolved:
        answer: list[list[str] | None] = []
        helper = threading.Thread(target=lambda: answer.append(_lookup(host)), daemon=True,
                                  name=f"resolve {host}"[:60])
        helper.start()
        helper.join(watch.remaining())
        if not answer:
            watch.expire()
            raise TimeoutError(f"{host}: looking the name up took past the call's deadline")
        watch.resolved[host] = answer[0]
    return watch.resolved[host]


def _global(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def is_public(host: str) -> bool:
    """Whether every address ``host`` resolves to (a name, or an address in any of its
    spellings: ``2130706433`` is 127.0.0.1) is a global unicast address. A name that does not
    resolve counts as public: connecting to it fails on its own."""
    addresses = _resolve(host)
    return addresses is None or all(map(_global, addresses))


def checked_addresses(host: str) -> list[str]:
    """The addresses a connection to ``host`` may go to, resolved once, each checked
    (:func:`is_public` on the address itself): connecting to one of these, not to a second
    resolution of the name, leaves a name no way to answer public to the check and private to
    the connection (DNS rebinding). A host that resolves to any address off the public
    internet is :class:`PrivateAddress`; one that does not resolve has none (an empty list)."""
    addresses = _resolve(host)
    if addresses is None:
        return []
    for address in addresses:
        if not is_public(address):
            raise PrivateAddress(f"{host} resolves to {address}, not a public address")
    return addresses


class _Watch:
    """The sockets one call's connections use, shut down when its ``seconds`` pass (each
    registered as a duplicate of its file descriptor: TLS takes the plain socket over, and a
    shutdown reaches the connection through any descriptor of it)."""

    def __init__(self, seconds: float):
        self.sockets: list[socket.socket] = []
        self.resolved: dict[str, list[str] | None] = {}  # host: its addresses, this call's
        self.expired = False
        self.ends = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self.expire)
        self._timer.daemon = True
        self._timer.start()

    def add(self, sock: socket.socket | None) -> None:
        try:
            copy = socket.fromfd(sock.fileno(), sock.family, sock.type)
        except (AttributeError, OSError):  # none yet, or closed already: nothing to wait on
            return
        with self._lock:
            self.sockets.append(copy)
            if self.expired:
                _shut(copy)

    def remaining(self) -> float:
        """Seconds until the deadline (0 once it has passed)."""
        return max(0.0, self.ends - time.monotonic())

    def expire(self) -> None:
        """The deadline reached: every socket shut down, and any added later."""
        with self._lock:
            self.expired = True
            for sock in self.sockets:
                _shut(sock)

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            for sock in self.sockets:
                sock.close()
            self.sockets.clear()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # closed already
        pass


_calls = threading.local()


@contextmanager
def deadline(seconds: float) -> Iterator[_Watch]:
    """Everything the block's requests do in this thread (connecting, a TLS handshake,
    headers, a body, each redirect) ends by ``seconds`` from now, on a session from
    :func:`web_session`: their sockets are shut down then, which ends a wait on them with an
    error or an early end. The watch it yields says whether that happened (``expired``): an
    answer read then may be cut short."""
    watch, outer = _Watch(seconds), _current()
    _calls.watch = watch
    try:
        yield watch
    finally:
        _calls.watch = outer
        watch.close()


def _current() -> _Watch | None:
    """The calling thread's :func:`deadline`, if it is inside one."""
    return getattr(_calls, "watch", None)


def _watched(sock: socket.socket | None) -> None:
    watch = _current()
    if watch is not None:
        watch.add(sock)


class _Registered:
    """A urllib3 connection whose sockets join the calling thread's :func:`deadline`: a new
    one as it connects, a kept-alive one as it is asked again."""

    def _new_conn(self):
        sock = super()._new_conn()
        _watched(sock)
        return sock

    def getresponse(self, *args, **kwargs):
        _watched(self.sock)
        return super().getresponse(*args, **kwargs)


class _Watched(_Registered):
    """A :class:`_Registered` connection whose host's addresses are looked up by
    :func:`_resolve` (so within the deadline) and tried in turn, as
    ``socket.create_connection`` would, until one connects or the deadline passes (a name
    may list dozens of addresses that never answer, each waited on for the connect timeout),
    each connect waited on no longer than the deadline leaves (one begun just before it ran
    its whole connect timeout past it)."""

    def _addresses(self, name: str) -> list[str]:
        return _resolve(name) or []

    def _new_conn(self):
        name, error = self._dns_host, None
        try:
            addresses = self._addresses(name)
        except TimeoutError as exc:
            raise ConnectTimeoutError(self, str(exc)) from None
        if not addresses:
            raise NameResolutionError(self.host, self, socket.gaierror(
                socket.EAI_NONAME, "Name or service not known"))
        try:
            for address in addresses:
                watch = _current()
                if watch is not None and watch.expired:
                    raise error or ConnectTimeoutError(self, f"{name}: the call's deadline passed")
                self._dns_host = address
                timeout = self.timeout  # a connect begun near the deadline ends at it
                left = max(watch.remaining(), 0.001) if watch is not None else None
                if left is not None and not (isinstance(timeout, (int, float)) and timeout <= left):
                    self.timeout = left
                try:
                    return super()._new_conn()
                except (NewConnectionError, ConnectTimeoutError) as exc:
                    error = exc  # the next address
                finally:
                    self.timeout = timeout
        finally:
            self._dns_host = name
        raise error


class _Pinned(_Watched):
    """A :class:`_Watched` connection that connects only to the addresses
    :func:`checked_addresses` checked, the name kept for the Host header, TLS's server name
    and its certificate check."""

    def _addresses(self, name: str) -> list[str]:
        return checked_addresses(name)


class _PinnedHTTP(_Pinned, HTTPConnection):
    pass


class _PinnedHTTPS(_Pinned, HTTPSConnection):
    pass


class _WatchedHTTP(_Watched, HTTPConnection):
    pass


class _WatchedHTTPS(_Watched, HTTPSConnection):
    pass


def _pool(base: type, connection: type) -> type:
    return type(f"{connection.__name__}Pool", (base,), {"ConnectionCls": connection})


_POOLS = {True: {"http": _pool(HTTPConnectionPool, _PinnedHTTP),
                 "https": _pool(HTTPSConnectionPool, _PinnedHTTPS)},
          False: {"http": _pool(HTTPConnectionPool, _WatchedHTTP),
                  "https": _pool(HTTPSConnectionPool, _WatchedHTTPS)}}


def _socks_pools() -> dict[str, type]:
    """Pools for a SOCKS proxy's connections (PySocks connects through the proxy, which
    resolves the name for ``socks5h``), their sockets watched."""
    from urllib3.contrib.socks import (SOCKSConnection, SOCKSHTTPConnectionPool,
                                       SOCKSHTTPSConnection, SOCKSHTTPSConnectionPool)

    return {"http": _pool(SOCKSHTTPConnectionPool, type("_RegisteredSOCKS", (_Registered, SOCKSConnection), {})),
            "https": _pool(SOCKSHTTPSConnectionPool,
                           type("_RegisteredSOCKSHTTPS", (_Registered, SOCKSHTTPSConnection), {}))}


class Adapter(HTTPAdapter):
    """Connections whose sockets a :func:`deadline` watches; with ``public_only``, sent only
    to public hosts: requests calls an adapter for the first request and for every redirect
    it follows, so each hop is checked before it connects, and the connection goes to an
    address that was checked (:class:`_Pinned`; through an HTTP proxy, the proxy resolves the
    name and only the first check holds; so through a SOCKS proxy)."""

    def __init__(self, public_only: bool):
        self.public_only = public_only  # before HTTPAdapter's __init__ makes the pools
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOLS[self.public_only])

    def proxy_manager_for(self, proxy, **proxy_kwargs):
        """requests' manager for an HTTP or SOCKS proxy (a cluster's way out: ``ssh -D``
        gives a SOCKS one), its connections watched too (not pinned: the proxy resolves the
        names, or for a SOCKS proxy without ``h`` PySocks does)."""
        fresh = proxy not in self.proxy_manager
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if fresh:
            manager.pool_classes_by_scheme = (_socks_pools() if proxy.lower().startswith("socks")
                                              else dict(_POOLS[False]))
        return manager

    def send(self, request, *args, **kwargs):
        host = urlsplit(request.url).hostname or ""
        try:
            if self.public_only and not is_public(host):
                raise PrivateAddress(f"{host} is not a public address", request=request)
        except TimeoutError as exc:  # the name's lookup outran the call's deadline
            raise requests.exceptions.ConnectTimeout(str(exc), request=request) from None
        return super().send(request, *args, **kwargs)


def web_session(private_urls: bool = False, session: requests.Session | None = None
                ) -> requests.Session:
    """A session for following tweets' links: public hosts only unless ``private_urls``, its
    connections watched by :func:`deadline`."""
    session = session or requests.Session()
    for prefix in ("http://", "https://"):
        session.mount(prefix, Adapter(public_only=not private_urls))
    return session
