"""The README's quick tour runs as written (issue 26 item 1).

The tour is read from README.md itself (the first ```sh block under "## Quick tour"), so the two
cannot drift, and run line after line by one bash in a fresh folder with a fresh HOME and
WSCTL_HOME, the `wsctl` on PATH being this checkout's. The only change made to its text is the
port: every `8750` becomes a free port (the server's and the URLs that name it). Around the lines
the harness adds what a person at a terminal does without typing it: after the line that starts
`wsctl serve ... &` it waits until the port answers, and whatever the tour leaves running is
stopped at the end (the tour itself ends with `kill %1`). A line that fails stops the run, naming
the README line; a line whose command printed an `error:` fails the test too (a `&&` list or an
`eval "$(...)"` whose inner command failed does not stop bash).

One run, on the SQLite door only: a tour is a local workspace plus `wsctl serve` over it, and its
line with WSCTL_SERVER and the CI key goes through that server over HTTP.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

from tests import forkserver
from tests.conftest import free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]
TOUR_PORT = "8750"


def tour_lines() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("\n## Quick tour\n"):]
    block = re.search(r"```sh\n(.*?)\n```", section, re.S)
    assert block, "README.md has no ```sh block under '## Quick tour'"
    return block.group(1).splitlines()


def script(lines: list[str], port: int) -> str:
    """The tour as one bash script: each README command preceded by its line number (for the
    message when it fails), here-doc bodies left whole, and the wait after `wsctl serve ... &`."""
    out = ['trap \'echo "README tour line $TOUR_LINE failed (exit $?): $BASH_COMMAND" >&2; kill $(jobs -p) 2>/dev/null; '
           'exit 97\' ERR']
    heredoc_end = None
    for n, raw in enumerate(lines, 1):
        line = raw.replace(TOUR_PORT, str(port))
        if heredoc_end is not None:
            out.append(line)
            if line.strip() == heredoc_end:
                heredoc_end = None
            continue
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(f"TOUR_LINE={n}")
        out.append(line)
        opened = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        if opened:
            heredoc_end = opened.group(1)
        code = line.split("  #")[0].rstrip()
        if code.startswith("wsctl serve") and code.endswith("&"):
            out.append(f"for _ in $(seq 1800); do (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && break; "
                       "sleep 0.1; done")
    assert heredoc_end is None, f"a here-doc in the tour never ends ({heredoc_end})"
    return "\n".join(out) + "\n"


# The `wsctl` the tour runs, when the suite's fork server can run it (tests/forkserver.py): a small
# client that hands the fork server its argv, environment, working directory and stdin/stdout/stderr,
# forwards the signals it gets (`kill %1`) to the forked `python -m workspacectl`, and exits with its
# exit code. Each command is still its own process running the real entry point; what it saves is
# Python's start-up and imports (~0.3 s of CPU) for each of the tour's thirty-odd commands.
FORKED_WSCTL = """#!{python} -IS
import json, os, signal, socket, sys
path = {serve!r} if sys.argv[1:2] == ["serve"] else {cli!r}
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(path)
request = {{"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}}
socket.send_fds(conn, [json.dumps(request).encode() + b"\\n"], [0, 1, 2])
buf = b""
while buf.count(b"\\n") < 1:
    buf += conn.recv(4096) or sys.exit("wsctl: the fork server did not start the command")
pid = json.loads(buf.split(b"\\n")[0])["pid"]
with open({pids!r}, "a") as f:
    f.write(f"{{pid}}\\n")
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, lambda s, _f: os.kill(pid, s))
while buf.count(b"\\n") < 2:
    chunk = conn.recv(4096)
    if not chunk:
        sys.exit("wsctl: the fork server lost the command")
    buf += chunk
code = os.waitstatus_to_exitcode(json.loads(buf.split(b"\\n")[1])["status"])
sys.exit(128 - code if code < 0 else code)
"""


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def wsctl_on_path(bin_dir: Path, env: dict) -> tuple[str, Path | None]:
    """(a PATH whose `wsctl` is this checkout's, the file listing the pids the fork server started
    or None). The fork server's when it can run commands in `env`, else the environment's console
    script, else a shim running `python -m workspacectl`."""
    bin_dir.mkdir()
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    cli, serve = forkserver._get_server("cli"), forkserver._get_server("serve")
    if cli is not None and serve is not None and forkserver._startup_env(env) == cli.startup == serve.startup:
        pids = bin_dir / "pids"
        pids.touch()
        shim = bin_dir / "wsctl"
        shim.write_text(FORKED_WSCTL.format(python=sys.executable, serve=serve.path, cli=cli.path, pids=str(pids)))
        shim.chmod(0o755)
        return path, pids
    here = Path(sys.executable).parent
    if (here / "wsctl").exists():
        return f"{here}{os.pathsep}{os.environ.get('PATH', '')}", None
    shim = bin_dir / "wsctl"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m workspacectl "$@"\n')
    shim.chmod(0o755)
    return path, None


def test_the_quick_tour_runs_as_written(tmp_path):
    lines = tour_lines()
    assert any(line.startswith("wsctl init --workspace ~/acme") for line in lines)
    port = free_port()
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WSCTL_") and not k.startswith("PG")}
    env.update({"HOME": str(home), "WSCTL_HOME": str(home / ".wsctl"), "PYTHONUNBUFFERED": "1",
                "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring", "NO_COLOR": "1", "TERM": "dumb"})
    env["PATH"], forked = wsctl_on_path(tmp_path / "bin", env)
    (tmp_path / "tour.sh").write_text(script(lines, port))
    # output to files, not pipes: a server left running keeps a pipe open, not bash's exit from being seen
    with (tmp_path / "out").open("w") as out_f, (tmp_path / "err").open("w") as err_f:
        proc = subprocess.Popen([shutil.which("bash") or "/bin/bash", "--noprofile", "--norc", str(tmp_path / "tour.sh")],
                                cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out_f, stderr=err_f,
                                start_new_session=True)
        try:
            proc.wait(timeout=600)   # bounds a hang; a healthy run takes seconds
            if proc.returncode == 0:   # the tour's last line, `kill %1`, stops the server
                wait_until(lambda: not listening(port), "the server still listens after the tour's `kill %1`", limit=60)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL if proc.poll() is None else signal.SIGTERM)  # what the tour left running
            except ProcessLookupError:
                pass
            proc.wait()
            for pid in forked.read_text().split() if forked else ():   # forked commands are not in that group
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
    out, err = (tmp_path / "out").read_text(), (tmp_path / "err").read_text()
    assert proc.returncode == 0, f"the tour stopped (exit {proc.returncode}):\n{err[-4000:]}"
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert not errors, f"a tour line printed an error:\n{err[-4000:]}"
    # each part did what the tour says
    assert (home / "acme" / "workspace.db").exists()
    assert "exporting with a 14-character key" in out               # vault run gave the script the key
    assert '"apiKey": "sk_test_51Live"' in out                      # the CI key got a token over HTTP
    assert "triage: created, published v1" in out
    env_file = work / "app.env"
    assert env_file.read_text() == "STRIPE_KEY=sk_test_51Live\n"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert "Renamed" in err and "to stripe-test" in err
    assert f"wsctl serving {home / 'acme'} on http://127.0.0.1:{port}" in err
