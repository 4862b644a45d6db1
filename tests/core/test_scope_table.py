"""CONTRACT §2 scope and key-kind rules, driven by engine/scopes.py ROUTE_SCOPES itself.

Every route of the table is called with dummy ids (none exist), so a route added to the table is
covered without touching this file, handler or not. One test per backend loops over the table.
"""
from __future__ import annotations

from tests.api_helpers import assert_error, assert_error_body, fill, kind_of_scope
from workspacectl.engine.scopes import (
    AUTHENTICATED,
    KIND_SCOPES,
    PERSONAL_SCOPES,
    PLATFORM_SCOPES,
    PUBLIC,
    ROUTE_SCOPES,
    SESSION,
    is_vault_scope,
)

INSUFFICIENT = "Insufficient scope"
LAST = ("DELETE", "/v1/auth/session")  # revokes the session that calls it: run it last


def _passes(r, what: str) -> None:
    """Got past authentication and the scope check: whatever the handler answers, not 401/403-scope/500."""
    assert r.status < 500, f"{what}: {r.status} {r.body}"
    assert r.status != 401, f"{what}: {r.body}"
    if r.status >= 400:
        assert_error_body(r.body, r.status)
        assert r.body["error"]["code"] != "insufficient_scope", f"{what}: {r.body}"


def _refused(r, what: str) -> None:
    assert r.status == 403, f"{what}: expected 403, got {r.status} {r.body}"
    assert_error(r, 403, "insufficient_scope", INSUFFICIENT)


def test_every_route_of_the_scope_table(backend):
    every = {k: backend.key(k, KIND_SCOPES[k]) for k in KIND_SCOPES}
    lacking = {s: backend.key(kind_of_scope(s), [x for x in KIND_SCOPES[kind_of_scope(s)] if x != s])
               for s in PLATFORM_SCOPES + PERSONAL_SCOPES}
    only = {s: backend.key(kind_of_scope(s), [s]) for s in PLATFORM_SCOPES + PERSONAL_SCOPES}
    session = backend.session()
    routes = sorted(ROUTE_SCOPES.items(), key=lambda kv: kv[0] == LAST)
    assert routes[-1][0] == LAST
    checked = 0
    for (method, template), required in routes:
        path = fill(template)
        what = f"{method} {template} ({required})"
        if required != PUBLIC:
            for secret in ("", "ws_platform_" + "A" * 40, "ws_personal_" + "b" * 40, "ws_session_" + "0" * 40,
                           "not-a-key"):
                assert_error(backend.api(method, path, {}, secret=secret), 401, "unauthenticated")
        if required == SESSION:
            # Keys of either kind, even holding every scope of their kind.
            _refused(backend.api(method, path, {}, secret=every["platform"]), what + " platform key")
            _refused(backend.api(method, path, {}, secret=every["personal"]), what + " personal key")
        elif required == AUTHENTICATED:
            _passes(backend.api(method, path, {}, secret=every["platform"]), what)
            _passes(backend.api(method, path, {}, secret=every["personal"]), what)
        elif required != PUBLIC:
            kind = kind_of_scope(required)
            other = "personal" if kind == "platform" else "platform"
            # The other kind holding all its scopes; a body that is not even JSON is not looked at.
            _refused(backend.api(method, path, secret=every[other], raw=b"{not json"), what + f" {other} key")
            _refused(backend.api(method, path, {}, secret=every[other]), what + f" {other} key")
            if is_vault_scope(required) or required == "docs:read":
                assert other == "personal"
            # Its own kind, every scope but this one (e.g. docs:read only on a vault:token route).
            _refused(backend.api(method, path, {}, secret=lacking[required]), what + " key lacking it")
            _passes(backend.api(method, path, {}, secret=only[required]), what + " key holding it")
        # A session passes every scope check (seed, Authentication rule 1).
        _passes(backend.api(method, path, {}, secret=session), what + " session")
        checked += 1
    assert checked == len(ROUTE_SCOPES)
    # DELETE /v1/auth/session was the session's last call: it is revoked now.
    assert_error(backend.api("GET", "/v1/auth/whoami", secret=session), 401, "unauthenticated")


def test_openapi_lists_every_route_of_the_table(backend):
    r = backend.api("GET", "/v1/openapi.json", secret="")
    assert r.status == 200, r.body
    listed = {(m.upper(), p) for p, ops in r.body["paths"].items() for m in ops}
    assert listed == set(ROUTE_SCOPES)
    for (method, path), scope in ROUTE_SCOPES.items():
        assert r.body["paths"][path][method.lower()]["x-wsctl-scope"] == scope
