"""`vault run` keeps the terminal and dies with wsctl; `vault inject` fills templates. Both backends.

Terminal behaviour is tested on a real pseudo-terminal (the pty module) as a person meets it;
dying with wsctl by a real SIGKILL of the wsctl process.
"""
from __future__ import annotations

import os
import pty
import select
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import WSCTL, wait_until
from tests.vault_helpers import install_service, make_credential, member_with_session

PY = sys.executable
KEY = "sk-RUN-CANARY-0123456789"
TOML = """
service = "ptysvc"
name = "Pty Keys"
description = "An API-key service for terminal tests."
credentialType = "apiKey"
envVars = { apiKey = "PTYSVC_KEY", instanceUrl = "PTYSVC_URL" }
fields = ["instanceUrl"]
[[operations]]
name = "ping"
summary = "Ping"
method = "GET"
path = "/ping"
"""


@pytest.fixture
def cred(backend):
    install_service(backend.workspace, TOML)
    return make_credential(backend.workspace, backend.owner["id"], "ptysvc", {"apiKey": KEY},
                           {"instanceUrl": "https://pty.example"})


def _gone(pid: int) -> bool:
    """No such process, or only its zombie left (reaped by whoever adopted it, or not yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False


def _read_all(fd: int, proc: subprocess.Popen) -> bytes:
    """Everything written to a pty master until the writer is done (EIO on Linux)."""
    out = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            # the process is done and nothing is left to read
            ready, _, _ = select.select([fd], [], [], 0)
            if not ready:
                break
    return out


CHILD_TTY = (
    "import os, sys; "
    "print('stdout-tty', sys.stdout.isatty(), 'stderr-tty', sys.stderr.isatty(), 'stdin-tty', sys.stdin.isatty()); "
    "print('cols', os.get_terminal_size(1).columns); "
    "print('key', os.environ['PTYSVC_KEY']); "
    "print('err', os.environ['PTYSVC_KEY'], file=sys.stderr); "
    "sys.stdout.write('\\x1b[31mred\\x1b[0m\\n')"
)


def _terminal(cols: int) -> tuple[int, int]:
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
    return master, slave


@pytest.mark.parametrize("masking", [True, False])
def test_run_on_a_terminal_gives_the_child_a_terminal(backend, cred, masking):
    """wsctl's stdout and stderr are two terminals here, so each stream is read on its own."""
    out_master, out_slave = _terminal(123)
    err_master, err_slave = _terminal(77)
    args = [*WSCTL, "vault", "run", cred["id"], "--reason", "pty", *([] if masking else ["--no-masking"]),
            "--", PY, "-c", CHILD_TTY]
    p = subprocess.Popen(args, env=backend.env, stdin=out_slave, stdout=out_slave, stderr=err_slave, close_fds=True)
    os.close(out_slave)
    os.close(err_slave)
    try:
        err = b""
        out = _read_all(out_master, p).decode()
        err = _read_all(err_master, p).decode()
        assert p.wait(timeout=120) == 0, out + err
    finally:
        os.close(out_master)
        os.close(err_master)
        if p.poll() is None:
            p.kill()
            p.wait()  # reaped: a Popen collected while its process runs is a ResourceWarning
    out, err = out.replace("\r\n", "\n"), err.replace("\r\n", "\n")
    assert "stdout-tty True stderr-tty True stdin-tty True\n" in out
    assert "cols 123\n" in out  # the child's pty is sized like wsctl's terminal
    assert "\x1b[31mred\x1b[0m\n" in out  # colour escapes pass through untouched
    if masking:
        assert KEY not in out + err and "key ***\n" in out and err.endswith("err ***\n")
    else:
        assert f"key {KEY}\n" in out and err.endswith(f"err {KEY}\n")


def test_run_into_a_pipe_stays_a_pipe_and_masks(backend, cred):
    r = backend.wsctl("vault", "run", cred["id"], "--reason", "pipe", "--", PY, "-c", CHILD_TTY.replace(
        "print('cols', os.get_terminal_size(1).columns); ", ""))
    assert "stdout-tty False stderr-tty False" in r.out
    assert KEY not in r.out + r.err and "key ***" in r.out and "err ***" in r.err


CHILD_WAITS = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(3600)"


@pytest.mark.parametrize("mode", ["masked-pipe", "masked-pty", "no-masking"])
def test_child_dies_when_wsctl_is_killed_with_sigkill(backend, cred, tmp_path, mode):
    pid_file = tmp_path / "child.pid"
    args = [*WSCTL, "vault", "run", cred["id"], "--reason", "sigkill",
            *(["--no-masking"] if mode == "no-masking" else []), "--", PY, "-c", CHILD_WAITS, str(pid_file)]
    master = None
    if mode == "masked-pty":
        master, slave = pty.openpty()
        p = subprocess.Popen(args, env=backend.env, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                             start_new_session=True)
        os.close(slave)
    else:
        p = subprocess.Popen(args, env=backend.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    child = None
    try:
        wait_until(lambda: (pid_file.exists() and pid_file.read_text()) or p.poll() is not None,
                   "the child did not start")
        assert p.poll() is None, "wsctl exited before the child was killed"
        child = int(pid_file.read_text())
        assert not _gone(child)
        p.send_signal(signal.SIGKILL)  # wsctl only: the child is never signalled by the test
        p.wait(timeout=60)
        wait_until(lambda: _gone(child), "the child outlived wsctl")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()  # reaped: a Popen collected while its process runs is a ResourceWarning
        if child is not None and not _gone(child):
            os.kill(child, signal.SIGKILL)
        if master is not None:
            os.close(master)


WATCHED = """
import subprocess, sys, time
from workspacectl.cli.vault import run as vault_run
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])  # no PDEATHSIG here
w = vault_run.start_watchdog(child.pid)
if sys.argv[1] == "done":
    import os
    os.write(w, vault_run.DONE)
    os.close(w)
print(child.pid, flush=True)
time.sleep(3600)
"""


@pytest.mark.parametrize("said_done", [False, True])
def test_the_watchdog_kills_the_child_only_when_wsctl_goes_without_saying_done(tmp_path, said_done):
    """The fallback where PR_SET_PDEATHSIG is missing or dropped: a pipe only wsctl holds."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    p = subprocess.Popen([PY, "-c", WATCHED, "done" if said_done else "watch"], env=env, stdout=subprocess.PIPE,
                         start_new_session=True)
    child = None
    try:
        child = int(p.stdout.readline())
        assert not _gone(child)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=60)
        if said_done:
            # DONE means wsctl reaped the child itself: the watchdog leaves that pid alone
            subprocess.run([PY, "-c", "import time; time.sleep(1)"], check=True)  # let a wrong kill land
            assert not _gone(child)
        else:
            wait_until(lambda: _gone(child), "the watchdog did not kill the child")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()  # reaped: a Popen collected while its process runs is a ResourceWarning
        p.stdout.close()
        if child is not None and not _gone(child):
            os.kill(child, signal.SIGKILL)


# --- vault inject ------------------------------------------------------------------------------

TEMPLATE = """# made by wsctl vault inject
KEY={{ wsctl://%(id)s/apiKey }}
AGAIN={{wsctl://%(id)s/apiKey}}
URL={{ wsctl://%(id)s/instanceUrl }}
left alone: {{ other://x/y }} and {{ literal }}
"""


def _issued(backend, cred_id: str) -> list[dict]:
    return [e for e in backend.ok("GET", f"/v1/credentials/{cred_id}/access-log")["entries"]]


def test_inject_writes_the_file_0600_and_logs_one_token_with_the_reason(backend, cred, tmp_path):
    tpl = tmp_path / "app.env.tpl"
    tpl.write_text(TEMPLATE % {"id": cred["id"]})
    out = tmp_path / "app.env"
    r = backend.wsctl("vault", "inject", "-i", tpl, "-o", out, "--reason", "render app.env")
    assert KEY not in r.out + r.err
    assert out.read_text() == (f"# made by wsctl vault inject\nKEY={KEY}\nAGAIN={KEY}\nURL=https://pty.example\n"
                               "left alone: {{ other://x/y }} and {{ literal }}\n")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".app.env")] == []  # no temp file left
    log = _issued(backend, cred["id"])
    assert [(e["reason"], e["outcome"], sorted(e["fields"])) for e in log] == \
        [("render app.env", "issued", ["apiKey", "instanceUrl"])]
    # an existing file is replaced only with --force (no terminal to ask on)
    backend.wsctl("vault", "inject", "-i", tpl, "-o", out, "--reason", "again", expect=7)
    assert len(_issued(backend, cred["id"])) == 1
    out.write_text("old")
    out.chmod(0o644)
    backend.wsctl("vault", "inject", "-i", tpl, "-o", out, "--reason", "again", "--force")
    assert KEY in out.read_text() and stat.S_IMODE(out.stat().st_mode) == 0o600


def test_inject_reads_stdin_and_writes_stdout(backend, cred):
    r = backend.wsctl("vault", "inject", "-r", "pipe", input="k={{{{ wsctl://{}/apiKey }}}}\n".format(cred["id"]))
    assert r.out == f"k={KEY}\n"


def test_inject_refuses_before_issuing_anything(backend, cred, tmp_path):
    other = make_credential(backend.workspace, backend.owner["id"], "ptysvc", {"apiKey": "sk-OTHER-CANARY"})
    member, session = member_with_session(backend, "ina@example.com")
    backend.wsctl("vault", "share", cred["id"], "--member", member["id"], "--role", "user")
    out = tmp_path / "out.env"
    both = "a={{{{ wsctl://{}/apiKey }}}}\nb={{{{ wsctl://{}/apiKey }}}}\n".format(cred["id"], other["id"])
    # the member may use the first credential but cannot see the second: nothing is issued
    r = backend.wsctl("vault", "inject", "-o", out, "-r", "both", input=both, env=backend.env_for(session),
                      expect=5)
    assert not out.exists() and _issued(backend, cred["id"]) == []
    # a field the credential does not issue: nothing issued either
    r = backend.wsctl("vault", "inject", "-o", out, "-r", "field", expect=7,
                      input="a={{{{ wsctl://{}/apiKey }}}}\nb={{{{ wsctl://{}/accessToken }}}}\n".format(cred["id"], other["id"]))
    assert "accessToken" in r.err and not out.exists()
    assert _issued(backend, cred["id"]) == [] and _issued(backend, other["id"]) == []
    # a malformed reference is refused before anything is read from the vault
    r = backend.wsctl("vault", "inject", "-r", "bad", input="x\ny={{{{ wsctl://{} }}}}\n".format(cred["id"]), expect=7)
    assert "Line 2" in r.err
    # a reason is required, as for every token
    backend.wsctl("vault", "inject", input="y={{{{ wsctl://{}/apiKey }}}}\n".format(cred["id"]), expect=2)
    assert _issued(backend, cred["id"]) == []


def test_env_and_token_take_jq(backend, cred):
    r = backend.wsctl("vault", "env", cred["id"], "--reason", "jq", "--jq", ".PTYSVC_URL")
    assert r.out == "https://pty.example\n"
    r = backend.wsctl("vault", "token", cred["id"], "--reason", "jq", "--jq", "keys")
    assert "apiKey" in r.out and KEY not in r.out
