"""Errors that say where (issue 12 item 6), against real loopback servers that misbehave and a
real `wsctl serve`: a server that is not a workspace server, `--server .../v1`, a stored token
withheld from another server, `--debug` anywhere on the line with secrets redacted, and retries
of idempotent requests only. HTTP-only behaviours: the remote door.
"""
from __future__ import annotations

import json
import re
import socket
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.cli_helpers import one_error_line, read_toml
from tests.conftest import NO_BACKOFF, base_env, free_port, make_backend, run_wsctl

FAKE = "ws_session_" + "C4NARYt0ken" * 4


class Misbehaving:
    """A loopback HTTP server answering with `script(method, path, n)` (n counts that method and
    path from 1): (status, content type, body bytes), or None to close the connection unanswered."""

    def __init__(self, script):
        self.calls: Counter = Counter()
        self.headers: list = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                key = (self.command, self.path.split("?")[0])
                outer.calls[key] += 1
                outer.headers.append(dict(self.headers))
                answer = script(self.command, key[1], outer.calls[key])
                if answer is None:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                status, ctype, body = answer
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _answer

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


HTML = b"<!doctype html><html><body>Welcome to nginx!</body></html>"
LIST = json.dumps({"credentials": [], "nextCursor": None}).encode()


def wsctl_at(url: str, home, *args, expect, extra: dict | None = None):
    """`wsctl *args` against `url`; retries go at once (NO_BACKOFF) unless `extra` says otherwise."""
    env = {**base_env(home), "WSCTL_SERVER": url, "WSCTL_TOKEN": FAKE, **NO_BACKOFF, **(extra or {})}
    return run_wsctl(list(args), env, expect=expect)


@pytest.mark.parametrize("answer, shown", [
    ((200, "text/html; charset=utf-8", HTML), "HTTP 200 (text/html)"),
    ((404, "text/html", HTML), "HTTP 404 (text/html)"),
    ((404, "application/json", b'{"detail": "Not Found"}'), "HTTP 404 (application/json)"),
    ((200, "application/json", b'["not", "our", "api"]'), "HTTP 200 (application/json)"),
    ((401, "text/plain", b"go away"), "HTTP 401 (text/plain)"),
])
def test_a_server_that_is_not_a_workspace_server_is_named(tmp_path, answer, shown):
    with Misbehaving(lambda m, p, n: answer) as srv:
        r = wsctl_at(srv.url, tmp_path / "h", "vault", "list", expect=8)
    line = one_error_line(r)
    assert f"{srv.url}/v1/credentials" in line and "is not a workspace server" in line, line
    assert shown in line and "--server" in line, line
    assert FAKE not in r.err and srv.calls[("GET", "/v1/credentials")] == 1


def test_server_urls_ending_in_v1_name_the_same_server(server_pool, home, tmp_path):
    ws, server = server_pool.take()
    b = make_backend("remote", ws, home, server=server)
    try:
        for url in (b.base_url + "/v1", b.base_url + "/v1/"):
            r = run_wsctl(["auth", "whoami", "--json"], {**b.env, "WSCTL_SERVER": url})
            assert r.json["member"]["id"] == b.owner["id"]
        client = tmp_path / "client"
        code = b.ok("POST", f"/v1/members/{b.owner['id']}/login-codes")["code"]
        run_wsctl(["auth", "login", "--server", b.base_url + "/v1/", "--code", code], base_env(client))
        assert read_toml(client / "config.toml")["profiles"]["default"] == {"server": b.base_url}
        # the token was stored for this server: WSCTL_SERVER spelt with /v1 still sends it
        r = run_wsctl(["auth", "status", "--json"], {**base_env(client), "WSCTL_SERVER": b.base_url + "/v1"})
        assert r.json["signedIn"] is True and r.json["tokenSource"] == "credentials file"
    finally:
        b.close()


def test_a_token_withheld_from_another_server_says_so_and_what_to_pass(server_pool, home, tmp_path):
    ws, server = server_pool.take()
    b = make_backend("remote", ws, home, server=server)
    try:
        client = tmp_path / "client"
        env = base_env(client)
        code = b.ok("POST", f"/v1/members/{b.owner['id']}/login-codes")["code"]
        run_wsctl(["auth", "login", "--server", b.base_url, "--code", code], env)
        token = read_toml(client / "credentials.toml")["profile:default"]
        unauthorized = json.dumps({"error": {"status": 401, "code": "unauthenticated",
                                             "message": "Authentication required."}}).encode()
        with Misbehaving(lambda m, p, n: (401, "application/json", unauthorized)) as other:
            r = run_wsctl(["vault", "list"], {**env, "WSCTL_SERVER": other.url}, expect=3)
            status = run_wsctl(["auth", "status", "--json"], {**env, "WSCTL_SERVER": other.url}, expect=3)
        line = one_error_line(r)
        assert f"holds a token for {b.base_url}" in line and f"Not signed in to {other.url}" in line, line
        assert f"wsctl auth login --server {other.url}" in line and "WSCTL_TOKEN" in line, line
        assert "unset WSCTL_SERVER" in line and token not in r.err
        assert all("Authorization" not in h for h in other.headers), other.headers
        assert status.json["tokenSource"] == "withheld" and "holds a token for" in status.json["error"]
    finally:
        b.close()


DEBUG_LINE = re.compile(r"^debug: (GET|POST|PUT|DELETE|HEAD) (\S+) -> (.+) \((\d+) ms\)(.*)$")


def test_debug_anywhere_on_the_line_traces_each_request_redacted(server_pool, home):
    ws, server = server_pool.take()
    b = make_backend("remote", ws, home, server=server)
    try:
        token = b.env["WSCTL_TOKEN"]
        r = b.wsctl("vault", "list", "--debug")
        lines = [DEBUG_LINE.match(x) for x in r.err.splitlines() if x.startswith("debug:")]
        assert [(m[1], m[2], m[3]) for m in lines] == [
            ("GET", f"{b.base_url}/v1/credentials?limit=500", "200 application/json")], r.err
        # WSCTL_DEBUG=1 is the same; query values not known to be harmless read ***
        r = b.wsctl("api", "GET", "/v1/credentials?limit=2&api_key=CANARYvalue", env={"WSCTL_DEBUG": "1"})
        assert f"GET {b.base_url}/v1/credentials?limit=2&api_key=*** -> 200" in r.err, r.err
        for out in (r.err, r.out):
            assert "CANARYvalue" not in out and token not in out
        # without it, nothing is traced; after `--` the word belongs to the other program
        assert "debug:" not in b.wsctl("vault", "list").err
    finally:
        b.close()


def test_debug_on_the_local_door_traces_each_engine_call(workspace, home):
    env = {**base_env(home), "WSCTL_WORKSPACE": str(workspace)}
    r = run_wsctl(["vault", "show", "cred_missing", "--debug"], env, expect=5)
    assert "debug: GET local:/v1/credentials/cred_missing -> 404 not_found (" in r.err, r.err
    r = run_wsctl(["--json", "vault", "list"], {**env, "WSCTL_DEBUG": "1"})
    assert re.search(r"^debug: GET local:/v1/credentials\?limit=500 -> 200 \(\d+ ms\)$", r.err, re.M), r.err
    assert json.loads(r.out)["credentials"] == []


def test_debug_redaction_is_default_deny():
    from workspacectl.backend.http_trace import redact_url

    assert redact_url("https://u:pw@h.example:8443/blobs/download/eyJhbGci.SiGnAtUrE?x=1") == \
        "https://h.example:8443/blobs/download/***?x=***"
    assert redact_url("http://h/connect/tok3n-value") == "http://h/connect/***"
    assert redact_url("http://h/v1/skills/skl_1/file-url?path=SKILL.md&sig=abc") == \
        "http://h/v1/skills/skl_1/file-url?path=SKILL.md&sig=***"


def test_idempotent_requests_retry_gateway_errors_and_broken_connections(tmp_path):
    # a gateway's 503 page twice, then the answer: one command, three requests, exit 0
    def script(m, p, n):
        return (503, "text/html", HTML) if n <= 2 else (200, "application/json", LIST)

    with Misbehaving(script) as srv:
        r = wsctl_at(srv.url, tmp_path / "h", "vault", "list", "--json", "--debug", expect=0)
        assert srv.calls[("GET", "/v1/credentials")] == 3
    assert json.loads(r.out)["credentials"] == []
    assert r.err.count("-> 503 text/html") == 2 and r.err.count("trying again in") == 2, r.err

    # always 503: a bounded number of tries, then one line naming what answered (exit 8)
    with Misbehaving(lambda m, p, n: (503, "text/html", HTML)) as srv:
        r = wsctl_at(srv.url, tmp_path / "h", "vault", "list", expect=8)
        assert srv.calls[("GET", "/v1/credentials")] == 4
    assert "HTTP 503 (text/html)" in one_error_line(r)

    # a GET whose connection breaks mid-way is tried again; a POST that may have landed is not
    with Misbehaving(lambda m, p, n: None) as srv:
        r = wsctl_at(srv.url, tmp_path / "h", "vault", "list", expect=8)
        assert srv.calls[("GET", "/v1/credentials")] == 4
        r = wsctl_at(srv.url, tmp_path / "h", "members", "add", "x@example.com", "--name", "X", expect=8)
        assert srv.calls[("POST", "/v1/members")] == 1
    line = one_error_line(r)   # it was reachable: the connection broke, and the POST may have landed
    assert "broke during POST /v1/members" in line and "may or may not have taken effect" in line


def test_our_own_gateway_status_is_an_answer_not_retried(tmp_path):
    upstream = json.dumps({"error": {"status": 502, "code": "upstream_failed",
                                     "message": "The provider refused the refresh."}}).encode()
    with Misbehaving(lambda m, p, n: (502, "application/json", upstream)) as srv:
        r = wsctl_at(srv.url, tmp_path / "h", "vault", "list", expect=1)
        assert srv.calls[("GET", "/v1/credentials")] == 1
    assert one_error_line(r) == "error: The provider refused the refresh."


WAIT = re.compile(r"trying again in (\d+\.\d\d) s")


def test_a_connection_never_opened_is_tried_again_even_for_a_post(tmp_path):
    """On the default backoff (the one command of the suite that waits it out): 0.25, 0.75 and 1.5 s
    before the further tries, each plus up to 25% jitter, as the trace says."""
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    r = wsctl_at(url, tmp_path / "h", "members", "add", "x@example.com", "--name", "X", "--debug", expect=8,
                 extra={"WSCTL_RETRY_BACKOFF_MS": ""})
    tries = [x for x in r.err.splitlines() if x.startswith("debug: POST") and "ConnectError" in x]
    assert len(tries) == 4, r.err
    waits = [float(m[1]) for x in tries if (m := WAIT.search(x))]
    assert len(waits) == 3 and all(base <= w <= base * 1.25 + 0.005 for w, base in zip(waits, (0.25, 0.75, 1.5))), waits
    assert f"Cannot reach the server at {url}" in r.err.splitlines()[-1]


def test_the_backoff_scales_with_its_setting_and_a_bad_one_is_refused(tmp_path):
    """WSCTL_RETRY_BACKOFF_MS sets the first wait, the others scale with it (3 and 6 times); 0 tries
    again at once, as many times; anything else is one line, exit 7, nothing sent."""
    url = f"http://127.0.0.1:{free_port()}"
    for setting, bases in (("40", (0.04, 0.12, 0.24)), ("0", (0, 0, 0))):
        r = wsctl_at(url, tmp_path / "h", "vault", "list", "--debug", expect=8,
                     extra={"WSCTL_RETRY_BACKOFF_MS": setting})
        tries = [x for x in r.err.splitlines() if x.startswith("debug: GET") and "ConnectError" in x]
        assert len(tries) == 4, r.err
        waits = [float(m[1]) for x in tries if (m := WAIT.search(x))]
        assert len(waits) == 3 and all(b <= w <= b * 1.25 + 0.005 for w, b in zip(waits, bases)), (setting, waits)
    with Misbehaving(lambda m, p, n: (200, "application/json", LIST)) as srv:
        for bad in ("-1", "0.5", "60001", "soon", "\u0661"):
            r = wsctl_at(srv.url, tmp_path / "h", "vault", "list", expect=7, extra={"WSCTL_RETRY_BACKOFF_MS": bad})
            assert "WSCTL_RETRY_BACKOFF_MS must be a whole number of milliseconds from 0 to 60000" in one_error_line(r)
        assert not srv.calls


def test_the_waits_before_each_further_try(monkeypatch):
    """The default waits and how a gateway's Retry-After counts, without waiting them out."""
    from workspacectl.backend import remote
    from workspacectl.errors import ApiError

    class Answer:   # what _delay reads of a response: its headers
        def __init__(self, retry_after):
            self.headers = {"retry-after": retry_after}

    for attempt, base in enumerate((0.25, 0.75, 1.5, 1.5)):
        waits = [remote._delay(attempt, None) for _ in range(50)]
        assert all(base <= w <= base * 1.25 for w in waits), waits
        assert remote._delay(attempt, None, 0.0) == 0
    assert remote._delay(0, Answer("3")) == 3.0                       # longer than the backoff: honoured
    assert remote._delay(0, Answer("600")) == remote.MAX_RETRY_AFTER   # capped
    assert remote._delay(0, Answer("600"), 0.2) == remote.MAX_RETRY_AFTER * 0.2
    assert remote._delay(0, Answer("soon"), 0.0) == 0.0
    monkeypatch.delenv("WSCTL_RETRY_BACKOFF_MS", raising=False)
    assert remote.backoff_scale() == 1.0
    for raw, scale in (("250", 1.0), ("0", 0.0), ("500", 2.0), ("60000", 240.0)):
        monkeypatch.setenv("WSCTL_RETRY_BACKOFF_MS", raw)
        assert remote.backoff_scale() == scale
    monkeypatch.setenv("WSCTL_RETRY_BACKOFF_MS", "-5")
    with pytest.raises(ApiError, match="from 0 to 60000"):
        remote.backoff_scale()
