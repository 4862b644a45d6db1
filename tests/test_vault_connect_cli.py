"""`wsctl vault connect SERVICE [--no-open] [--wait]` as a real subprocess, on both backends.

The printed sign-in link is driven by an httpx "browser" in a thread while the command waits:
remote, the link is on the backend's `wsctl serve`; local, on the loopback server the command
starts for itself. The local apiKey shortcut (stdin, hidden prompt on a pty) is covered too.
"""
from __future__ import annotations

import json
import os
import pty
import queue
import select
import subprocess
import threading
import time
import urllib.parse

import httpx
import pytest

from tests.conftest import WSCTL, make_backend
from tests.connect_helpers import parse_form
from tests.oauth_provider import OAuthProvider
from tests.vault_helpers import APIKEY_TOML, install_service, token


@pytest.fixture
def provider():
    with OAuthProvider() as p:
        yield p


@pytest.fixture
def services(backend, provider):
    install_service(backend.workspace, APIKEY_TOML.format(base=provider.url))
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    return backend


class Running:
    """A `wsctl vault connect` subprocess; `link()` waits for the URL it prints on stderr."""

    def __init__(self, backend, *args, env=None):
        self.proc = subprocess.Popen([*WSCTL, "vault", "connect", *args], env={**backend.env, **(env or {})},
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.err_lines: queue.Queue = queue.Queue()
        self.err: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stderr:
            self.err_lines.put(line)
        self.err_lines.put(None)

    def link(self, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.err_lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                break
            self.err.append(line)
            if line.startswith("http://"):
                return line.strip()
        self.proc.kill()
        raise AssertionError(f"no link printed; stderr so far: {''.join(self.err)}")

    def finish(self, timeout: float = 60) -> tuple[int, str, str]:
        out = self.proc.stdout.read() if self.proc.stdout else ""
        code = self.proc.wait(timeout)
        while True:
            line = self.err_lines.get(timeout=5)
            if line is None:
                break
            self.err.append(line)
        return code, out, "".join(self.err)


def in_thread(fn):
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # re-raised in the test thread
            box["error"] = e

    t = threading.Thread(target=run)
    t.start()
    return t, box


def join(t, box):
    t.join(60)
    if "error" in box:
        raise box["error"]
    return box.get("value")


def fill_api_key_form(link: str, key: str) -> int:
    with httpx.Client(follow_redirects=True, timeout=30) as b:
        page = b.get(link)
        assert page.status_code == 200, page.text[:300]
        form = parse_form(page)
        r = b.post(form["action_url"], data={**form["inputs"], "apiKey": key, "instanceUrl": "https://acme.example"})
        return r.status_code


def follow_oauth(link: str) -> int:
    with httpx.Client(follow_redirects=True, timeout=30) as b:
        return b.get(link).status_code


def test_connect_an_api_key_service_through_the_printed_link(services):
    backend = services
    run = Running(backend, "keysvc", "--no-open", "--wait", "--json")
    link = run.link()
    assert link.startswith("http://127.0.0.1:") and "/signin/" in link
    if backend.kind == "remote":
        assert link.startswith(backend.base_url)
    t, box = in_thread(lambda: fill_api_key_form(link, "sk-CANARY-cli-1"))
    assert join(t, box) == 200
    code, out, err = run.finish()
    assert code == 0, err
    final = json.loads(out)
    assert final["status"] == "connected" and final["service"] == "keysvc"
    assert token(backend, final["credentialId"]).body["apiKey"] == "sk-CANARY-cli-1"
    assert "sk-CANARY-cli-1" not in out + err


def test_connect_an_oauth_service_through_the_printed_link(services, provider):
    backend = services
    run = Running(backend, "loopcrm", "--no-open", "--wait")
    t, box = in_thread(lambda: follow_oauth(run.link()))
    assert join(t, box) == 200
    code, out, err = run.finish()
    assert code == 0, err
    cred = out.strip()
    assert cred.startswith("cred_")
    assert provider.exchanges == 1
    assert token(backend, cred).body["accessToken"] == provider.issued[-1]["access_token"]
    for s in provider.all_secrets():
        assert s not in out + err


def test_without_wait(services):
    """Remote: prints the pending connection and returns; the link still works afterwards.
    Local: the loopback server lives only as long as the command, so it waits all the same."""
    backend = services
    run = Running(backend, "keysvc", "--no-open", "--json")
    link = run.link()
    if backend.kind == "remote":
        code, out, err = run.finish()
        assert code == 0, err
        pending = json.loads(out)
        assert pending["status"] == "pending" and pending["connectUrl"].startswith(backend.base_url)
        assert fill_api_key_form(link, "sk-CANARY-later") == 200
        assert backend.ok("GET", f"/v1/connections/{pending['id']}")["status"] == "connected"
        return
    t, box = in_thread(lambda: fill_api_key_form(link, "sk-CANARY-later"))
    assert join(t, box) == 200
    code, out, err = run.finish()
    assert code == 0, err
    assert json.loads(out)["status"] == "connected"


def test_a_provider_refusal_ends_the_wait_with_an_error(services):
    backend = services
    run = Running(backend, "loopcrm", "--no-open", "--wait", "--json")
    link = run.link()

    def refuse():
        with httpx.Client(follow_redirects=False, timeout=30) as b:
            landing = b.get(link)
            base = f"{urllib.parse.urlsplit(link).scheme}://{urllib.parse.urlsplit(link).netloc}"
            authorize = b.get(base + landing.headers["location"]).headers["location"]
            state = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(authorize).query))["state"]
            return b.get(base + "/connect/callback", params={"error": "access_denied", "state": state}).status_code

    t, box = in_thread(refuse)
    assert join(t, box) == 403
    code, out, err = run.finish()
    assert code == 1
    assert json.loads(out)["status"] == "failed"
    assert "access_denied" in err and err.strip().splitlines()[-1].startswith("error: ")


def test_services_with_nothing_to_connect(backend):
    r = backend.wsctl("vault", "connect", "web-search", "--no-open", expect=7)
    assert "nothing to connect" in r.err
    r = backend.wsctl("vault", "connect", "no-such-service", "--no-open", expect=5)
    assert "wsctl catalog integrations" in r.err


# --- local: the key at a prompt or on stdin -------------------------------------------------------

@pytest.fixture
def local(workspace, home):
    b = make_backend("local", workspace, home)
    install_service(workspace, APIKEY_TOML.format(base="http://127.0.0.1:9"))
    yield b
    b.close()


def test_local_api_key_from_stdin(local):
    r = local.wsctl("vault", "connect", "keysvc", input="sk-CANARY-stdin\nhttps://acme.example\n")
    cred = r.out.strip()
    assert cred.startswith("cred_")
    assert "sk-CANARY-stdin" not in r.out + r.err
    assert token(local, cred).body == {"apiKey": "sk-CANARY-stdin", "instanceUrl": "https://acme.example"}
    r = local.wsctl("vault", "connect", "keysvc", input="", expect=7)
    assert "stdin" in r.err and "--no-open" in r.err


def test_local_api_key_at_a_hidden_prompt(local):
    pid, fd = pty.fork()
    if pid == 0:  # the child: wsctl with a terminal on stdin, stdout and stderr
        os.execvpe(WSCTL[0], [*WSCTL, "vault", "connect", "keysvc"], local.env)
    seen = b""

    def read_until(marker: bytes, timeout: float = 30) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while marker not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(fd, 4096)
                except OSError:
                    break
        assert marker in seen, seen.decode(errors="replace")

    try:
        read_until(b"(hidden): ")
        os.write(fd, b"sk-CANARY-pty\n")
        read_until(b"instanceUrl: ")
        os.write(fd, b"https://pty.example\n")
        read_until(b"cred_")
        read_until(b"Connected keysvc")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0
    assert b"sk-CANARY-pty" not in seen  # the prompt did not echo the key
    cred = next(w for w in seen.decode().split() if w.startswith("cred_"))
    assert token(local, cred).body == {"apiKey": "sk-CANARY-pty", "instanceUrl": "https://pty.example"}
