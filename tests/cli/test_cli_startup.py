"""Before any API call: a bare `wsctl`, `wsctl serve` that cannot listen, several commands racing
to make the embedded workspace on a fresh machine, and a server URL that is not one. Each bad
input is one line on stderr and its own exit code, and changes nothing (CONTRACT §10)."""
from __future__ import annotations

import re
import socket
import subprocess

import httpx

from tests.cli_helpers import one_error_line
from tests.conftest import WSCTL, answers_health, base_env, run_wsctl, wait_until


def test_a_bare_wsctl_or_group_shows_its_help_on_stderr_and_exits_2(tmp_path):
    env = base_env(tmp_path / "home")
    for args, usage in (([], "Usage: wsctl [OPTIONS] COMMAND"), (["members"], "Usage: wsctl members [OPTIONS] COMMAND")):
        r = run_wsctl(args, env, expect=2)
        assert r.out == "" and r.err.startswith(usage) and "error:" not in r.err, r.err
        assert "Commands:" in r.err and "Traceback" not in r.err
    assert not (tmp_path / "home").exists()


def test_serve_that_cannot_listen_says_so_in_one_line(workspace, home):
    env = base_env(home)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = run_wsctl(["serve", "--workspace", workspace, "--port", port], env, expect=7, timeout=60)
        line = one_error_line(r)
        assert f"127.0.0.1:{port}" in line and "--port" in line, line
    r = run_wsctl(["serve", "--workspace", workspace, "--host", "no-such-host.invalid", "--port", "0"], env,
                  expect=7, timeout=60)
    assert "no-such-host.invalid" in one_error_line(r)

    # --port 0: the OS picks a free port, and the line announcing the server names it.
    proc = subprocess.Popen([*WSCTL, "serve", "--workspace", str(workspace), "--port", "0"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stderr.readline()
        m = re.search(r"on (http://127\.0\.0\.1:(\d+))$", first.strip())
        assert m and m.group(2) != "0", first
        wait_until(lambda: answers_health(m.group(1)), "the server did not answer /healthz", proc)
        assert httpx.get(m.group(1) + "/healthz", timeout=60, trust_env=False).json() == {"ok": True}
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stderr.close()


def test_commands_racing_on_a_fresh_machine_make_one_embedded_workspace(tmp_path):
    home = tmp_path / "home"
    env = base_env(home)
    procs = [subprocess.Popen([*WSCTL, "members", "list", "--json"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [(p.wait(120), p.stdout.read(), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert [code for code, _, _ in results] == [0] * 4, results
    owners = {out for _, out, _ in results}
    assert len(owners) == 1, owners  # every process saw the same one owner
    announced = [err for _, _, err in results if err]
    assert len(announced) == 1 and announced[0].startswith("Created a new workspace at "), results


def test_a_server_url_that_is_not_one_is_invalid_input_not_unreachable(tmp_path):
    home = tmp_path / "home"
    for url in ("localhost:8750", "not a url", "http://", "http://[::1", "http://host:port", "ftp://host"):
        env = {**base_env(home), "WSCTL_SERVER": url, "WSCTL_TOKEN": "ws_session_" + "x" * 40}
        line = one_error_line(run_wsctl(["members", "list"], env, expect=7))
        assert "WSCTL_SERVER" in line and "http(s)://" in line, line
    assert not home.exists()  # nothing made: no embedded workspace, no config
