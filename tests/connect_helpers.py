"""Helpers for the connection tests: a `Door` that serves the hosted pages on either backend.

- remote: the backend's own `wsctl serve` subprocess (its URL is the connect pages' base).
- local: the pages on a loopback server in this process (`server.loopback.LoopbackServer`,
  what `wsctl vault connect` starts), and API calls go to the in-process engine with that
  server's URL as base_url, exactly as the local `wsctl vault connect` calls it.

A "browser" is an httpx client that follows redirects and keeps cookies, signed in through a
real web sign-in link (POST /v1/auth/web-link), as the acceptance harness does.
"""
from __future__ import annotations

import html.parser
import json
import urllib.parse
from dataclasses import dataclass, field

import httpx

from tests.conftest import ApiResult


class FormParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.forms = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.forms.append({"action": a.get("action", ""), "method": (a.get("method") or "get").lower(),
                               "inputs": {}, "types": {}})
        elif tag == "input" and self.forms and a.get("name"):
            self.forms[-1]["inputs"][a["name"]] = a.get("value", "")
            self.forms[-1]["types"][a["name"]] = (a.get("type") or "text", a.get("autocomplete"))


def parse_form(page: httpx.Response) -> dict:
    p = FormParser()
    p.feed(page.text)
    assert len(p.forms) == 1, f"expected one form on {page.url}: {page.text[:500]}"
    form = p.forms[0]
    form["action_url"] = urllib.parse.urljoin(str(page.url), form["action"] or str(page.url))
    return form


@dataclass
class Door:
    backend: object
    base_url: str
    _server: object = None
    _browsers: list = field(default_factory=list)   # closed with the door: no socket left to the collector

    def api(self, method: str, path: str, body=None, secret: str | None = None) -> ApiResult:
        b = self.backend
        if b.kind == "remote":
            return b.api(method, path, body, secret=secret)
        secret = b.owner_token if secret is None else secret
        payload = json.loads(json.dumps(body)) if body is not None else None
        resp = b._engine.handle(method, path, None, payload, secret or None, self.base_url)
        return ApiResult(resp.status, json.loads(json.dumps(resp.body)) if resp.body is not None else None)

    def ok(self, method: str, path: str, body=None, secret: str | None = None):
        r = self.api(method, path, body, secret)
        assert r.status < 300, f"{method} {path} -> {r.status} {r.body}"
        return r.body

    def connect(self, service: str, secret: str | None = None) -> dict:
        r = self.api("POST", "/v1/connections", {"service": service}, secret)
        assert r.status == 201, r.body
        return r.body

    def status(self, conn_id: str, secret: str | None = None) -> dict:
        return self.ok("GET", f"/v1/connections/{conn_id}", secret=secret)

    def signin_link(self, next_path: str, session: str | None = None) -> str:
        return self.ok("POST", "/v1/auth/web-link", {"next": next_path}, secret=session)["url"]

    def browser(self, next_path: str = "/", session: str | None = None, follow: bool = True
                ) -> tuple[httpx.Client, httpx.Response]:
        """A cookie-keeping client signed in as `session`'s member (default: the owner), on next_path."""
        b = httpx.Client(trust_env=False, follow_redirects=follow, timeout=30)
        self._browsers.append(b)
        page = b.get(self.signin_link(next_path, session))
        return b, page

    def close(self):
        for b in self._browsers:
            b.close()
        if self._server is not None:
            self._server.__exit__(None, None, None)


def open_door(backend) -> Door:
    if backend.kind == "remote":
        return Door(backend, backend.base_url)
    from workspacectl.server.loopback import LoopbackServer

    server = LoopbackServer(backend._engine).__enter__()
    return Door(backend, server.url, server)


def path_of(url: str) -> str:
    return urllib.parse.urlsplit(url).path


def credential_ids(door: Door, secret: str | None = None) -> list[str]:
    return [c["id"] for c in door.ok("GET", "/v1/credentials", secret=secret)["credentials"]]
