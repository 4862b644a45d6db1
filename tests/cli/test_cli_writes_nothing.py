"""Read-only and failing commands write nothing (issue 9 item 4).

The embedded default workspace is made on first use by a command that needs a workspace to
answer (CONTRACT §1), and kept only if that command succeeds: a failing command removes the
workspace, the profile and the folders it made (cli/common/first_use.py). `auth status`, `auth whoami`,
`auth logout` and `--help` never make it. Each test lists every file under WSCTL_HOME before and
after."""
from __future__ import annotations

import getpass
import subprocess

import httpx

from tests.cli_helpers import one_error_line, read_toml
from tests.conftest import NO_BACKOFF, WSCTL, base_env, finish_all, free_port, run_wsctl


def tree(root) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def snapshot(root) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()} \
        if root.exists() else {}


def test_read_only_and_failing_commands_on_a_fresh_home_make_nothing(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = base_env(home)
    user = getpass.getuser()
    for args, code in ((["--help"], 0), (["auth", "--help"], 0), (["auth", "logout"], 0),
                       (["auth", "status"], 3), (["auth", "status", "--json"], 3), (["auth", "whoami"], 5),
                       (["auth", "login", "--member", "nobody@example.com"], 5),
                       (["vault", "token", "cred_nope", "--reason", "r"], 5),
                       (["specialist", "show", "prj_nope"], 5), (["auth", "token"], 7)):
        r = run_wsctl(args, env, expect=code)
        assert tree(home) == [], (args, tree(home))
        assert "Created a new workspace" not in r.err, (args, r.err)
        if code not in (0, 3):
            one_error_line(r)
    status = run_wsctl(["auth", "status", "--json"], env, expect=3).json
    assert status["signedIn"] is False and "No workspace yet" in status["error"], status
    assert "wsctl init" in one_error_line(run_wsctl(["auth", "whoami"], env, expect=5))

    # the folder itself is not left behind either when the command had to make it
    gone = tmp_path / "not-yet"
    run_wsctl(["auth", "login", "--member", "nobody@example.com"], base_env(gone), expect=5)
    assert not gone.exists()

    # the first command that succeeds makes it, announces it once, and keeps it
    r = run_wsctl(["auth", "login", "--member", f"{user}@localhost", "--json"], env)
    assert r.err == f"Created a new workspace at {home / 'workspace'} (owner: {user}).\n"
    assert read_toml(home / "config.toml")["profiles"]["default"]["member"] == r.json["member"]["id"]
    assert run_wsctl(["auth", "whoami", "--json"], env).json["member"]["email"] == f"{user}@localhost"


def test_a_failing_first_command_restores_the_config_it_found(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[profiles.prod]\nserver = "https://wsctl.example.com"\n')
    before = snapshot(home)
    env = base_env(home)
    for args in (["auth", "login", "--member", "nobody@example.com"], ["specialist", "show", "prj_nope"]):
        r = run_wsctl(args, env, expect=5)
        assert snapshot(home) == before, (args, r.err)
    # a profile that names the embedded workspace, which was removed by hand: made again, and the
    # entry is put back as it was when the command fails
    (home / "config.toml").write_text(f'profile = "default"\n[profiles.default]\nworkspace = "{home / "workspace"}"\n'
                                      'member = "um_gone"\n')
    before = snapshot(home)
    run_wsctl(["vault", "token", "cred_nope", "--reason", "r"], env, expect=5)
    assert snapshot(home) == before


def test_a_missing_workspace_named_by_the_environment_or_a_flag_is_not_made(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    missing = tmp_path / "nowhere"
    env = {**base_env(home), "WSCTL_WORKSPACE": str(missing)}
    for args, code in ((["vault", "list"], 5), (["members", "list", "--json"], 5), (["auth", "whoami"], 5),
                       (["auth", "status"], 5), (["auth", "login", "--member", "nobody@example.com"], 5)):
        line = one_error_line(run_wsctl(args, env, expect=code))
        assert str(missing) in line and "wsctl init" in line, line
    r = run_wsctl(["serve", "--workspace", missing, "--port", "0"], base_env(home), expect=5, timeout=60)
    assert str(missing) in one_error_line(r)
    assert tree(home) == [] and not missing.exists()


def test_a_failing_sign_in_writes_nothing_on_either_door(backend):
    """Remote: a wrong login code. Local: a member the workspace does not have."""
    home = backend.home
    before = snapshot(home)
    if backend.kind == "remote":
        env = {k: v for k, v in backend.env.items() if k not in ("WSCTL_SERVER", "WSCTL_TOKEN")}
        r = run_wsctl(["auth", "login", "--server", backend.base_url, "--code", "not-a-code"], env, expect=None)
        assert r.code in (3, 5, 7), r
        r = run_wsctl(["auth", "login", "--server", f"http://127.0.0.1:{free_port()}", "--code", "x"],
                      {**env, **NO_BACKOFF}, expect=8)
    else:
        r = backend.wsctl("auth", "login", "--member", "nobody@example.com", expect=5)
    one_error_line(r)
    assert snapshot(home) == before


def test_failing_and_succeeding_commands_racing_on_a_fresh_home_keep_one_workspace(tmp_path):
    home = tmp_path / "home"
    env = base_env(home)
    argvs = [["vault", "token", "cred_nope", "--reason", "r"], ["members", "list", "--json"]] * 3
    procs = [subprocess.Popen([*WSCTL, *a], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for a in argvs]
    results = finish_all(procs)
    assert [code for code, _, _ in results] == [5, 0] * 3, results
    owners = {out for code, out, _ in results if code == 0}
    assert len(owners) == 1, owners   # every success saw the one workspace that was kept
    announced = [err for _, _, err in results if "Created a new workspace" in err]
    assert len(announced) == 1, results
    listed = run_wsctl(["members", "list", "--json"], env)
    assert listed.out in owners and listed.err == ""


def test_serve_keeps_the_embedded_workspace_it_made_and_does_not_hold_others_up(tmp_path):
    home = tmp_path / "home"
    env = base_env(home)
    port = free_port()
    proc = subprocess.Popen([*WSCTL, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stderr.readline(), proc.stderr.readline()]
        assert lines[0].startswith("Created a new workspace at "), lines
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30, trust_env=False).status_code == 200
        # a local command on the same home runs while the server does (the first-use lock is released)
        r = run_wsctl(["members", "list", "--json"], env, timeout=120)
        assert len(r.json["members"]) == 1 and r.err == ""
    finally:
        proc.terminate()
        proc.wait(30)
        proc.stderr.close()
    assert (home / "workspace" / "workspace.db").is_file()
