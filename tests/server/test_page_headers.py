"""Every page a server answers carries the same strict headers (docs/api.md §1 "Pages"): each route
of the app outside /v1, enumerated from the app itself, and the error pages; the favicon is served.
Local door: the local backend's loopback pages (the same app, in-process); remote and postgres: the
door's own `wsctl serve`."""
from __future__ import annotations

import base64
import contextlib
import hashlib
import re

import httpx

STRICT = {"content-security-policy", "x-content-type-options", "x-frame-options", "referrer-policy"}


def app_routes(engine) -> list:
    """The FastAPI app's routes behind the access log, the lean /v1 path and the strict headers."""
    from workspacectl.server.app import create_app

    outer = create_app(engine)
    return list(outer.app.fallback.app.routes)


@contextlib.contextmanager
def pages_of(backend):
    if backend.kind == "remote":
        yield backend.base_url
        return
    from workspacectl.server.loopback import LoopbackServer

    with LoopbackServer(backend._engine) as server:
        yield server.url


def assert_strict(r: httpx.Response, what: str) -> None:
    assert {k.lower() for k in r.headers} >= STRICT, (what, r.status_code, dict(r.headers))
    csp = r.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp, (what, csp)
    assert r.headers["x-content-type-options"] == "nosniff" and r.headers["x-frame-options"] == "DENY", what
    assert r.headers["referrer-policy"] in ("no-referrer", "same-origin"), what   # same-origin: the connect form
    if r.headers.get("content-type", "").startswith("text/html"):
        for style in re.findall(r"<style>(.*?)</style>", r.text, re.S):   # the inline style is allowed, by hash
            digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
            assert f"'sha256-{digest}'" in csp, what
        assert "unsafe-inline" not in csp, what


def test_every_page_and_error_page_sends_the_strict_headers(backend):
    routes = app_routes(backend._engine if backend.kind == "local" else _engine_for(backend))
    walked = set()
    with pages_of(backend) as url, httpx.Client(base_url=url, trust_env=False, timeout=30) as http:
        for route in routes:
            path = getattr(route, "path", "")
            if path.startswith("/v1/"):
                continue   # the API (JSON), answered by the lean path
            methods = sorted(getattr(route, "methods", None) or {"GET"})
            method = "GET" if "GET" in methods else methods[0]
            concrete = re.sub(r"\{[^}]+\}", "no-such-token", path)
            r = http.request(method, concrete, headers={"Accept": "text/html"})
            assert r.status_code < 500, (method, concrete, r.status_code, r.text[:300])
            assert_strict(r, f"{method} {concrete}")
            walked.add(path)
        assert {"/", "/signin/{token}", "/connect/{token}", "/docs", "/favicon.ico", "/healthz"} <= walked, walked
        # error pages: an unknown path, a wrong method, a used-up link, a form from another site
        for method, path, status in (("GET", "/no-such-page", 404), ("DELETE", "/", 405), ("GET", "/signin/bad", 401),
                                     ("POST", "/connect/bad", 403), ("GET", "/docs/nope.js", 404)):
            r = http.request(method, path, headers={"Origin": "https://elsewhere.example"})
            assert r.status_code == status, (method, path, r.status_code)
            assert_strict(r, f"{method} {path}")
        # the root page's icon is served, as the SVG it links and as /favicon.ico
        root = http.get("/")
        assert '<link rel="icon" href="/favicon.svg" type="image/svg+xml">' in root.text
        svg, ico = http.get("/favicon.svg"), http.get("/favicon.ico")
        assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml" and b"<svg" in svg.content
        assert ico.status_code == 200 and ico.headers["content-type"] == "image/x-icon"
        assert ico.content[:4] == b"\x00\x00\x01\x00" and b"PNG" in ico.content[:40]


def _engine_for(backend):
    """An engine on the door's workspace, only to enumerate the app's routes (no request goes to it)."""
    from workspacectl.engine.dispatch import Engine
    from workspacectl.engine.workspaces import open_workspace

    ws = open_workspace(str(backend.workspace))
    backend.on_close.append(ws.close)
    return Engine(ws)
