"""Profiles you can see and switch (issue 12 item 2): `wsctl profile list | show | use | rename | remove`,
`auth login --profile X [--activate]`, `init --workspace DIR` making or naming a profile and saying
so, `auth status` listing the others. Real CLI subprocesses, each test its own WSCTL_HOME."""
from __future__ import annotations

from tests.cli.test_cli_writes_nothing import snapshot, tree
from tests.cli_helpers import one_error_line, read_toml
from tests.conftest import NO_BACKOFF, base_env, run_wsctl, serve


def test_profile_commands_and_auth_status_make_nothing(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = base_env(home)
    for args, code in ((["profile", "list"], 0), (["profile", "list", "--json"], 0), (["profile", "--help"], 0),
                       (["profile", "show"], 5), (["profile", "use", "x"], 5), (["profile", "remove", "x", "--yes"], 5),
                       (["auth", "status", "--json"], 3)):
        r = run_wsctl(args, env, expect=code)
        assert tree(home) == [], (args, tree(home))
        if code == 5:
            assert "No profile" in one_error_line(r)
    assert run_wsctl(["profile", "list", "--json"], env).json == {"profiles": [], "active": "default"}
    # with profiles, reading them changes no byte under WSCTL_HOME
    run_wsctl(["init", "--workspace", tmp_path / "a"], env)
    before = snapshot(home)
    for args, code in ((["profile", "list"], 0), (["profile", "show", "default", "--json"], 0),
                       (["auth", "status"], 0), (["profile", "show", "nope"], 5)):
        run_wsctl(args, env, expect=code)
        assert snapshot(home) == before, args


def test_init_makes_or_names_a_profile_and_says_so(tmp_path):
    home = tmp_path / "home"
    env = base_env(home)
    a = run_wsctl(["init", "--workspace", tmp_path / "a", "--json"], env).json
    assert (a["profile"], a["active"]) == ("default", True)
    # a second workspace does not repoint the active profile: it gets a profile named after its folder,
    # which becomes the active one (as `gh auth login` makes the new host active), saying how to go back
    r = run_wsctl(["init", "--workspace", tmp_path / "My Team"], env)
    assert "new profile 'my-team'" in r.err and "now the active profile" in r.err
    assert "it was 'default': `wsctl profile use default` switches back" in r.err
    config = read_toml(home / "config.toml")
    assert config["profile"] == "my-team"
    assert config["profiles"]["default"]["workspace"] == str(tmp_path / "a")
    assert config["profiles"]["my-team"]["workspace"] == str(tmp_path / "My Team")
    assert run_wsctl(["profile", "show", "--json"], env).json["name"] == "my-team"
    # --no-activate keeps the one you use, and says how to use the new one
    r = run_wsctl(["init", "--workspace", tmp_path / "x" / "my-team", "--no-activate"], env)
    assert "new profile 'my-team-2'" in r.err and "wsctl profile use my-team-2" in r.err and "-p my-team-2" in r.err
    assert read_toml(home / "config.toml")["profile"] == "my-team"
    # named with --profile: that profile, made active
    d = run_wsctl(["-p", "ops", "init", "--workspace", tmp_path / "d", "--json"], env).json
    assert (d["profile"], d["active"]) == ("ops", True)
    listed = run_wsctl(["profile", "list", "--json"], env).json
    assert listed["active"] == "ops"
    assert [(p["name"], p["active"]) for p in listed["profiles"]] == [
        ("default", False), ("my-team", False), ("my-team-2", False), ("ops", True)]
    assert run_wsctl(["profile", "list"], env).out.splitlines()[3].startswith("*\tops\tlocal\t")
    status = run_wsctl(["auth", "status", "--json"], env).json
    assert status["profile"] == "ops" and status["otherProfiles"] == ["default", "my-team", "my-team-2"]
    assert "default, my-team, my-team-2" in run_wsctl(["auth", "status"], env).out
    # WSCTL_PROFILE chooses for one shell without changing the active one
    shown = run_wsctl(["profile", "show", "--json"], {**env, "WSCTL_PROFILE": "my-team"}).json
    assert (shown["name"], shown["active"], shown["inUse"]) == ("my-team", False, True)


def test_use_and_remove(tmp_path):
    home = tmp_path / "home"
    env = base_env(home)
    for name in ("default", "b", "c"):
        run_wsctl(["-p", name, "init", "--workspace", tmp_path / name], env)
    run_wsctl(["profile", "use", "c"], env)
    assert read_toml(home / "config.toml")["profile"] == "c"
    assert run_wsctl(["auth", "whoami", "--json"], env).json["member"]["role"] == "owner"
    # the active one: refused without a terminal or --yes, and nothing changes
    before = snapshot(home)
    assert "--yes" in one_error_line(run_wsctl(["profile", "remove", "c"], env, expect=7))
    assert snapshot(home) == before
    r = run_wsctl(["profile", "remove", "c", "--yes", "--json"], env)
    assert r.json == {"removed": "c", "active": "default", "sessionRevoked": None}  # a local profile has no session
    config = read_toml(home / "config.toml")
    assert config["profile"] == "default" and sorted(config["profiles"]) == ["b", "default"]
    assert (tmp_path / "c" / "workspace.db").exists()  # the workspace itself is left alone
    # another one: no question asked, the active one stays
    run_wsctl(["profile", "remove", "b"], env)
    assert read_toml(home / "config.toml")["profile"] == "default"
    r = run_wsctl(["profile", "remove", "default", "--yes"], env)
    assert "No profile is left" in r.err
    assert "profiles" not in read_toml(home / "config.toml")


def test_login_profile_says_how_to_use_it_and_remove_deletes_its_token(tmp_path, workspace):
    from tests.conftest import _owner_and_token

    home = tmp_path / "client"
    env = base_env(home)
    run_wsctl(["init", "--workspace", tmp_path / "local"], env)
    _, session = _owner_and_token(workspace)
    with serve(workspace) as url:
        def code() -> str:
            import httpx

            owner = httpx.get(url + "/v1/auth/whoami", headers={"Authorization": f"Bearer {session}"},
                              trust_env=False).json()["member"]["id"]
            return httpx.post(f"{url}/v1/members/{owner}/login-codes", headers={"Authorization": f"Bearer {session}"},
                              trust_env=False).json()["code"]

        r = run_wsctl(["auth", "login", "--server", url, "--code", code(), "--profile", "prod"], env)
        assert "not the active profile" in r.err and "wsctl profile use prod" in r.err and "-p prod" in r.err
        assert read_toml(home / "config.toml")["profile"] == "default"
        stored = read_toml(home / "credentials.toml")
        assert list(stored) == ["profile:prod"]
        assert run_wsctl(["-p", "prod", "auth", "whoami", "--json"], env).json["member"]["email"]
        shown = run_wsctl(["profile", "show", "prod", "--json"], env).json
        assert shown["backend"] == "remote" and shown["tokenStorage"] == "credentials file"
        assert stored["profile:prod"] not in run_wsctl(["profile", "show", "prod"], env).out

        run_wsctl(["profile", "remove", "prod"], env)
        assert "profile:prod" not in read_toml(home / "credentials.toml")
        assert "prod" not in read_toml(home / "config.toml")["profiles"]

        r = run_wsctl(["auth", "login", "--server", url, "--code", code(), "--profile", "prod", "--activate",
                       "--json"], env)
        assert r.json["active"] is True and read_toml(home / "config.toml")["profile"] == "prod"
        assert run_wsctl(["auth", "status", "--json"], env).json["signedIn"] is True


# ------------------------------------------------------------------ rename, and remove revoking

def _signed_in_profile(backend, home, name: str) -> str | None:
    """A profile `name` for the backend's workspace in a client home of its own: signed in to the
    server with a login code (answers the stored token), or naming the local workspace (None)."""
    env = base_env(home)
    if backend.kind == "remote":
        code = backend.ok("POST", f"/v1/members/{backend.owner['id']}/login-codes")["code"]
        run_wsctl(["auth", "login", "--server", backend.base_url, "--code", code, "--profile", name], env)
        return read_toml(home / "credentials.toml")[f"profile:{name}"]
    import tomli_w

    data = read_toml(home / "config.toml") if (home / "config.toml").exists() else {}
    data.setdefault("profiles", {})[name] = {"workspace": str(backend.workspace), "member": backend.owner["id"]}
    data.setdefault("profile", name)
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(tomli_w.dumps(data))
    return None


def test_rename_moves_the_token_and_remove_revokes_the_session(backend, tmp_path):
    home = tmp_path / "client"
    env = base_env(home)
    token = _signed_in_profile(backend, home, "prod")
    _signed_in_profile(backend, home, "other")
    r = run_wsctl(["profile", "rename", "prod", "live", "--json"], env)
    assert r.json == {"renamed": "prod", "name": "live", "active": True}
    config = read_toml(home / "config.toml")
    assert config["profile"] == "live" and sorted(config["profiles"]) == ["live", "other"]
    if token:
        stored = read_toml(home / "credentials.toml")
        assert stored["profile:live"] == token and "profile:prod" not in stored
    assert run_wsctl(["-p", "live", "auth", "whoami", "--json"], env).json["member"]["id"] == backend.owner["id"]
    # refused, and nothing changes: a name taken, a bad name, no such profile
    before = snapshot(home)
    assert "exists already" in one_error_line(run_wsctl(["profile", "rename", "live", "other"], env, expect=6))
    for bad in ("two words", "a/b", ".hidden", "x" * 65):
        assert "is not a profile name" in one_error_line(run_wsctl(["profile", "rename", "live", bad], env, expect=7))
    assert "No profile 'prod'" in one_error_line(run_wsctl(["profile", "rename", "prod", "p2"], env, expect=5))
    assert snapshot(home) == before

    r = run_wsctl(["profile", "remove", "live", "--yes", "--json"], env)
    assert r.json == {"removed": "live", "active": "other", "sessionRevoked": True if token else None}
    assert "live" not in read_toml(home / "config.toml")["profiles"]
    if token:
        assert backend.api("GET", "/v1/auth/whoami", secret=token).status == 401   # revoked on the server
        assert "profile:live" not in read_toml(home / "credentials.toml")


def test_remove_when_the_session_cannot_be_revoked(backend, tmp_path):
    """A server that cannot be reached: nothing is removed and the error says so and names --force;
    with --force the profile goes and the output says its session is still valid there."""
    if backend.kind != "remote":
        import pytest

        pytest.skip("a local profile has no server session to revoke (the other test covers its removal)")
    import socket

    import tomli_w

    home = tmp_path / "client"
    env = base_env(home)
    token = _signed_in_profile(backend, home, "gone")
    with socket.socket() as s:   # a port nobody listens on once closed
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    config = read_toml(home / "config.toml")
    config["profiles"]["gone"]["server"] = dead
    (home / "config.toml").write_text(tomli_w.dumps(config))
    before = snapshot(home)
    r = run_wsctl(["profile", "remove", "gone", "--yes"], {**env, **NO_BACKOFF}, expect=8)
    line = one_error_line(r)
    assert "Could not revoke" in line and dead in line and "--force" in line and "Nothing was removed" in line
    assert snapshot(home) == before
    r = run_wsctl(["profile", "remove", "gone", "--yes", "--force", "--json"], {**env, **NO_BACKOFF})
    assert r.json == {"removed": "gone", "active": None, "sessionRevoked": False}
    r2 = read_toml(home / "config.toml")
    assert "profiles" not in r2
    assert "profile:gone" not in read_toml(home / "credentials.toml")
    assert backend.api("GET", "/v1/auth/whoami", secret=token).status == 200   # still valid: it said so
    # without --json the sentence says it
    _signed_in_profile(backend, home, "gone2")
    config = read_toml(home / "config.toml")
    config["profiles"]["gone2"]["server"] = dead
    (home / "config.toml").write_text(tomli_w.dumps(config))
    r = run_wsctl(["profile", "remove", "gone2", "--yes", "--force"], env)
    assert "could not be revoked" in r.err and "stays valid there" in r.err
