"""The authenticated proxy (issue 30): /v1/credentials/:id/proxy/{path} on every door, against a
real HTTP service on loopback (tests/proxy_upstream.py) and the real OAuth provider.

Calls go through the backends the CLI uses (LocalBackend in-process, RemoteBackend over HTTP to a
real `wsctl serve` on SQLite or PostgreSQL); the path tricks a client library would tidy away are
sent byte for byte with http.client.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import io
import json
import threading
import urllib.parse

import pytest

from tests.proxy_upstream import Upstream
from tests.vault_helpers import install_service, make_credential, member_with_session

HEADER_TOML = """
service = "px-header"
name = "Header key service"
description = "A key in a header."
credentialType = "apiKey"
baseUrl = "{base}"
auth = {{ type = "header", name = "X-Api-Key", headers = {{ "X-Version" = "2" }} }}
pagination = {{ cursorPath = "meta.next", cursorParam = "cursor" }}
"""
QUERY_TOML = """
service = "px-query"
name = "Query key service"
description = "A key in the query."
credentialType = "apiKey"
baseUrl = "{base}"
auth = {{ type = "query", name = "key" }}
"""
BASIC_TOML = """
service = "px-basic"
name = "Basic service"
description = "HTTP Basic, like Twilio."
credentialType = "apiKey"
fields = ["accountSid"]
secretFields = ["authToken"]
baseUrl = "{base}"
auth = {{ type = "basic", username = "accountSid", password = "authToken" }}
"""
INSTANCE_TOML = """
service = "px-instance"
name = "Instance service"
description = "Its host is the credential's instanceUrl."
credentialType = "apiKey"
fields = ["instanceUrl"]
baseUrl = "{{instanceUrl}}/api"
"""
KEY = "key-CANARY-0123456789"


def _install(backend, toml: str, base: str) -> str:
    return install_service(backend.workspace, toml.format(base=base))


class Door:
    """The backend the CLI would use on this door, presenting `secret` (the owner's by default)."""

    def __init__(self, backend, secret: str | None = None):
        self.b = backend
        self.secret = secret or backend.owner_token
        if backend.kind == "remote":
            from workspacectl.backend.remote import RemoteBackend

            self.be = RemoteBackend(backend.base_url, self.secret, attempts=1)
        else:
            from workspacectl.backend.local import LocalBackend

            self.be = LocalBackend.open(backend.workspace, secret=self.secret)

    def close(self):
        if self.b.kind == "remote":
            self.be.http.close()
        else:
            self.be.close()

    def call(self, method: str, cred: str, path: str, *, reason: str | None = "tests", query=None, headers=None,
             body: bytes | None = None, stream=None, length: int | None = None):
        """(status, headers, body bytes) of one proxied call; our own refusals raise ApiError."""
        h = dict(headers or {})
        if reason is not None:
            h["X-Wsctl-Reason"] = reason
        data = stream if stream is not None else (io.BytesIO(body) if body is not None else None)
        if body is not None and length is None:
            length = len(body)
        ans = self.be.proxy(method, f"/v1/credentials/{cred}/proxy/{path}", list((query or {}).items()), h, data,
                            length)
        try:
            return ans.status, ans.headers, b"".join(ans.chunks)
        finally:
            ans.close()


@pytest.fixture
def upstream():
    with Upstream() as up:
        yield up


def _log(backend, cred_id: str) -> list[dict]:
    return backend.ok("GET", f"/v1/credentials/{cred_id}/access-log")["entries"]


def _headers(pairs) -> dict:
    out: dict = {}
    for k, v in pairs:
        out.setdefault(k.lower(), []).append(v)
    return out


def test_every_auth_kind_and_the_headers_that_cross(backend, upstream):
    """Header (with the definition's extra header, which the caller may override), query, Basic and
    Bearer (an apiKey default; OAuth in the refresh tests): each reaches the service presented as
    [auth] says, the caller's own wsctl key and cookies do not, nor can the caller replace the
    credential's header or parameter; the answer's hop-by-hop, cookie, challenge, X-Wsctl-* and
    credential-echoing headers are gone."""
    base = upstream.url + "/api"
    owner = backend.owner["id"]
    creds = {}
    # through the admin import route: [pagination] is checked and kept
    bad = HEADER_TOML.format(base=base).replace('cursorParam = "cursor"', 'cursorParam = "a b"')
    r = backend.api("POST", "/v1/admin/catalog", {"content": bad, "format": "toml"})
    assert r.status == 400 and "pagination.cursorParam" in r.body["error"]["message"]
    assert backend.api("POST", "/v1/admin/catalog", {"content": HEADER_TOML.format(base=base),
                                                     "format": "toml"}).status == 201
    assert backend.ok("GET", "/v1/integrations/px-header")["pagination"] == {"cursorPath": "meta.next",
                                                                              "cursorParam": "cursor"}
    creds["header"] = make_credential(backend.workspace, owner, "px-header", {"apiKey": KEY})
    creds["query"] = make_credential(backend.workspace, owner, _install(backend, QUERY_TOML, base), {"apiKey": KEY})
    creds["basic"] = make_credential(backend.workspace, owner, _install(backend, BASIC_TOML, base),
                                     {"authToken": KEY}, fields={"accountSid": "AC123"})
    from tests.vault_helpers import APIKEY_TOML

    creds["bearer"] = make_credential(backend.workspace, owner, _install(backend, APIKEY_TOML, base), {"apiKey": KEY})
    expected = {
        "header": lambda r: r.headers.get("x-api-key") == KEY and r.headers.get("x-version") == "3",
        "query": lambda r: dict(urllib.parse.parse_qsl(r.query)).get("key") == KEY,
        "basic": lambda r: r.headers.get("authorization") == "Basic " + base64.b64encode(f"AC123:{KEY}".encode()).decode(),
        "bearer": lambda r: r.headers.get("authorization") == f"Bearer {KEY}",
    }
    door = Door(backend)
    try:
        for kind, cred in creds.items():
            upstream.accept = expected[kind]
            status, headers, body = door.call("GET", cred["id"], "echo/a%20b/c", query={"q": "1", "key": "mine"},
                                              headers={"Cookie": "wsctl=1", "X-Custom": "kept", "Accept": "*/*",
                                                       "X-Api-Key": "mine", "X-Version": "3"})
            assert status == 200, (kind, body)
            seen = upstream.requests[-1]
            assert seen.path == "/api/echo/a%20b/c"
            assert "cookie" not in seen.headers and seen.headers.get("x-custom") == "kept"
            assert "x-wsctl-reason" not in seen.headers
            assert backend.owner_token not in json.dumps(seen.headers) + seen.query
            q = urllib.parse.parse_qsl(seen.query)
            assert ("q", "1") in q
            if kind == "query":
                assert q.count(("key", "mine")) == 0   # the caller cannot set the parameter the key goes in
            h = _headers(headers)
            assert h["x-kept"] == ["yes"] and h["x-wsctl-upstream-status"] == ["200"]
            for gone in ("set-cookie", "www-authenticate", "keep-alive"):
                assert gone not in h, (kind, gone)
            # an answer header echoing the credential is dropped; the caller's own key is not secret
            assert h.get("x-echo-auth") == (["mine"] if kind == "query" else None), kind
            assert json.loads(body)["ok"] is True
            # Link under the base URL points back through the proxy
            assert h["link"] == [f'</v1/credentials/{cred["id"]}/proxy/echo?page=2>; rel="next"']
        assert "x-wsctl-pagination" not in _headers(headers) or kind != "bearer"
        status, headers, _ = door.call("GET", creds["header"]["id"], "cursor")
        assert _headers(headers)["x-wsctl-pagination"] == ["cursor; path=meta.next; param=cursor"]
    finally:
        door.close()
    entries = _log(backend, creds["basic"]["id"])
    assert entries[0]["outcome"] == "proxied" and entries[0]["method"] == "GET"
    assert entries[0]["path"] == "/echo/a%20b/c" and entries[0]["upstreamStatus"] == 200
    assert entries[0]["reason"] == "tests" and entries[0]["fields"] == ["authToken"]


def test_oauth_401_refreshes_once_and_retries_once(backend, upstream, provider):
    """An upstream 401 refreshes the token once (through the provider) and sends the call once
    more with the new token; a second 401 is answered as is, without another refresh."""
    toml = provider.service_toml().replace(f'baseUrl = "{provider.url}"', f'baseUrl = "{upstream.url}/api"')
    install_service(backend.workspace, toml)
    from tests.vault_helpers import oauth_credential

    cred, grant = oauth_credential(backend, provider)
    first = grant["access_token"]
    upstream.accept = lambda r: r.headers.get("authorization", "").startswith("Bearer ") and \
        r.headers["authorization"][7:] != first and r.headers["authorization"][7:] in provider.all_secrets()
    door = Door(backend)
    try:
        status, _headers, body = door.call("POST", cred["id"], "echo", body=b'{"a": 1}',
                                          headers={"Content-Type": "application/json"})
        assert status == 200, body
        assert provider.refreshes == 1
        assert [r.headers["authorization"][7:] == first for r in upstream.requests] == [True, False]
        assert upstream.requests[-1].body_length == len(b'{"a": 1}')   # the body was sent again whole
        upstream.accept = lambda r: False
        status, _, body = door.call("GET", cred["id"], "echo")
        assert status == 401 and json.loads(body) == {"error": "bad credential"}
        assert provider.refreshes == 2 and len(upstream.requests) == 4   # refreshed once more, sent twice
    finally:
        door.close()
    entries = _log(backend, cred["id"])
    assert [(e["outcome"], e["upstreamStatus"]) for e in entries] == [("proxied", 401), ("proxied", 200)]
    assert entries[0]["fields"] == ["accessToken"]


def test_concurrent_401s_refresh_once(backend, upstream, provider):
    """Four calls answered 401 at once: one refresh (single flight, the token path's), each call
    sent once more with the new token."""
    toml = provider.service_toml().replace(f'baseUrl = "{provider.url}"', f'baseUrl = "{upstream.url}/api"')
    install_service(backend.workspace, toml)
    from tests.vault_helpers import oauth_credential

    cred, grant = oauth_credential(backend, provider)
    first = grant["access_token"]
    upstream.accept = lambda r: r.headers.get("authorization", "")[7:] not in ("", first)
    provider.refresh_delay = 0.3   # the others reach the refresh while the first holds it
    start = threading.Barrier(4)
    results: list = []

    def one():
        door = Door(backend)
        try:
            start.wait(30)
            results.append(door.call("GET", cred["id"], "echo")[0])
        except Exception as e:
            results.append(repr(e))
        finally:
            door.close()

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == [200] * 4 and provider.refreshes == 1


def test_retry_after_within_the_budget_and_nothing_else_replayed(backend, upstream):
    base = upstream.url + "/api"
    cred = make_credential(backend.workspace, backend.owner["id"], _install(backend, HEADER_TOML, base),
                           {"apiKey": KEY})
    door = Door(backend)
    try:
        upstream.script[:] = [(429, {"Retry-After": "0"}), (503, {"Retry-After": "0"})]
        status, _, body = door.call("PUT", cred["id"], "echo", body=b"x" * 1000)
        assert status == 200 and json.loads(body)["length"] == 1000
        assert len(upstream.requests) == 3
        # more than MAX_RETRIES (2): the third 429 is answered
        upstream.script[:] = [(429, {"Retry-After": "0"})] * 3
        status, _headers, _ = door.call("GET", cred["id"], "echo")
        assert status == 429 and len(upstream.requests) == 6
        # a wait past the budget, a 503 without Retry-After, a 500: answered at once
        for answer in [(429, {"Retry-After": "3600"}), (503, {}), (500, {"Retry-After": "0"})]:
            before = len(upstream.requests)
            upstream.script[:] = [answer]
            status, _, _ = door.call("POST", cred["id"], "echo", body=b"{}")
            assert status == answer[0] and len(upstream.requests) == before + 1
            upstream.script.clear()
    finally:
        door.close()
    statuses = [e["upstreamStatus"] for e in _log(backend, cred["id"])]
    assert statuses == [500, 503, 429, 429, 200]


def test_large_bodies_stream_both_ways(backend, upstream):
    """A body larger than the proxy ever keeps is relayed as it arrives, each way: the service sees
    the first half of an upload while the client still holds back the rest, and the client gets
    the first half of an answer while the service still holds back the rest. A proxy that read
    either body whole would wait forever here (each side waits at most 30 s, then fails)."""
    base = upstream.url + "/api"
    cred = make_credential(backend.workspace, backend.owner["id"], _install(backend, HEADER_TOML, base),
                           {"apiKey": KEY})
    half = 2 * 1024 * 1024
    upstream.gate_at = half

    class Upload(io.RawIOBase):
        def __init__(self):
            self.sent = 0

        def read(self, n=-1):
            if self.sent == half and not upstream.received.wait(30):
                raise AssertionError("the service never saw the first half: the proxy held the upload")
            if self.sent >= 2 * half:
                return b""
            n = min(65536, 2 * half - self.sent)
            self.sent += n
            return b"u" * n

    door = Door(backend)
    try:
        status, _, _body = door.call("POST", cred["id"], "upload", stream=Upload(), length=2 * half)
        assert status == 404   # the service's own answer, after reading the whole body
        assert upstream.requests[-1].body_length == 2 * half and upstream.requests[-1].chunks > 2

        upstream.gate = threading.Event()
        ans = door.be.proxy("GET", f"/v1/credentials/{cred['id']}/proxy/big", [("size", str(2 * half))],
                            {"X-Wsctl-Reason": "big"}, None, None)
        got, pieces = 0, 0
        try:
            for chunk in ans.chunks:
                got += len(chunk)
                pieces += 1
                if got >= half and upstream.gate is not None:
                    upstream.gate.set()
        finally:
            ans.close()
        assert got == 2 * half and pieces > 2
    finally:
        door.close()


def test_refusals_leave_the_host_never(backend, upstream):
    """Paths that would leave the base URL, a redirect off the host, a metadata address in the
    credential's instanceUrl, a missing reason, a viewer, an invisible credential, a personal key."""
    base = upstream.url + "/api"
    owner = backend.owner["id"]
    cred = make_credential(backend.workspace, owner, _install(backend, HEADER_TOML, base), {"apiKey": KEY})
    door = Door(backend)
    from workspacectl.errors import ApiError

    def refused(path, code, **kw):
        with pytest.raises(ApiError) as e:
            door.call("GET", cred["id"], path, **kw)
        assert e.value.code == code, (path, e.value.message)
        return e.value.message

    try:
        for path in ("..%2f..%2fadmin", "%2e%2e/x", "a/%252e%252e/b", "%2F%2Fevil.example/x", "a%5cb",
                     "http://evil.example/x"):
            assert "Nothing was sent" in refused(path, "invalid_request")
        refused("echo", "invalid_request", reason=None)
        refused("echo", "invalid_request", reason="")
        before = len(upstream.requests)
        # an off-host redirect is refused (on-host ones are followed)
        msg = refused("redirect", "conflict", query={"to": "http://localhost.example:1/x"})
        assert "another host" in msg
        status, _, body = door.call("GET", cred["id"], "redirect", query={"to": "/api/echo/moved", "code": "302"})
        assert status == 200 and json.loads(body)["path"] == "/api/echo/moved"
        assert len(upstream.requests) == before + 3
        # the link-local / metadata rules of catalog import, on the credential's own instanceUrl
        inst = _install(backend, INSTANCE_TOML, base)
        bad = make_credential(backend.workspace, owner, inst, {"apiKey": KEY},
                              fields={"instanceUrl": "http://169.254.169.254"})
        with pytest.raises(ApiError) as e:
            door.call("GET", bad["id"], "latest/meta-data")
        assert e.value.code == "conflict" and "link-local" in e.value.message
        sneaky = make_credential(backend.workspace, owner, inst, {"apiKey": KEY},
                                 fields={"instanceUrl": "http://user@169.254.169.254"})
        with pytest.raises(ApiError) as e:
            door.call("GET", sneaky["id"], "x")
        assert e.value.code == "conflict"
        good = make_credential(backend.workspace, owner, inst, {"apiKey": KEY}, fields={"instanceUrl": upstream.url})
        assert door.call("GET", good["id"], "echo")[0] == 200
        assert upstream.requests[-1].path == "/api/echo"
    finally:
        door.close()
    assert len(upstream.requests) == before + 4
    # a viewer is refused and logged; another member sees nothing; a personal key has no scope
    viewer, vsession = member_with_session(backend, "viewer@example.com")
    backend.ok("PUT", f"/v1/credentials/{cred['id']}/sharing", {"membershipId": viewer["id"], "role": "viewer"})
    _stranger, ssession = member_with_session(backend, "stranger@example.com")
    for secret, code in ((vsession, "forbidden"), (ssession, "not_found"),
                         (backend.key("personal", ["memory:manage"]), "insufficient_scope")):
        d = Door(backend, secret)
        try:
            with pytest.raises(ApiError) as e:
                d.call("GET", cred["id"], "echo")
            assert e.value.code == code
            with pytest.raises(ApiError) as e:   # refused before a large body is read: still that answer
                d.call("PUT", cred["id"], "echo", body=b"z" * (3 << 20))
            assert e.value.code == code
        finally:
            d.close()
    assert len(upstream.requests) == before + 4
    # a key limited to named credentials reaches only those through the proxy (404 for the others)
    other = make_credential(backend.workspace, owner, cred["service"], {"apiKey": KEY})
    limited = backend.ok("POST", "/v1/keys", {"kind": "platform", "scopes": ["vault:token"], "name": "one",
                                              "credentials": [other["id"]]})["secret"]
    d = Door(backend, limited)
    try:
        with pytest.raises(ApiError) as e:
            d.call("GET", cred["id"], "echo")
        assert e.value.code == "not_found"
        assert d.call("GET", other["id"], "echo")[0] == 200
    finally:
        d.close()
    assert len(upstream.requests) == before + 5
    entries = _log(backend, cred["id"])
    assert entries[0]["outcome"] == "refused" and entries[0]["membershipId"] == viewer["id"]
    outcomes = [e["outcome"] for e in entries]
    assert outcomes.count("refused") == 2 + 6 and outcomes.count("failed") == 1   # the off-host redirect
    assert [e["method"] for e in entries[:2]] == ["PUT", "GET"] and all(e["method"] == "GET" for e in entries[2:])


def test_raw_path_tricks_over_http(backend, upstream):
    """What a client library would normalise away, sent as raw bytes to a real server."""
    if backend.kind != "remote":
        pytest.skip("raw HTTP request lines: the server doors")
    cred = make_credential(backend.workspace, backend.owner["id"],
                           _install(backend, HEADER_TOML, upstream.url + "/api"), {"apiKey": KEY})
    host, port = urllib.parse.urlsplit(backend.base_url).netloc.split(":")
    for tail in ("../../v1/keys", "a/../../x", "a/./b", "/evil.example/x", "//evil.example/x", "%2e%2e/%2e%2e/x"):
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            conn.putrequest("GET", f"/v1/credentials/{cred['id']}/proxy/{tail}?reason=t", skip_accept_encoding=True)
            conn.putheader("Authorization", f"Bearer {backend.owner_token}")
            conn.endheaders()
            r = conn.getresponse()
            body = json.loads(r.read())
        finally:
            conn.close()
        assert r.status == 400 and body["error"]["code"] == "invalid_request", (tail, body)
    assert upstream.requests == []
    # the reason as a query parameter is not forwarded; the rest of the query is, as sent
    import httpx

    r = httpx.get(f"{backend.base_url}/v1/credentials/{cred['id']}/proxy/echo?reason=why&a=1&a=2&b=%C3%A9",
                  headers={"Authorization": f"Bearer {backend.owner_token}"}, timeout=30)
    assert r.status_code == 200 and upstream.requests[-1].query == "a=1&a=2&b=%C3%A9"
    assert _log(backend, cred["id"])[0]["reason"] == "why"
    digest = hashlib.sha256(b"").hexdigest()
    assert r.json()["sha256"] == digest
