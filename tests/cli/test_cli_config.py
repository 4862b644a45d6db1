"""Setting up and choosing a workspace through the real CLI: `wsctl init`, the embedded default
workspace, `auth login --member`, the order of environment overrides (CONTRACT §1), and
`wsctl serve` side by side with local commands on one folder."""
from __future__ import annotations

import getpass
import re
import sqlite3
import sys

import pytest
import tomli_w

from tests.cli_helpers import one_error_line, read_toml
from tests.conftest import base_env, copy_workspace, make_backend, run_wsctl


def test_the_embedded_workspace_is_made_on_first_use_and_announced_once(tmp_path):
    home = tmp_path / "home"
    env = base_env(home)
    r = run_wsctl(["members", "list", "--json"], env)
    (owner,) = r.json["members"]
    user = getpass.getuser()
    assert (owner["name"], owner["email"], owner["role"]) == (user, f"{user}@localhost", "owner")
    ws = home / "workspace"
    assert r.err == f"Created a new workspace at {ws} (owner: {user}).\n"
    assert (ws / "workspace.db").is_file() and (ws / "blobs").is_dir()
    assert read_toml(home / "config.toml")["profiles"]["default"] == {"workspace": str(ws), "member": owner["id"]}
    again = run_wsctl(["members", "list"], env)
    assert again.err == "" and again.out.startswith(owner["id"] + "\t")


@pytest.mark.skipif(sys.platform != "linux", reason="XDG directories are the Linux layout of platformdirs")
def test_without_wsctl_home_platformdirs_decides_where_things_live(tmp_path):
    env = base_env(tmp_path / "unused")
    del env["WSCTL_HOME"]
    env.update(HOME=str(tmp_path / "h"), XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    r = run_wsctl(["members", "list"], env)
    ws = tmp_path / "data" / "wsctl" / "workspace"  # platformdirs.user_data_dir("wsctl")/workspace
    assert str(ws) in r.err and (ws / "workspace.db").is_file()
    assert read_toml(tmp_path / "cfg" / "wsctl" / "config.toml")["profiles"]["default"]["workspace"] == str(ws)
    assert not (tmp_path / "unused").exists()


def test_init_makes_a_workspace_refuses_a_second_and_auth_login_member_switches(tmp_path):
    home = tmp_path / "home"
    env = base_env(home)
    folder = tmp_path / "team"
    made = run_wsctl(["init", "--workspace", folder, "--name", "Team", "--owner-name", "Ada Owner",
                      "--owner-email", "Ada@Example.com", "--json"], env).json
    owner = made["owner"]
    assert (made["workspace"], made["name"], made["profile"]) == (str(folder.resolve()), "Team", "default")
    assert (owner["name"], owner["email"], owner["role"]) == ("Ada Owner", "ada@example.com", "owner")
    assert (folder / "blobs").is_dir()
    con = sqlite3.connect(folder / "workspace.db")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    assert read_toml(home / "config.toml")["profiles"]["default"] == {"workspace": str(folder.resolve()),
                                                                       "member": owner["id"]}
    who = run_wsctl(["auth", "whoami", "--json"], env).json
    assert (who["member"], who["kind"], who["workspace"]) == (owner, "session", "Team")

    def snapshot():
        con = sqlite3.connect(folder / "workspace.db")
        rows = con.execute("SELECT * FROM members ORDER BY id").fetchall(), \
            con.execute("SELECT * FROM settings ORDER BY key").fetchall()
        con.close()
        return rows, (home / "config.toml").read_bytes()

    before = snapshot()
    r = run_wsctl(["init", "--workspace", folder, "--name", "Other", "--owner-name", "Eve",
                   "--owner-email", "eve@example.com"], env, expect=6)
    assert "already exists" in one_error_line(r) and f"WSCTL_WORKSPACE={folder.resolve()}" in r.err
    r = run_wsctl(["init", "--workspace", tmp_path / "bad", "--owner-email", "not-an-email"], env, expect=7)
    assert "not an email address" in one_error_line(r)
    assert not (tmp_path / "bad").exists() and snapshot() == before

    # act locally as another member of the workspace
    mia = run_wsctl(["members", "add", "mia@example.com", "--name", "Mia", "--json"], env).json
    run_wsctl(["auth", "login", "--member", "mia@example.com"], env)
    st = run_wsctl(["auth", "status"], env).out
    assert re.search(r"token from +profile member", st) and re.search(r"signed in as +Mia <mia@example.com> \(member\)", st)
    assert "owner or admin" in one_error_line(run_wsctl(["members", "add", "x@example.com"], env, expect=4))
    assert read_toml(home / "config.toml")["profiles"]["default"]["member"] == mia["id"]
    assert "wsctl members list" in one_error_line(
        run_wsctl(["auth", "login", "--member", "nobody@example.com"], env, expect=5))
    assert read_toml(home / "config.toml")["profiles"]["default"]["member"] == mia["id"]


def test_environment_overrides_in_the_contract_order(tmp_path, home, template_workspace, server_pool):
    """flag > WSCTL_PROFILE > WSCTL_SERVER > WSCTL_WORKSPACE > WSCTL_TOKEN > WSCTL_API_KEY > config."""
    a = copy_workspace(template_workspace, tmp_path / "a")
    b = copy_workspace(template_workspace, tmp_path / "b")
    local_a = make_backend("local", a, home)
    alfa = local_a.add_member("alfa@example.com", "Alfa")
    alfa_key = local_a.key("personal", ["projects:manage"], member_id=alfa["id"])
    a_owner_token = local_a.owner_token
    local_a.close()
    ws_s, server = server_pool.take()
    remote = make_backend("remote", ws_s, home, server=server)
    s_key = remote.key("personal", ["projects:manage"])
    client = tmp_path / "client"
    client.mkdir()
    (client / "config.toml").write_text(tomli_w.dumps({"profile": "default", "profiles": {
        "default": {"workspace": str(a), "member": alfa["id"]}, "other": {"workspace": str(b)}, "srv": {"server": remote.base_url}}}))
    env = base_env(client)

    def status(*flags, **overrides):
        return run_wsctl([*flags, "auth", "status", "--json"], {**env, **overrides}).json

    try:
        st = status()
        assert (st["location"], st["tokenSource"], st["member"]["id"]) == (str(a), "profile member", alfa["id"])
        assert status(WSCTL_PROFILE="other")["location"] == str(b)
        assert status("--profile", "default", WSCTL_PROFILE="other")["location"] == str(a)
        st = status(WSCTL_WORKSPACE=str(b))  # the profile's member belongs to its own workspace only
        assert (st["location"], st["tokenSource"], st["member"]["role"]) == (str(b), "workspace owner", "owner")
        st = status(WSCTL_SERVER=remote.base_url, WSCTL_WORKSPACE=str(b), WSCTL_TOKEN=remote.owner_token,
                    WSCTL_API_KEY=s_key)
        assert (st["backend"], st["location"], st["tokenSource"], st["kind"]) == \
            ("remote", remote.base_url, "WSCTL_TOKEN", "session")
        st = status(WSCTL_TOKEN=a_owner_token, WSCTL_API_KEY=alfa_key)
        assert (st["backend"], st["tokenSource"], st["kind"], st["member"]["role"]) == \
            ("local", "WSCTL_TOKEN", "session", "owner")
        # A profile named by the flag or WSCTL_PROFILE is stronger than every variable after it:
        # it is used as configured, whatever WSCTL_SERVER, WSCTL_WORKSPACE or a secret say.
        others = dict(WSCTL_SERVER=remote.base_url, WSCTL_WORKSPACE=str(a), WSCTL_TOKEN=remote.owner_token,
                      WSCTL_API_KEY=s_key)
        for st in (status("--profile", "other", **others), status(WSCTL_PROFILE="other", **others)):
            assert (st["backend"], st["location"], st["tokenSource"], st["kind"]) == \
                ("local", str(b), "workspace owner", "session")
        st = status("--profile", "default", WSCTL_SERVER=remote.base_url, WSCTL_TOKEN=remote.owner_token)
        assert (st["location"], st["tokenSource"], st["member"]["id"]) == (str(a), "profile member", alfa["id"])
        # A named remote profile with no stored token: its server, the token variable fills in.
        st = status("--profile", "srv", WSCTL_SERVER="http://127.0.0.1:9", WSCTL_TOKEN=remote.owner_token)
        assert (st["backend"], st["location"], st["tokenSource"], st["signedIn"]) == \
            ("remote", remote.base_url, "WSCTL_TOKEN", True)
        # A profile that does not exist yet names nothing to use: the variables apply.
        st = status("--profile", "ci", WSCTL_SERVER=remote.base_url, WSCTL_TOKEN=remote.owner_token)
        assert (st["backend"], st["location"], st["tokenSource"]) == ("remote", remote.base_url, "WSCTL_TOKEN")
    finally:
        remote.close()


def test_serve_and_local_commands_share_one_workspace(server_pool, home):
    ws, server = server_pool.take()
    remote = make_backend("remote", ws, home, server=server)
    local_env = {**base_env(home), "WSCTL_WORKSPACE": str(ws)}
    try:
        run_wsctl(["members", "add", "loc@example.com", "--name", "Loc"], local_env)
        assert "loc@example.com" in {m["email"] for m in remote.ok("GET", "/v1/members")["members"]}
        remote.wsctl("members", "add", "rem@example.com", "--name", "Rem")
        local_json = run_wsctl(["members", "list", "--json"], local_env).out
        assert local_json == remote.wsctl("members", "list", "--json").out  # byte for byte
        assert "rem@example.com" in local_json
        key = run_wsctl(["keys", "create", "--kind", "personal", "--scope", "triggers:manage"], local_env).out.strip()
        assert remote.api("GET", "/v1/triggers", secret=key).status == 200
    finally:
        remote.close()
