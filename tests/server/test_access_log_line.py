"""The access log line of a real `wsctl serve`, written directly to the log stream by the writer
`serve` set up with its logging (access_log.configure_serve_logging): the same fields and layout
as the lines logging writes there (local time with milliseconds, worker prefix, logger name),
then method, redacted path, status, ms; one line per request, secrets out, a control character
in the path still percent-encoded."""
from __future__ import annotations

import re
import socket
from urllib.parse import urlsplit

import httpx

from tests.conftest import base_env, make_backend, start_server, wait_until

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"
LINE = re.compile(rf"^({STAMP}) (w\d+ )?wsctl\.server (\S+) (\S+) (\d{{3}}) (\d+\.\d)ms$")
# a line logging itself wrote: the memory timer's note that this process runs it
TIMER_LINE = re.compile(rf"^({STAMP}) (w\d+ )?wsctl\.memory timer: this process now runs ")


def _access_lines(text: str) -> list[tuple]:
    return [m.groups() for line in text.splitlines() if (m := LINE.match(line))]


def _timer_lines(text: str) -> list[tuple]:
    return [m.groups() for line in text.splitlines() if (m := TIMER_LINE.match(line))]


def _until_the_timer_logged(server) -> None:
    wait_until(lambda: _timer_lines(server.log_text()), "the memory timer did not log", server.proc, server.log)


def test_every_request_has_its_line_with_every_field(workspace, home, tmp_path):
    server = start_server(workspace, base_env(tmp_path / "srv-home"), log=tmp_path / "server.log",
                          args=("--memory-interval", "0.2"))   # its first tick logs through logging
    b = make_backend("remote", workspace, home, server=server)
    try:
        assert b.ok("GET", "/v1/auth/whoami")["kind"] == "session"
        with httpx.Client(base_url=server.url, trust_env=False, timeout=30) as c:
            assert c.get("/v1/no-such-route").status_code in (401, 404)
            c.get("/signin/sekret-token-123")
            assert c.get("/healthz").status_code == 200
        _until_the_timer_logged(server)
    finally:
        b.close()
        server.stop()
    text = (tmp_path / "server.log").read_text()
    assert "sekret-token-123" not in text
    lines = _access_lines(text)
    got = [(method, path, status) for _, _, method, path, status, _ in lines]
    assert ("GET", "/v1/auth/whoami", "200") in got
    assert any(g[:2] == ("GET", "/v1/no-such-route") and g[2] in ("401", "404") for g in got)
    assert ("GET", "/signin/***") in [g[:2] for g in got]
    assert ("GET", "/healthz", "200") in got
    stamps = [stamp for stamp, *_ in lines]
    assert stamps == sorted(stamps)   # one line per request, whole, in order
    assert all(prefix is None for _, prefix, *_ in lines)   # one process: no worker prefix
    assert [prefix for _, prefix in _timer_lines(text)] == [None]   # logging's own line: the same layout


def _send_raw(url: str, target: bytes) -> bytes:
    u = urlsplit(url)
    with socket.create_connection((u.hostname, u.port), timeout=30) as s:
        s.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


def test_a_control_character_in_the_path_stays_encoded_on_one_line(workspace, tmp_path):
    """A path carrying an encoded newline, carriage return or escape (a forged second log line, a
    terminal colour) is logged as sent, percent-encoded: one line, no control character written.
    The raw characters themselves never reach the app (the HTTP layer refuses them: 400)."""
    server = start_server(workspace, base_env(tmp_path / "srv-home"), log=tmp_path / "server.log")
    forged = b"/v1/x%0A2026-01-01%2000:00:00,000%20wsctl.server%20GET%20/v1/ok%20200%200.1ms%0D%1B[31m"
    try:
        assert _send_raw(server.url, forged).startswith(b"HTTP/1.1 40")
        assert _send_raw(server.url, b"/v1/x\x1b[31m").startswith(b"HTTP/1.1 400")
        assert _send_raw(server.url, b"/healthz").startswith(b"HTTP/1.1 200")   # written after the others
    finally:
        server.stop()
    text = (tmp_path / "server.log").read_text()
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text)
    paths = [path for _, _, _, path, _, _ in _access_lines(text)]
    assert forged.decode() in paths and "/v1/ok" not in paths
    assert paths[-1] == "/healthz"


def test_a_workers_lines_carry_its_prefix(workspace, home, tmp_path):
    server = start_server(workspace, base_env(tmp_path / "srv-home"), log=tmp_path / "server.log",
                          args=("--workers", "2", "--memory-interval", "0.2"))
    try:
        with httpx.Client(base_url=server.url, trust_env=False, timeout=30) as c:
            for _ in range(6):
                assert c.get("/healthz").status_code == 200
        _until_the_timer_logged(server)
    finally:
        server.stop()
    text = (tmp_path / "server.log").read_text()
    lines = _access_lines(text)
    healthz = [line for line in lines if line[3] == "/healthz"]
    assert len(healthz) >= 6 and all(line[1] in ("w1 ", "w2 ") for line in healthz)
    timer = _timer_lines(text)
    assert timer and all(prefix in ("w1 ", "w2 ") for _, prefix in timer)   # logging's own lines too
