"""Bounded waits (issue 26 item 2, backend/timeouts.py).

A server that does not answer ends a command in exit 8 with one line saying what timed out and
after how long (`--timeout SECONDS`, WSCTL_TIMEOUT); a transfer is bounded by progress, not by
its total time; a connection that breaks mid-way is said as such, not as a server to start.
Against a real `wsctl serve` stopped with SIGSTOP (then SIGCONT), and against loopback servers
written here that read an upload slowly or drop the connection mid-body. The limits are short
(1-2 s); what is asserted is exit codes, messages and what the server saw, never how long a
command took (each is bounded only to catch a hang).
"""
from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import tarfile
import threading
import time
from pathlib import Path

from tests import forkserver
from tests.cli_helpers import one_error_line
from tests.conftest import NO_BACKOFF, WSCTL, Result, base_env, copy_workspace, finish_all, make_backend, run_wsctl

HANG = 60   # no command here should come near this: it only turns a hang into a failure


def spawn(args, env):
    args = [str(a) for a in args]
    return forkserver.spawn(args, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) or \
        subprocess.Popen([*WSCTL, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def tarball(path: Path, size: int) -> Path:
    """A .tar.gz of about `size` bytes that does not compress (random bytes)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        data = os.urandom(size)
        info = tarfile.TarInfo("blob.bin")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())
    return path


def test_a_stopped_server_ends_each_command_in_exit_8(tmp_path, template_workspace):
    b = make_backend("remote", copy_workspace(template_workspace, tmp_path / "ws"), tmp_path / "home")
    try:
        pid = b.ok("POST", "/v1/projects", {"name": "Support"})["project"]["id"]
        big = tarball(tmp_path / "big.tar.gz", 8 << 20)   # more than the socket buffers take in
        b.server.proc.send_signal(signal.SIGSTOP)
        try:
            procs = [spawn(["vault", "list", "--timeout", "2"], b.env),   # anywhere on the line, as --debug
                     spawn(["specialist", "create", "Ops"], {**b.env, "WSCTL_TIMEOUT": "2"}),
                     spawn(["--timeout", "2", "specialist", "files", "bundle", "upload", pid, big], b.env),
                     spawn(["--timeout", "1.5", "api", "GET", "/v1/members"], b.env)]
            results = finish_all(procs, timeout=HANG)
        finally:
            b.server.proc.send_signal(signal.SIGCONT)
        lines = []
        for code, out, err in results:
            assert code == 8, (code, out, err)
            lines.append(one_error_line(Result(code, out, err)))
        url = b.base_url
        assert lines[0] == (f"error: No answer from the server at {url} to GET /v1/credentials within 2 s: it "
                            "accepted the connection but sent nothing back. Check that it is running and not "
                            "stuck, or allow longer with --timeout SECONDS or WSCTL_TIMEOUT.")
        assert f"No answer from the server at {url} to POST /v1/projects within 2 s" in lines[1]
        assert f"The transfer with the server at {url} stalled: nothing moved for 2 s while " in lines[2]
        assert f"POST /v1/projects/{pid}/files/bundle" in lines[2] and "only a stall stops it" in lines[2]
        assert "to GET /v1/members within 1.5 s" in lines[3]
        assert not any("trying again" in err for _, _, err in results)
        # once it runs again it answers, and the create that timed out may or may not have landed
        names = {p["name"] for p in b.ok("GET", "/v1/projects")["projects"]}
        assert "Support" in names and names <= {"Support", "Ops"}
        assert b.wsctl("--timeout", "2", "vault", "list", "--json").json["credentials"] == []
    finally:
        b.close()


def test_bad_limits_are_refused_before_anything_is_sent(tmp_path):
    env = {**base_env(tmp_path / "home"), "WSCTL_SERVER": "http://127.0.0.1:9", **NO_BACKOFF}
    for args in (["--timeout", "0", "vault", "list"], ["--timeout", "-1", "vault", "list"],
                 ["vault", "list", "--timeout", "nan"], ["vault", "list", "--timeout=1e9"]):
        r = run_wsctl(args, env, expect=2)
        assert "--timeout" in one_error_line(r) and "above 0 and at most 86400" in r.err
    for value in ("soon", "0", "inf"):
        r = run_wsctl(["vault", "list"], {**env, "WSCTL_TIMEOUT": value}, expect=7)
        assert one_error_line(r).startswith("error: WSCTL_TIMEOUT must be a number of seconds above 0")


class Loopback:
    """A tiny HTTP/1.1 server on 127.0.0.1 with one behaviour per test, each connection in a
    thread. It records what it saw (bytes of body read, whether the reads were spread out)."""

    def __init__(self, handle):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)   # a slow reader's window stays small
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.handle, self.seen = handle, []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn):
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            head, _, rest = head.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
            try:
                self.handle(self, conn, lines[0], headers, rest)
            except OSError:
                pass

    def close(self):
        self.sock.close()


def answer(conn, status: int, body: dict) -> None:
    data = json.dumps(body).encode()
    conn.sendall(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                 "Connection: close\r\n\r\n".encode() + data)


def test_a_slow_upload_is_not_cut_but_one_dropped_mid_body_is_said_as_such(tmp_path):
    """The same 8 MiB upload, `--timeout 2`: read by a server that takes 64 KiB every 20 ms (more
    than 2 s in all, the sender's buffer never waiting near 2 s for room) it succeeds; read by one
    that drops the connection after 256 KiB it is exit 8 saying the connection broke (not "start it")."""
    size = 8 << 20
    upload = tarball(tmp_path / "b.tar.gz", size)
    sent = upload.stat().st_size

    def slow(server, conn, request, headers, rest):
        got, reads, started = len(rest), 0, time.monotonic()
        while got < int(headers["content-length"]):
            time.sleep(0.02)
            chunk = conn.recv(64 * 1024)
            if not chunk:
                return
            got, reads = got + len(chunk), reads + 1
        server.seen.append((request, got, reads, time.monotonic() - started))
        answer(conn, 200, {"added": 1, "updated": 0})

    def drop(server, conn, request, headers, rest):
        got = len(rest)
        while got < 256 * 1024:
            got += len(conn.recv(32 * 1024))
        server.seen.append((request, got))
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # reset, at once

    env = {**base_env(tmp_path / "home"), "WSCTL_API_KEY": "ws_personal_x", **NO_BACKOFF}
    args = ["--timeout", "2", "specialist", "files", "bundle", "upload", "proj_x", upload]
    s = Loopback(slow)
    try:
        r = run_wsctl(args, {**env, "WSCTL_SERVER": s.url}, timeout=HANG)
        assert r.out.strip() == "Added 1, updated 0 files in proj_x."
        (request, got, reads, _took), = s.seen
        assert request == "POST /v1/projects/proj_x/files/bundle HTTP/1.1" and got == sent
        assert reads * 0.02 > 2   # the server's pauses alone add up to more than the limit
    finally:
        s.close()
    d = Loopback(drop)
    try:
        r = run_wsctl(args, {**env, "WSCTL_SERVER": d.url}, expect=8, timeout=HANG)
        line = one_error_line(r)
        assert line.startswith(f"error: The connection to the server at {d.url} broke during POST "
                               "/v1/projects/proj_x/files/bundle (")
        assert "the server was reachable but stopped or failed mid-request" in line
        assert "may or may not have taken effect" in line and "wsctl serve" not in line
        assert len(d.seen) == 1   # an upload is never sent twice
    finally:
        d.close()


def test_an_answer_cut_mid_body_is_said_as_such(tmp_path):
    """A GET whose answer stops half-way (Content-Length promised, connection closed): tried again
    as a broken GET is, then one line saying the connection broke, exit 8."""

    def cut(server, conn, request, headers, rest):
        server.seen.append(request)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n"
                     b'{"credentials": [')

    s = Loopback(cut)
    try:
        env = {**base_env(tmp_path / "home"), "WSCTL_SERVER": s.url, "WSCTL_API_KEY": "ws_personal_x", **NO_BACKOFF}
        r = run_wsctl(["vault", "list"], env, expect=8, timeout=HANG)
        line = one_error_line(r)
        assert line.startswith(f"error: The connection to the server at {s.url} broke during GET /v1/credentials (")
        assert "then run the command again" in line and "wsctl serve" not in line
        assert len(s.seen) == 4   # a GET is tried again (ATTEMPTS), within the limit
    finally:
        s.close()


def test_the_whole_command_has_one_deadline_not_each_call(tmp_path):
    """`vault list` follows nextCursor page after page. Each page here takes 2.5 s, under the
    limit of 4 s, so no single call times out; the second ends at about 5 s, past the command's
    deadline (its first call + 4 s), so the command ends there: exit 8, one line saying the
    command (not one call) ran out of time, and no third page is asked for. The same server with
    `events --follow` (a command that waits by design) keeps each call's own limit: it polls on
    past the 4 s and is stopped by the test."""

    def slow_pages(server, conn, request, headers, rest):
        server.seen.append(request)
        time.sleep(2.5)
        page = len(server.seen)
        answer(conn, 200, {"credentials": [], "events": [], "cursor": f"c{page}", "nextCursor": f"c{page}"})

    s = Loopback(slow_pages)
    try:
        env = {**base_env(tmp_path / "home"), "WSCTL_SERVER": s.url, "WSCTL_API_KEY": "ws_personal_x", **NO_BACKOFF}
        r = run_wsctl(["--timeout", "4", "vault", "list"], env, expect=8, timeout=HANG)
        line = one_error_line(r)
        assert line == (f"error: The command ran out of time waiting for the server at {s.url} to answer GET "
                        "/v1/credentials: its calls took 4 s in all (a limit for the whole command). Check that "
                        "the server is not overloaded or stuck, or allow longer with --timeout SECONDS or "
                        "WSCTL_TIMEOUT.")
        assert [q.split("?")[0] for q in s.seen] == ["GET /v1/credentials", "GET /v1/credentials"]
        assert "cursor=c1" in s.seen[1]
        s.seen.clear()
        follow = spawn(["--timeout", "4", "events", "--follow", "--interval", "0.2", "--json"], env)
        try:
            deadline = time.monotonic() + HANG
            while len(s.seen) < 4 and follow.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            assert follow.poll() is None, follow.communicate()   # 4 calls of 2.5 s: past 4 s, still following
            assert len(s.seen) >= 4
        finally:
            follow.kill()
            follow.communicate()
    finally:
        s.close()
