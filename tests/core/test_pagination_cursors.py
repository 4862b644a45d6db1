"""Forged cursors: every paginated route answers 400 (exit 7 through the CLI), never a 500.

The routes are found from /v1/openapi.json (every GET with a `cursor` query parameter), so a list
added later is covered without touching this file. A cursor of 3,000 '[' made the JSON decoder
recurse until it raised RecursionError: a 500 over HTTP and exit 1 locally."""
from __future__ import annotations

import base64

import pytest

from tests.skill_helpers import create as create_skill
from tests.vault_helpers import make_credential


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


FORGED = {
    "deep-nesting": b64(b"[" * 3000),
    "deep-objects": b64(b'{"a":' * 2000 + b"1" + b"}" * 2000),
    "huge": b64(b'"' + b"x" * 20_000 + b'"'),   # under the HTTP client's 64 KiB URL bound
    "wrong-shape": b64(b'{"id": "cred_x"}'),
    "nested-list": b64(b'[["a"], 1]'),
    "bool": b64(b"true"),
    "float-huge": b64(b"1e999999"),
    "int-huge": b64(b"123456789012345678901234567890"),
    "not-base64": "%%%***",
    "not-utf8": b64(b'"\xff\xfe"'),
    "lone-surrogate": b64(b'"\\ud800"'),
    "non-ascii": "curs\u00f6r",
}


def paginated_paths(backend) -> list[str]:
    doc = backend.ok("GET", "/v1/openapi.json")
    paths = [p for p, ops in doc["paths"].items()
             if any(q.get("name") == "cursor" for q in ops.get("get", {}).get("parameters", []))]
    assert len(paths) >= 12, paths   # the twelve lists the review found, and any added since
    return paths


def fill(backend, path: str) -> str:
    """A real resource for each path parameter, so the cursor is what gets checked."""
    if "{" not in path:
        return path
    if path.startswith("/v1/credentials/"):
        cred = make_credential(backend.workspace, backend.owner["id"], "openai", {"apiKey": "sk-CANARY-1"})
        return path.replace("{id}", cred["id"])
    if path.startswith("/v1/integrations/"):
        return path.replace("{service}", "slack")
    if path.startswith("/v1/memory/"):
        return path.replace("{ownerType}", "organization")
    if path.startswith("/v1/projects/"):
        pid = backend.ok("POST", "/v1/projects", {"name": "Cursors"})["project"]["id"]
        return path.replace("{id}", pid)
    if path.startswith("/v1/skills/"):
        return path.replace("{id}", create_skill(backend, "cursor-skill")["id"])
    if path.startswith("/v1/webhooks/"):   # a subscription to a loopback port nothing listens on
        hook = backend.ok("POST", "/v1/webhooks", {"url": "http://127.0.0.1:9/hook", "events": ["*"]})
        return path.replace("{id}", hook["id"])
    raise AssertionError(f"test does not know how to fill {path}: add it here")


def test_forged_cursors_are_400_on_every_paginated_route(backend):
    for path in paginated_paths(backend):
        url = fill(backend, path)
        assert backend.api("GET", url).status == 200, url
        for name, cursor in FORGED.items():
            r = backend.api("GET", url, query={"cursor": cursor})
            assert r.status == 400 and r.code == "invalid_request", (url, name, r.status, r.body)


@pytest.mark.parametrize("args", [["vault", "list"], ["members", "list"], ["specialist", "list"],
                                  ["skill", "list"], ["trigger", "list"]])
def test_a_forged_cursor_through_wsctl_api_exits_7(backend, args):
    route = {"vault": "/v1/credentials", "members": "/v1/members", "specialist": "/v1/projects",
             "skill": "/v1/skills", "trigger": "/v1/triggers"}[args[0]]
    r = backend.wsctl("api", "GET", f"{route}?cursor={FORGED['deep-nesting']}", expect=7)
    assert "cursor" in r.err and "Traceback" not in r.err


def test_real_cursors_still_page_through(backend):
    for i in range(3):
        backend.ok("POST", "/v1/projects", {"name": f"Paged {i}"})
    seen, cursor = [], None
    while True:
        body = backend.ok("GET", "/v1/projects", query={"limit": "1", **({"cursor": cursor} if cursor else {})})
        seen += [p["name"] for p in body["projects"]]
        cursor = body["nextCursor"]
        if not cursor:
            break
    assert sorted(seen) == ["Paged 0", "Paged 1", "Paged 2"]
    triggers = backend.ok("GET", "/v1/triggers", query={"limit": "2"})
    nxt = backend.ok("GET", "/v1/triggers", query={"limit": "2", "cursor": triggers["nextCursor"]})
    assert nxt["triggers"] and nxt["triggers"][0]["triggerId"] != triggers["triggers"][0]["triggerId"]
