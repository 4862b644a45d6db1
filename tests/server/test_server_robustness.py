"""No input produces a 500, and every error answers {"error": {"status", "code", "message"}}.

Table-driven garbage through both backends; HTTP-only edges (framing, headers, sizes, unknown
paths) against a real `wsctl serve`; and one workspace served and opened in-process at once.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from urllib.parse import urlsplit

import httpx
import pytest

from tests.api_helpers import assert_error, assert_error_body, fill
from tests.conftest import ApiResult, base_env, make_backend, run_wsctl, start_server, wait_until
from workspacectl.engine.scopes import ROUTE_SCOPES
from workspacectl.errors import ApiError
from workspacectl.server.app import MAX_JSON_BODY

# Field names the engine reads from bodies; each set to a value of the wrong kind.
FIELDS = ["code", "name", "email", "role", "kind", "scopes", "expiresAt", "next", "reason", "service", "membershipId",
          "workspace", "credentialId", "inputs", "text", "version", "section", "file", "path", "content", "description",
          "icon", "workerColor", "workerAccessories", "resourceId", "projectId", "uploadId", "baseVersion", "enabled",
          "apiKey", "instanceUrl", "clientId", "clientSecret", "format", "dryRun", "nodes"]
WRONG = [5, -1, 1e308, True, [], {}, ["\ud800"], "\ud800", "\x00", "x" * 3000, {"a": [[{}]]},
         "9999-12-31T23:59:59-01:00", "../../etc/passwd"]
NOT_OBJECTS = [[], [{"a": 1}], "text", 7, 1.5, True]
SKIP = {("DELETE", "/v1/auth/session"), ("POST", "/v1/admin/rotate-key")}  # end the session / slow and unrelated


@pytest.fixture
def remote(home, server_pool):
    ws, server = server_pool.take()
    b = make_backend("remote", ws, home, server=server)
    yield b
    b.close()


def _send(backend, method, path, body, secret=None, query=None):
    """backend.api, but over HTTP the body goes as ASCII JSON bytes, so lone surrogates are sent
    escaped ("\\ud800") as a hostile client would (httpx's json= cannot encode them)."""
    if backend.kind == "local":
        return backend.api(method, path, body, secret=secret, query=query)
    secret = backend.owner_token if secret is None else secret
    headers = {"content-type": "application/json", **({"Authorization": f"Bearer {secret}"} if secret else {})}
    r = backend._http.request(method, path, params=query, headers=headers,
                              content=json.dumps(body).encode() if body is not None else None)
    return ApiResult(r.status_code, r.json() if r.content else None)


def _sane(r, what) -> None:
    assert r.status < 500, f"{what}: {r.status} {r.body}"
    if r.status >= 400:
        assert_error_body(r.body, r.status)


def test_wrong_bodies_on_every_route_never_500(backend):
    mia = backend.add_member("mia@example.com", "Mia")
    assert mia["id"] > backend.owner["id"]
    # Wrong values rotated over the fields, plus bodies that are no object. In-process calls are cheap,
    # so the local door gets more of them; over HTTP the server's own parsing is what is added.
    rotations = 8 if backend.kind == "local" else 4
    bodies = [[], "text", 7] + [{f: WRONG[(i * 3 + j) % len(WRONG)] for j, f in enumerate(FIELDS)}
                                for i in range(rotations)]
    for (method, template), _ in ROUTE_SCOPES.items():
        if (method, template) in SKIP:
            continue
        for ident in ("zz-missing-1", mia["id"]) if "/members/" in template else ("zz-missing-1",):
            path = fill(template, ident)
            for body in bodies:
                _sane(_send(backend, method, path, body), f"{method} {path} {str(body)[:60]}")
        queries = ({"limit": "0"}, {"limit": "99999999999999999999999"}, {"cursor": "%%%"}, {"cursor": "WzEsIDJd"},
                   {"q": "\x00" * 3}, {"path": "../x"})
        for query in queries if method == "GET" else ():
            _sane(backend.api(method, fill(template), None, query=query), f"{method} {template} {query}")
    members = backend.ok("GET", "/v1/members")["members"]
    assert [m["id"] for m in members] == [backend.owner["id"], mia["id"]]  # no garbage became a member


def test_identity_routes_refuse_bad_bodies_with_400(backend):
    """Bodies of the wrong shape on the identity routes: 400 invalid_request, nothing made."""
    before = backend.ok("GET", "/v1/members")["members"]
    keys_before = backend.ok("GET", "/v1/keys")["keys"]
    for path in ("/v1/members", "/v1/keys", "/v1/auth/session", "/v1/auth/web-link"):
        for body in NOT_OBJECTS + [{f: v for f in FIELDS} for v in WRONG]:
            if path == "/v1/auth/session":
                r = _send(backend, "POST", path, body, secret="")
                code = body["code"] if isinstance(body, dict) else None
                if isinstance(code, str) and len(code) <= 64 and "\ud800" not in code and "\x00" not in code:
                    assert_error(r, 401, "unauthenticated")  # a well-formed code that is not one
                    continue
            else:
                r = _send(backend, "POST", path, body)
            assert_error(r, 400, "invalid_request")
    # Lone surrogates and NUL spelled in JSON: 400 on both stores, not a database error.
    for body in ({"email": "a\ud800@x.com", "name": "A"}, {"email": "a@x.com", "name": "\udcff"},
                 {"email": "a@x.com", "name": "A", "\ud800": 1}, {"email": "a@x.com", "name": "A\x00B"},
                 {"email": "a@x.com", "name": "A", "\x00": 1}):
        assert_error(_send(backend, "POST", "/v1/members", body), 400, "invalid_request")
    assert_error(_send(backend, "POST", "/v1/keys", {"kind": "platform", "scopes": ["docs:read"], "name": "\ud800"}),
                 400, "invalid_request")
    assert backend.ok("GET", "/v1/members")["members"] == before
    assert backend.ok("GET", "/v1/keys")["keys"] == keys_before


def test_path_parameters_are_decoded_once(backend):
    """An id holding '%' or an encoded '/' means the same on both doors."""
    odd = backend.add_member("a%41b@example.com", "Odd")
    r = backend.api("POST", "/v1/members/a%2541b%40example.com/login-codes")
    assert r.status == 201, r.body
    r = backend.api("GET", "/v1/triggers/a%2Fb")
    assert_error(r, 404, "not_found")
    assert "a/b" in r.body["error"]["message"]
    assert odd["email"] == "a%41b@example.com"


# --- HTTP only ----------------------------------------------------------------------------------

def _raw(url: str, request: bytes, timeout: float = 60) -> tuple[int, dict, bytes]:
    """Send bytes as they are; answer (status, headers, body)."""
    host, port = urlsplit(url).hostname, urlsplit(url).port
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(request)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def _json_error(status: int, headers: dict, body: bytes, want: int, code: str) -> None:
    assert status == want, (status, body[:300])
    assert headers.get("content-type", "").startswith("application/json"), headers
    err = json.loads(body)
    assert_error_body(err, want)
    assert err["error"]["code"] == code, err


def test_http_edges_answer_the_error_body(remote):
    url, token = remote.base_url, remote.owner_token
    http = remote._http
    auth = {"Authorization": f"Bearer {token}"}
    assert httpx.get(url + "/healthz", trust_env=False).status_code == 200
    spec = httpx.get(url + "/v1/openapi.json", trust_env=False).json()
    assert {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops} == set(ROUTE_SCOPES)

    # Malformed JSON, whatever the content type says; an empty body is no body.
    for content, ctype in ((b"{bad", "application/json"), (b"[1,", "application/json"), (b"\xff\xfe{", "application/json"),
                           (b"{\"a\": NaN", "text/plain"), (b"[" * 100000, "application/json"),
                           (b"{\"a\":" * 50000, "application/json"), (b"\x00\x01", "application/json")):
        r = http.post("/v1/keys", content=content, headers={**auth, "content-type": ctype})
        assert_error(r, 400, "invalid_request")
    r = http.post("/v1/members", content=b"\xff\xfe\x00binary", headers={**auth, "content-type": "application/octet-stream"})
    assert_error(r, 400, "invalid_request")
    # Unauthenticated comes before the body is looked at.
    assert_error(http.post("/v1/keys", content=b"{bad", headers={"content-type": "application/json"}), 401,
                 "unauthenticated")

    # Unknown routes, wrong methods, long paths and queries, odd encodings.
    for method, path in (("GET", "/v1/nope"), ("GET", "/v1/"), ("GET", "/nope"), ("POST", "/v2/keys"),
                         ("GET", "/v1/members/x/y/z"), ("GET", "/v1/" + "a" * 20000), ("GET", "/v1/%ff%fe"),
                         ("GET", "/v1/members/%00"), ("DELETE", "/v1/keys/%ED%A0%80")):
        r = http.request(method, path, headers=auth)
        assert r.status_code == 404, (method, path[:40], r.status_code, r.text[:200])
        assert_error_body(r.json(), 404)
    for method, path in (("PUT", "/v1/members"), ("PATCH", "/v1/keys"), ("DELETE", "/v1/credentials"),
                         ("OPTIONS", "/v1/members"), ("HEAD", "/v1/members"), ("POST", "/healthz")):
        r = http.request(method, path, headers=auth)
        assert r.status_code in (404, 405), (method, path, r.status_code)
        if method != "HEAD":
            assert_error_body(r.json(), r.status_code)
    r = http.get("/v1/members", params={"x" * 50: "y" * 20000, "limit": "2"}, headers=auth)
    assert r.status_code == 200 and len(r.json()["members"]) == 1
    for q in ("limit=%ff", "cursor=%ED%A0%80", "limit=1&limit=%00", "cursor=" + "A" * 30000):
        r = http.get("/v1/members?" + q, headers=auth)
        assert_error(r, 400, "invalid_request")

    # Authorization headers: scheme Bearer (any case), one secret; anything else is 401.
    head = b"GET /v1/auth/whoami HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    for value in (b"", b"Bearer", b"Bearer ", b"Basic " + token.encode(), b"Token " + token.encode(),
                  token.encode(), b"Bearer \xc3\xa9\xff", b"Bearer ws_session_\xff\xfe" + b"a" * 40,
                  b"Bearer " + token.encode() + b" extra", b"Bearer " + b"x" * 8000, b"Bearer\t" + token.encode()):
        _json_error(*_raw(url, head + b"Authorization: " + value + b"\r\n\r\n"), 401, "unauthenticated")
    status, _, body = _raw(url, head + b"Authorization: bearer  " + token.encode() + b" \r\n\r\n")
    assert status == 200 and json.loads(body)["kind"] == "session"

    # Bodies over the limit: 413 with the contract's body, declared or streamed.
    declared = (b"POST /v1/keys HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
                b"Authorization: Bearer " + token.encode() + b"\r\nContent-Length: " + str(MAX_JSON_BODY + 1).encode()
                + b"\r\n\r\n{")
    _json_error(*_raw(url, declared), 413, "payload_too_large")

    def chunks():
        block = b" " * (1024 * 1024)
        for _ in range(MAX_JSON_BODY // len(block) + 2):
            yield block

    try:
        r = http.post("/v1/keys", content=chunks(), headers={**auth, "content-type": "application/json"})
    except httpx.TransportError:  # the server may answer and close before the client has sent it all
        pass
    else:
        assert_error(r, 413, "payload_too_large")
    assert http.get("/v1/auth/whoami", headers=auth).status_code == 200  # and it still serves
    assert "Traceback" not in remote.server.log_text()


def test_requests_too_malformed_for_the_app_still_get_the_error_body(remote):
    """Framing the HTTP layer itself refuses (garbled request line, oversized headers, bad chunks)
    and a body cut off early: 400 with the contract's body, no 500, no traceback in the log."""
    url = remote.base_url
    auth = b"Authorization: Bearer " + remote.owner_token.encode() + b"\r\n"
    for request in (b"GARBAGE\r\n\r\n",
                    b"GET /v1/members HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n",
                    b"GET /v1/members HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
                    b"POST /v1/keys HTTP/1.1\r\nHost: x\r\n" + auth + b"Transfer-Encoding: chunked\r\n"
                    b"Content-Type: application/json\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"):
        _json_error(*_raw(url, request), 400, "invalid_request")
    # A body that stops short of its Content-Length: the client hangs up; the server logs a 400.
    with socket.create_connection((urlsplit(url).hostname, urlsplit(url).port), timeout=60) as s:
        s.sendall(b"POST /v1/keys HTTP/1.1\r\nHost: x\r\n" + auth + b"Content-Length: 100\r\n\r\n{")
    assert remote._http.get("/v1/auth/whoami", headers={"Authorization": f"Bearer {remote.owner_token}"}).status_code == 200
    # the chunked POST and the cut-off one, once the server has noticed
    wait_until(lambda: remote.server.log_text().count("POST /v1/keys 400") >= 2, "two POST /v1/keys 400 log lines",
               log=remote.server.log)
    log = remote.server.log_text()
    assert log.count("POST /v1/keys 400") == 2 and "Traceback" not in log and " 500 " not in log, log[-2000:]


def test_served_workspace_and_in_process_calls_side_by_side(remote, home):
    """`wsctl serve` and in-process engine calls on one folder: each sees the other's writes at once,
    concurrent writers wait for each other instead of failing with "database is locked"."""
    local = make_backend("local", remote.workspace, home)
    try:
        via_http = remote.add_member("http@example.com", "Via Http")
        via_local = local.add_member("local@example.com", "Via Local")
        assert via_local in remote.ok("GET", "/v1/members")["members"]
        assert via_http in local.ok("GET", "/v1/members")["members"]
        # A login code made in-process, redeemed over HTTP; a key made over HTTP, revoked in-process.
        code = local.ok("POST", f"/v1/members/{via_http['id']}/login-codes")["code"]
        session = remote.ok("POST", "/v1/auth/session", {"code": code}, secret="")["token"]
        key = remote.ok("POST", "/v1/keys", {"kind": "personal", "scopes": ["triggers:manage"]}, secret=session)
        assert local.ok("GET", "/v1/auth/whoami", secret=key["secret"])["member"]["id"] == via_http["id"]
        assert local.api("DELETE", f"/v1/keys/{key['id']}").status == 204
        assert_error(remote.api("GET", "/v1/triggers", secret=key["secret"]), 401, "unauthenticated")

        errors: list = []

        def add_many(door, prefix):
            try:
                for i in range(12):
                    r = door.api("POST", "/v1/members", {"email": f"{prefix}{i}@example.com", "name": f"{prefix} {i}"})
                    if r.status != 201:
                        errors.append((prefix, r.status, r.body))
                    door.api("POST", "/v1/keys", {"kind": "platform", "scopes": ["docs:read"], "name": prefix})
            except Exception as e:
                errors.append((prefix, repr(e)))

        threads = [threading.Thread(target=add_many, args=(remote, "h")), threading.Thread(target=add_many, args=(local, "l"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert errors == []
        emails = {m["email"] for m in remote.ok("GET", "/v1/members", query={"limit": "500"})["members"]}
        assert emails == {m["email"] for m in local.ok("GET", "/v1/members", query={"limit": "500"})["members"]}
        assert {f"{p}{i}@example.com" for p in "hl" for i in range(12)} <= emails
        assert len(remote.ok("GET", "/v1/keys")["keys"]) == len(local.ok("GET", "/v1/keys")["keys"]) == 24
    finally:
        local.close()


def test_an_upload_from_a_stranger_is_refused_before_its_body_is_read(remote):
    """A gzip upload announcing 1 GiB with a bad key gets its 401 at once: the server checks the
    key, the route and the scope before it spools a single byte of the body."""
    pid = remote.ok("POST", "/v1/projects", {"name": "Uploads"})["project"]["id"]
    u = urlsplit(remote.base_url)
    cases = [("ws_session_" + "x" * 40, 401, "unauthenticated"),
             (remote.key("platform", ["vault:read"]), 403, "insufficient_scope")]
    for secret, status, code in cases:
        with socket.create_connection((u.hostname, u.port), timeout=60) as s:
            s.sendall((f"POST /v1/projects/{pid}/files/bundle HTTP/1.1\r\nHost: {u.netloc}\r\n"
                       f"Authorization: Bearer {secret}\r\nContent-Type: application/gzip\r\n"
                       f"Content-Length: {1 << 30}\r\n\r\n").encode())
            answer = b""
            while chunk := s.recv(65536):  # no body byte was sent; the server answers and closes
                answer += chunk
        assert answer.startswith(f"HTTP/1.1 {status}".encode()), answer[:200]
        assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"] == code
    assert remote.ok("GET", f"/v1/projects/{pid}/files")["files"] == []


SHORT_BUSY_MS = 2000   # the test's busy timeout (WSCTL_BUSY_TIMEOUT_MS), so a 409 waits 2 s, not 15


@pytest.fixture(params=["local", "remote"])
def short_busy(request, home, workspace, tmp_path, monkeypatch):
    """A backend on a folder workspace whose busy timeout is SHORT_BUSY_MS: set in this process
    (the local door) and given to its own server (the remote door)."""
    busy = {"WSCTL_BUSY_TIMEOUT_MS": str(SHORT_BUSY_MS)}
    monkeypatch.setenv("WSCTL_BUSY_TIMEOUT_MS", busy["WSCTL_BUSY_TIMEOUT_MS"])
    server = None
    if request.param == "remote":
        server = start_server(workspace, {**base_env(tmp_path / "srv-home"), **busy}, log=tmp_path / "busy-server.log")
    b = make_backend(request.param, workspace, home, server=server)
    b.env.update(busy)
    yield b
    b.close()


def test_a_write_lock_held_past_the_busy_timeout_is_409_not_500(short_busy):
    """Another process holding the workspace's write lock for longer than the busy timeout
    (WSCTL_BUSY_TIMEOUT_MS, here 2 s) is not the caller's fault and not a bug: 409 conflict,
    "retry", exit 6 on the command line, and nothing written."""
    import sqlite3

    b = short_busy
    holder = sqlite3.connect(str(b.workspace / "workspace.db"), isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        t0 = time.monotonic()
        r = b.api("POST", "/v1/projects", {"name": "Blocked"})
        assert time.monotonic() - t0 >= SHORT_BUSY_MS / 1000 * 0.9  # it waited for the lock before giving up
        assert_error(r, 409, "conflict")
        assert "retry" in r.body["error"]["message"]
        cli = b.wsctl("specialist", "create", "Blocked too", expect=6)
        assert "retry" in cli.err and len(cli.err.strip().splitlines()) == 1, cli.err
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert b.ok("GET", "/v1/projects")["projects"] == []
    assert b.api("POST", "/v1/projects", {"name": "Now"}).status == 201


def test_a_bad_busy_timeout_setting_is_refused_saying_what_to_do(workspace, home, monkeypatch):
    """WSCTL_BUSY_TIMEOUT_MS that is not a whole number of milliseconds from 1 to an hour: a
    local command exits 7 with one line naming the setting and its range, and `wsctl serve`
    refuses to start the same way; no traceback, nothing served."""
    from workspacectl.engine.db import busy_timeout_ms

    for value in ["abc", "0", "-5", "1.5", "3600001", "１０", "1e3"]:   # each refused in-process ...
        monkeypatch.setenv("WSCTL_BUSY_TIMEOUT_MS", value)
        with pytest.raises(ApiError, match="WSCTL_BUSY_TIMEOUT_MS must be a whole number of milliseconds from 1 to 3600000"):
            busy_timeout_ms()
    monkeypatch.delenv("WSCTL_BUSY_TIMEOUT_MS")
    assert busy_timeout_ms() == 15000
    env = {**base_env(home), "WSCTL_WORKSPACE": str(workspace)}
    for value, args in (("abc", ["specialist", "list"]), ("0", ["serve", "--port", "0"])):   # ... and by wsctl
        r = run_wsctl(args, {**env, "WSCTL_BUSY_TIMEOUT_MS": value}, expect=7)
        assert r.err.strip().splitlines() == [r.err.strip()] and "Traceback" not in r.err, r.err
        assert "WSCTL_BUSY_TIMEOUT_MS must be a whole number of milliseconds from 1 to 3600000" in r.err



@pytest.mark.parametrize("command", [["specialist", "list"], ["serve", "--port", "0"]], ids=["command", "serve"])
def test_bringing_a_workspace_up_to_date_under_a_held_lock_is_409_not_a_database_error(command, workspace, home):
    """A newer wsctl opening a workspace writes once (its built-in catalog, its migrations), as a
    command or as `wsctl serve`. When another process holds the write lock past the busy timeout,
    that is the same 409 "retry" (exit 6, one line) as any other write, never "OperationalError:
    database is locked" with exit 1, and nothing is written; once the lock is free the next
    command brings the workspace up to date."""
    import sqlite3

    env = {**base_env(home), "WSCTL_WORKSPACE": str(workspace), "WSCTL_BUSY_TIMEOUT_MS": str(SHORT_BUSY_MS)}
    holder = sqlite3.connect(str(workspace / "workspace.db"), isolation_level=None)
    read = "SELECT value FROM settings WHERE key = 'catalog.builtin_hash'"
    try:
        # What an older wsctl leaves: another built-in catalog recorded as loaded.
        holder.execute("UPDATE settings SET value = 'an-older-catalog' WHERE key = 'catalog.builtin_hash'")
        assert holder.total_changes == 1
        holder.execute("BEGIN IMMEDIATE")
        try:
            r = run_wsctl(command, env, expect=6, timeout=120)
        finally:
            holder.execute("ROLLBACK")
        assert "retry" in r.err and "OperationalError" not in r.err and "Traceback" not in r.err, r.err
        assert len(r.err.strip().splitlines()) == 1, r.err
        assert holder.execute(read).fetchone()[0] == "an-older-catalog"
        run_wsctl(["specialist", "list"], env)
        assert holder.execute(read).fetchone()[0] != "an-older-catalog"
    finally:
        holder.close()
