"""Exit codes and error lines of the real `wsctl` (CONTRACT §10), on both backends.

0 ok; 2 usage; 3 unauthenticated; 4 forbidden or insufficient scope; 5 not found; 6 conflict;
7 invalid input; 8 server unreachable. An error is one line on stderr saying what to do, with
no traceback unless --debug.
"""
from __future__ import annotations

from tests.cli_helpers import one_error_line
from tests.conftest import NO_BACKOFF, OWNER, base_env, free_port, run_wsctl


def test_usage_errors_exit_2_before_anything_is_made(tmp_path):
    home = tmp_path / "home"
    env = base_env(home)
    for args, says, help_of in ((["nosuch"], "No such command 'nosuch'", "wsctl"),
                                (["members", "add"], "Missing argument", "wsctl members add"),
                                (["keys", "create", "--scope", "vault:read"], "Missing option '--kind'",
                                 "wsctl keys create")):
        line = one_error_line(run_wsctl(args, env, expect=2))
        assert line.startswith(f"error: {says}") and line.endswith(f"See `{help_of} -h`."), line
    assert not (home / "workspace").exists() and not (home / "config.toml").exists()


def test_unreachable_server_exits_8_with_one_line_and_debug_shows_the_traceback(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"  # bound once, then closed: nothing listens there
    env = {**base_env(tmp_path / "home"), "WSCTL_SERVER": url, "WSCTL_TOKEN": "ws_session_" + "x" * 40, **NO_BACKOFF}
    line = one_error_line(run_wsctl(["members", "list"], env, expect=8))
    assert url in line and "WSCTL_SERVER" in line and "wsctl serve" in line
    r = run_wsctl(["--debug", "members", "list"], env, expect=8)
    assert "Traceback (most recent call last)" in r.err and r.err.strip().endswith(line)
    # `auth login` against a closed port: exit 8, and nothing is stored
    client = tmp_path / "client"
    r = run_wsctl(["auth", "login", "--server", url, "--code", "AAAA-BBBB-CCCC"], {**base_env(client), **NO_BACKOFF},
                  expect=8)
    assert url in one_error_line(r)
    assert not (client / "credentials.toml").exists() and not (client / "config.toml").exists()


def test_each_error_class_has_its_exit_code_and_changes_nothing(backend):
    member = backend.add_member("mia@example.com", "Mia Member")
    member_env = backend.env_for(backend.session(member["id"]))
    personal = backend.key("personal", ["projects:manage"])
    members_before = backend.ok("GET", "/v1/members")
    keys_before = backend.ok("GET", "/v1/keys")
    cases = [
        # (args, env, exit code, words the one error line must hold)
        (["members", "list"], backend.env_for("ws_session_" + "x" * 40), 3, "Sign in again"),
        (["vault", "list"], backend.env_for("ws_platform_" + "x" * 40), 3, "Use another key (`wsctl keys create`"),
        (["vault", "list"], backend.env_for(personal), 4, "Insufficient scope"),
        (["members", "login-code", OWNER["email"]], member_env, 4, "owner or admin"),
        (["members", "login-code", "nobody@example.com"], None, 5, "wsctl members list"),
        (["members", "add", OWNER["email"], "--name", "Twin"], None, 6, "already exists"),
        (["members", "add", "not-an-email", "--name", "X"], None, 7, "not an email address"),
        (["keys", "create", "--kind", "personal", "--scope", "vault:read"], None, 7, "belongs to platform keys, not personal ones"),
    ]
    lines = []
    for args, env, code, words in cases:
        lines.append(one_error_line(backend.wsctl(*args, env=env, expect=code)))
        assert words in lines[-1], (args, lines[-1])
    # insufficient scope keeps the contract's words and adds what to do
    assert lines[2].startswith("error: Insufficient scope: ") and "wsctl keys create" in lines[2]
    assert backend.ok("GET", "/v1/members") == members_before
    assert backend.ok("GET", "/v1/keys") == keys_before
    # --debug: the traceback, then the same line, and the same exit code
    r = backend.wsctl("--debug", "members", "add", OWNER["email"], "--name", "Twin", expect=6)
    assert "Traceback (most recent call last)" in r.err and "ApiError" in r.err
    assert r.err.strip().splitlines()[-1].startswith("error: A member with email")


def test_an_expired_login_code_exits_5_and_stores_nothing(server_pool, tmp_path):
    """A code made 20 minutes ago (the clock offset; codes live 15) is 410 expired: exit 5. The
    offsets keep minutes of slack either side of the expiry, so a slow machine cannot flip them."""
    ws, server = server_pool.take()
    try:
        maker = {**base_env(tmp_path / "admin"), "WSCTL_WORKSPACE": str(ws), "WSCTL_NOW_OFFSET_SECONDS": str(-20 * 60)}
        code = run_wsctl(["members", "login-code", OWNER["email"]], maker).out.strip()
        client = tmp_path / "client"
        r = run_wsctl(["auth", "login", "--server", server.url, "--code", code], base_env(client), expect=5)
        assert "expired" in one_error_line(r)
        assert not (client / "credentials.toml").exists() and not (client / "config.toml").exists()
        # a code made 10 minutes ago (5 minutes before its expiry) still works, once
        client_env = base_env(client)
        fresh = run_wsctl(["members", "login-code", OWNER["email"]],
                          {**maker, "WSCTL_NOW_OFFSET_SECONDS": str(-10 * 60)}).out.strip()
        run_wsctl(["auth", "login", "--server", server.url, "--code", fresh], client_env)
        assert "already used" in one_error_line(
            run_wsctl(["auth", "login", "--server", server.url, "--code", fresh], client_env, expect=3))
    finally:
        server.stop()


def test_an_argument_holding_a_newline_still_gives_one_error_line(backend):
    """An error message that quotes an argument holding control characters shows them escaped,
    so the error stays one line (CONTRACT §10), over HTTP too; and `wsctl api` with a newline
    in the path is 404 on both backends (urlsplit used to drop it locally and reach the route)."""
    for args, code in ((["trigger", "show", "a\nb"], 5), (["members", "login-code", "a\nb@x"], 5),
                       (["members", "add", "a\nb@example.com", "--name", "X"], 7),
                       (["memory", "files", "org", "--path", "a\nb"], 7),
                       (["api", "GET", "/v1/trig\ngers"], 5)):
        line = one_error_line(backend.wsctl(*args, expect=code))
        assert "\\n" in line or "%0A" in line or "Not Found" in line, (args, line)
    r = backend.api("POST", "/v1/members", {"email": "x\ny@example.com", "name": "X"})
    assert r.status == 400 and "\n" not in r.body["error"]["message"], r.body
