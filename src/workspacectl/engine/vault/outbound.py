"""Every HTTP call the engine makes to a third party (OAuth code exchange, refresh and revoke;
credential probes) goes through request(), which logs it once, without secrets.

A log line names the method, the host, the path, the status and the time taken; never the query
string (a service may take its key there), the headers or the body. The HTTP library's own loggers
write every URL whole at INFO, so they are held at WARNING from the moment this module loads
(the server's logging setup calls quiet_library_loggers() too, before any request).

    resp = outbound.request("POST", url, pinned, "loopcrm's token endpoint", timeout=15, data=form)
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import httpx

    from workspacectl.engine.catalog.urls import Pinned

log = logging.getLogger("wsctl.outbound")
LIBRARY_LOGGERS = ("httpx", "httpcore", "hpack", "h11")


def quiet_library_loggers() -> None:
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


quiet_library_loggers()


def describe(url: str) -> str:
    """'host /path' of a URL: what a log line may say of where a call went."""
    parts = urlsplit(url)
    return f"{parts.hostname or '?'}{':' + str(parts.port) if parts.port else ''} {parts.path or '/'}"


def request(method: str, url: str, target: Pinned, what: str, *, timeout: float, headers: dict | None = None,
            params: dict | None = None, data: dict | None = None, json: dict | None = None) -> httpx.Response:
    """Send one request to `target` (engine/catalog_urls.pin of `url`: the checked address with the
    original Host header), log it, and answer the httpx response. httpx.HTTPError propagates
    (logged as a failure); callers turn it into their own ApiError."""
    import httpx

    where = describe(url)
    started = time.perf_counter()
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            resp = client.request(method, target.url, headers={**(headers or {}), **target.headers},
                                  params=params, data=data, json=json, extensions=target.extensions)
    except httpx.HTTPError as e:
        _log_outcome(method, where, what, started, f"failed ({type(e).__name__})")
        raise
    _log_outcome(method, where, what, started, resp.status_code)
    return resp


def _log_outcome(method: str, where: str, what: str, started: float, outcome: int | str) -> None:
    """The one `wsctl.outbound` line of a call: its status, or how it failed, and how long it took
    (method, host and path only: never a query, which may carry a key)."""
    if isinstance(outcome, int):
        log.info("outbound %s %s for %s -> %d in %.0f ms", method, where, what, outcome,
                 (time.perf_counter() - started) * 1000)
    else:
        log.info("outbound %s %s for %s %s after %.0f ms", method, where, what, outcome,
                 (time.perf_counter() - started) * 1000)


# --- the credential proxy's calls: streamed, on clients kept per host --------------------------

PROXY_TIMEOUT = {"connect": 10.0, "read": 60.0, "write": 60.0, "pool": 10.0}
MAX_CLIENTS = 16
_clients: dict[tuple, httpx.Client] = {}   # (scheme, pinned address, Host, TLS name) -> httpx.Client, oldest first
_clients_lock = threading.Lock()


def _client_for(target: Pinned) -> httpx.Client:
    """A client kept for one checked address of one host name: its connections are reused by the
    next call there (a new client costs a TLS context, ~10 ms), and never serve another name."""
    import http.cookiejar

    import httpx

    parts = urlsplit(target.url)
    key = (parts.scheme, parts.netloc, target.headers.get("Host"), target.extensions.get("sni_hostname"))
    evicted = None
    with _clients_lock:
        client = _clients.pop(key, None)
        if client is None:
            # a jar that keeps no cookie: a client serves every member's calls to that host
            jar = http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
            client = httpx.Client(timeout=httpx.Timeout(**PROXY_TIMEOUT), follow_redirects=False, trust_env=False,
                                  cookies=jar)
            if len(_clients) >= MAX_CLIENTS:
                evicted = _clients.pop(next(iter(_clients)))
        _clients[key] = client
    if evicted is not None:
        evicted.close()
    return client


def send_streamed(method: str, url: str, target: Pinned, what: str, *, headers: list,
                  content: bytes | Iterator[bytes] | None = None) -> httpx.Response:
    """One proxied request to `target` (catalog.urls.pin of `url`), the answer's body left unread
    (the caller streams it and closes the response). Logged like request(); httpx.HTTPError
    propagates."""
    where = describe(url)
    started = time.perf_counter()
    client = _client_for(target)
    try:
        req = client.build_request(method, target.url, headers=[*headers, *target.headers.items()], content=content,
                                   extensions=target.extensions)
        resp = client.send(req, stream=True)
    except Exception as e:
        _log_outcome(method, where, what, started, f"failed ({type(e).__name__})")
        raise
    _log_outcome(method, where, what, started, resp.status_code)
    return resp
