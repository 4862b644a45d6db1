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
import time
from urllib.parse import urlsplit

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


def request(method: str, url: str, target, what: str, *, timeout: float, headers: dict | None = None,
            params: dict | None = None, data: dict | None = None):
    """Send one request to `target` (engine/catalog_urls.pin of `url`: the checked address with the
    original Host header), log it, and answer the httpx response. httpx.HTTPError propagates
    (logged as a failure); callers turn it into their own ApiError."""
    import httpx

    where = describe(url)
    started = time.perf_counter()
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            resp = client.request(method, target.url, headers={**(headers or {}), **target.headers},
                                  params=params, data=data, extensions=target.extensions)
    except httpx.HTTPError as e:
        log.info("outbound %s %s for %s failed (%s) after %.0f ms", method, where, what, type(e).__name__,
                 (time.perf_counter() - started) * 1000)
        raise
    log.info("outbound %s %s for %s -> %d in %.0f ms", method, where, what, resp.status_code,
             (time.perf_counter() - started) * 1000)
    return resp
