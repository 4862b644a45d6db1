"""The access log line of a real `wsctl serve`, written directly to the log stream (AccessLog's
direct write): the same fields and layout as the logging format the server configured (local
time with milliseconds, worker prefix, logger name, method, redacted path, status, ms), one line
per request, secrets out."""
from __future__ import annotations

import re

import httpx

from tests.conftest import base_env, make_backend, start_server

LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (w\d+ )?wsctl\.server (\S+) (\S+) (\d{3}) (\d+\.\d)ms$")


def _access_lines(text: str) -> list[tuple]:
    return [m.groups() for line in text.splitlines() if (m := LINE.match(line))]


def test_every_request_has_its_line_with_every_field(workspace, home, tmp_path):
    server = start_server(workspace, base_env(tmp_path / "srv-home"), log=tmp_path / "server.log")
    b = make_backend("remote", workspace, home, server=server)
    try:
        assert b.ok("GET", "/v1/auth/whoami")["kind"] == "session"
        with httpx.Client(base_url=server.url, trust_env=False, timeout=30) as c:
            assert c.get("/v1/no-such-route").status_code in (401, 404)
            c.get("/signin/sekret-token-123")
            assert c.get("/healthz").status_code == 200
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


def test_a_workers_lines_carry_its_prefix(workspace, home, tmp_path):
    server = start_server(workspace, base_env(tmp_path / "srv-home"), log=tmp_path / "server.log",
                          args=("--workers", "2"))
    try:
        with httpx.Client(base_url=server.url, trust_env=False, timeout=30) as c:
            for _ in range(6):
                assert c.get("/healthz").status_code == 200
    finally:
        server.stop()
    lines = _access_lines((tmp_path / "server.log").read_text())
    healthz = [line for line in lines if line[3] == "/healthz"]
    assert len(healthz) >= 6 and all(line[1] in ("w1 ", "w2 ") for line in healthz)
