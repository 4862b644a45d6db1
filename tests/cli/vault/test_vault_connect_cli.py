"""`wsctl vault connect SERVICE [--no-open] [--wait]` as a real subprocess, on both backends.

The printed sign-in link is driven by an httpx "browser" in a thread while the command waits:
remote, the link is on the backend's `wsctl serve`; local, on the loopback server the command
starts for itself. The local apiKey shortcut (stdin, hidden prompt on a pty) is covered too.
"""
from __future__ import annotations

import fcntl
import json
import os
import pty
import queue
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time
import urllib.parse

import httpx
import pytest

from tests.conftest import WAIT_LIMIT, WSCTL, make_backend, wait_until
from tests.connect_helpers import parse_form
from tests.vault_helpers import (
    APIKEY_TOML,
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
    token,
)

pytestmark = pytest.mark.usefixtures("canary_scan")


@pytest.fixture
def services(backend, provider):
    install_service(backend.workspace, APIKEY_TOML.format(base=provider.url))
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    provider.api_keys.update({"sk-CANARY-cli-1", "sk-CANARY-later"})  # keysvc's probe checks the key first
    return backend


LINK = re.compile(r"http://127\.0\.0\.1:\d+/\S+")
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class Running:
    """A `wsctl vault connect` subprocess; `link()` waits for the URL it prints on stderr.

    tty_stderr=True gives it a terminal on stderr (stdout stays a pipe), as a person has: that is
    where the spinner shows while --wait polls. `self.err` then holds the raw terminal output."""

    def __init__(self, backend, *args, env=None, tty_stderr: bool = False):
        env = {**backend.env, **(env or {})}
        stderr = subprocess.PIPE
        if tty_stderr:
            master, slave = pty.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))  # the link fits a line
            env["TERM"] = "xterm-256color"  # base_env's TERM=dumb would turn the spinner off
            stderr = slave
        self.proc = subprocess.Popen([*WSCTL, "vault", "connect", *args], env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=stderr, text=True)
        self.err_lines: queue.Queue = queue.Queue()
        self.err: list[str] = []
        self.raw = b""   # everything the terminal got so far, \r-redrawn spinner frames included
        if tty_stderr:
            os.close(slave)
            threading.Thread(target=self._pump_tty, args=(master,), daemon=True).start()
        else:
            threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stderr:
            self.err_lines.put(line)
        self.err_lines.put(None)

    def _pump_tty(self, fd: int):
        buf = ""
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            self.raw += chunk
            buf += chunk.decode(errors="replace")
            *lines, buf = buf.split("\n")
            for line in lines:
                self.err_lines.put(line + "\n")
        os.close(fd)
        if buf:
            self.err_lines.put(buf)
        self.err_lines.put(None)

    def link(self, timeout: float = WAIT_LIMIT) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.err_lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                break
            self.err.append(line)
            found = LINK.search(line)
            if found:
                return found.group(0)
        self.proc.kill()
        self.finish()    # reaped, its pipes closed
        raise AssertionError(f"no link printed; stderr so far: {''.join(self.err)}")

    def finish(self, timeout: float = WAIT_LIMIT) -> tuple[int, str, str]:
        """(exit code, stdout, stderr) once the command ends; its pipes closed once read to the end."""
        out = ""
        if self.proc.stdout:
            with self.proc.stdout:
                out = self.proc.stdout.read()
        code = self.proc.wait(timeout)
        while True:
            line = self.err_lines.get(timeout=60)
            if line is None:
                break
            self.err.append(line)
        if self.proc.stderr:   # the pump read it to the end (its None came last)
            self.proc.stderr.close()
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
    t.join(WAIT_LIMIT)
    if "error" in box:
        raise box["error"]
    return box.get("value")


def fill_api_key_form(link: str, key: str) -> int:
    with httpx.Client(trust_env=False, follow_redirects=True, timeout=30) as b:
        page = b.get(link)
        assert page.status_code == 200, page.text[:300]
        form = parse_form(page)
        r = b.post(form["action_url"], data={**form["inputs"], "apiKey": key, "instanceUrl": "https://acme.example"})
        return r.status_code


def test_connect_an_api_key_service_through_the_printed_link(services):
    """--no-open prints the link; --wait shows a spinner on stderr (a terminal here) and stdout
    carries only the result."""
    backend = services
    run = Running(backend, "keysvc", "--no-open", "--wait", "--json", tty_stderr=True)
    link = run.link()
    assert link.startswith("http://127.0.0.1:") and "/signin/" in link
    if backend.kind == "remote":
        assert link.startswith(backend.base_url)
    # the spinner is drawing while nobody has opened the link yet
    wait_until(lambda: any(frame.encode() in run.raw for frame in SPINNER), "the spinner did not draw", run.proc)
    t, box = in_thread(lambda: fill_api_key_form(link, "sk-CANARY-cli-1"))
    assert join(t, box) == 200
    code, out, err = run.finish()
    assert code == 0, err
    assert "Waiting for the connection to be completed in the browser" in err
    assert any(frame in err for frame in SPINNER), "the spinner's frames are drawn on stderr"
    final = json.loads(out)  # nothing but the JSON body on stdout
    assert final["status"] == "connected" and final["service"] == "keysvc"
    assert token(backend, final["credentialId"]).body["apiKey"] == "sk-CANARY-cli-1"
    assert "sk-CANARY-cli-1" not in out + err


FAKE_BROWSER = """#!{python}
import pathlib, sys
import httpx
with httpx.Client(trust_env=False, follow_redirects=True, timeout=30) as b:
    status = b.get(sys.argv[1]).status_code
pathlib.Path({record!r}).write_text(str(status))
"""


def test_connect_an_oauth_service_opens_the_browser(services, provider, tmp_path):
    """Without --no-open the link goes to the browser ($BROWSER here: a script that follows every
    redirect, as a browser with the consent already given would)."""
    backend = services
    browser, record = tmp_path / "fake-browser", tmp_path / "browser-status"
    browser.write_text(FAKE_BROWSER.format(python=sys.executable, record=str(record)))
    browser.chmod(0o755)
    run = Running(backend, "loopcrm", "--wait", env={"BROWSER": str(browser)})
    code, out, err = run.finish()
    assert code == 0, err
    assert record.read_text() == "200"
    assert "Opened your browser to connect loopcrm" in err
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
        with httpx.Client(trust_env=False, follow_redirects=False, timeout=30) as b:
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
    # --reconnect puts the new key into the same credential.
    r = local.wsctl("vault", "connect", "keysvc", "--reconnect", cred, input="sk-CANARY-again\nhttps://b.example\n")
    assert r.out.strip() == cred
    assert token(local, cred).body == {"apiKey": "sk-CANARY-again", "instanceUrl": "https://b.example"}
    r = local.wsctl("vault", "connect", "keysvc", "--reconnect", "cred_nope", input="x\ny\n", expect=5)
    assert [c["id"] for c in local.ok("GET", "/v1/credentials")["credentials"]] == [cred]


def on_terminal(env: dict, args: list[str], dialogue: list[tuple[bytes, bytes | None]]) -> tuple[int, bytes]:
    """Run wsctl with a terminal on stdin, stdout and stderr; wait for each marker, then type the reply.
    Answers the exit code and everything the terminal showed."""
    pid, fd = pty.fork()
    if pid == 0:  # the child
        os.execvpe(WSCTL[0], [*WSCTL, *args], env)
    seen = b""

    def read(marker: bytes | None, timeout: float = WAIT_LIMIT) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while (marker is None or marker not in seen) and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:  # EIO: the child is gone
                    break
                if not chunk:
                    break
                seen += chunk
        assert marker is None or marker in seen, seen.decode(errors="replace")

    try:
        for marker, reply in dialogue:
            read(marker)
            if reply is not None:
                os.write(fd, reply)
        read(None)  # to the end
    except BaseException:
        os.kill(pid, 9)
        raise
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), seen


def test_local_api_key_at_a_hidden_prompt(local):
    """Secrets typed at a terminal are never echoed; set-key refuses a key given as an argument
    (without repeating it); delete asks first on a terminal."""
    code, seen = on_terminal(local.env, ["vault", "connect", "keysvc"], [
        (b"(hidden): ", b"sk-CANARY-pty\n"), (b"instanceUrl: ", b"https://pty.example\n"),
        (b"Connected keysvc", None)])
    assert code == 0, seen
    assert b"sk-CANARY-pty" not in seen  # the prompt did not echo the key
    cred = next(w for w in seen.decode().split() if w.startswith("cred_"))
    assert token(local, cred).body == {"apiKey": "sk-CANARY-pty", "instanceUrl": "https://pty.example"}

    code, seen = on_terminal(local.env, ["vault", "set-key", cred], [(b"(hidden): ", b"sk-CANARY-pty-2\n")])
    assert code == 0 and b"Replaced apiKey" in seen and b"sk-CANARY-pty-2" not in seen, seen
    assert token(local, cred).body["apiKey"] == "sk-CANARY-pty-2"
    r = local.wsctl("vault", "set-key", cred, "sk-CANARY-argv", expect=2)
    assert "never takes the new value as an argument" in r.err  # and the canary scan: not echoed
    assert token(local, cred).body["apiKey"] == "sk-CANARY-pty-2"

    code, seen = on_terminal(local.env, ["vault", "delete", cred], [(b"[y/N]", b"n\n")])
    assert code == 1 and b"Aborted" in seen, seen
    assert local.api("GET", f"/v1/credentials/{cred}").status == 200
