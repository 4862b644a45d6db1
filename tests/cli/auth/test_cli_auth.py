"""`wsctl auth` against a real `wsctl serve`: login codes, where tokens are kept, profiles,
status, whoami, token, logout, and what each key kind made by such a session may reach.

The client mostly runs with no usable OS keyring (conftest's base_env), so tokens go to the 0600
credentials.toml; a working and a hung keyring are tiny backend modules put on PYTHONPATH.
(tests/core/test_crypto.py covers a hung keyring for the workspace key; this is the client's token.)
"""
from __future__ import annotations

import json
import re
import stat

import httpx
import pytest

from tests.cli_helpers import CaptureServer, one_error_line, read_toml
from tests.conftest import base_env, make_backend, run_wsctl


@pytest.fixture
def remote(server_pool, home):
    ws, server = server_pool.take()
    b = make_backend("remote", ws, home, server=server)
    yield b
    b.close()


def login_code(remote, member_id: str) -> str:
    return remote.ok("POST", f"/v1/members/{member_id}/login-codes")["code"]


def test_login_status_whoami_token_profiles_and_logout(remote, tmp_path):
    url = remote.base_url
    mia = remote.add_member("mia@example.com", "Mia Member")
    client = tmp_path / "client"
    env = base_env(client)

    # login reading the code from stdin (not a TTY); the keyring fallback warns exactly once
    r = run_wsctl(["auth", "login", "--server", url], env, input=login_code(remote, mia["id"]) + "\n")
    warnings = [line for line in r.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "credentials.toml" in warnings[0] and "0600" in warnings[0], r.err
    assert f"Signed in to {url} as Mia Member" in r.err and "credentials.toml" in r.err
    creds = client / "credentials.toml"
    assert stat.S_IMODE(creds.stat().st_mode) == 0o600
    token = read_toml(creds)["profile:default"]
    assert token.startswith("ws_session_")
    config_text = (client / "config.toml").read_text()
    assert "ws_session_" not in config_text and token not in config_text
    assert read_toml(client / "config.toml")["profiles"]["default"] == {"server": url}

    status = run_wsctl(["auth", "status"], env)
    assert re.search(r"^token from\s+credentials file$", status.out, re.M), status.out
    assert re.search(r"^signed in as\s+Mia Member <mia@example.com> \(member\)$", status.out, re.M)
    assert status.err == ""  # the warning is for storing, not for every read
    who = run_wsctl(["auth", "whoami", "--json"], env).json
    assert who["member"] == mia and who["kind"] == "session"
    assert run_wsctl(["auth", "token"], env).out == token + "\n"

    # a second profile, signed in with --code, leaves the first one alone
    run_wsctl(["auth", "login", "--server", url, "--code", login_code(remote, remote.owner["id"]),
               "--profile", "boss"], env)
    cfg = read_toml(client / "config.toml")
    assert cfg["profile"] == "default" and set(cfg["profiles"]) == {"default", "boss"}
    assert read_toml(creds)["profile:default"] == token
    # --profile beats WSCTL_PROFILE, which beats the config's default
    who = run_wsctl(["--profile", "boss", "auth", "whoami", "--json"], {**env, "WSCTL_PROFILE": "default"}).json
    assert who["member"]["id"] == remote.owner["id"]
    assert run_wsctl(["auth", "whoami", "--json"], {**env, "WSCTL_PROFILE": "boss"}).json["member"]["id"] == \
        remote.owner["id"]

    # a used code, and no code at all on stdin, leave the stored token as it was
    used = login_code(remote, mia["id"])
    remote.ok("POST", "/v1/auth/session", {"code": used}, secret="")
    assert "Ask an admin of that workspace for a new one" in one_error_line(
        run_wsctl(["auth", "login", "--server", url, "--code", used], env, expect=3))
    assert "--code" in one_error_line(run_wsctl(["auth", "login", "--server", url], env, input="", expect=7))
    assert read_toml(creds)["profile:default"] == token

    # the session makes keys over HTTP; each kind reaches exactly its own routes
    platform = run_wsctl(["keys", "create", "--kind", "platform", "--scope", "vault:read", "--name", "ci"], env)
    personal = run_wsctl(["keys", "create", "--kind", "personal", "-s", "triggers:manage", "--json"], env).json
    assert platform.out.strip().startswith("ws_platform_") and "shown once" in platform.err
    assert personal["secret"].startswith("ws_personal_") and personal["memberId"] == mia["id"]
    as_platform = {**env, "WSCTL_API_KEY": platform.out.strip()}
    as_personal = {**env, "WSCTL_API_KEY": personal["secret"]}
    assert run_wsctl(["vault", "list", "--json"], as_platform).json["credentials"] == []
    assert run_wsctl(["trigger", "list", "--json"], as_personal).json["triggers"]
    for args, key_env in ((["trigger", "list"], as_platform), (["members", "list"], as_platform),
                          (["vault", "list"], as_personal), (["catalog", "integrations"], as_personal)):
        assert "Insufficient scope" in one_error_line(run_wsctl(args, key_env, expect=4)), args
    st = run_wsctl(["auth", "status", "--json"], as_personal).json
    assert (st["tokenSource"], st["kind"], st["scopes"], st["member"]["id"]) == \
        ("WSCTL_API_KEY", "personal", ["triggers:manage"], mia["id"])
    st = run_wsctl(["auth", "status", "--json"], {**as_personal, "WSCTL_TOKEN": remote.owner_token}).json
    assert (st["tokenSource"], st["kind"], st["member"]["id"]) == ("WSCTL_TOKEN", "session", remote.owner["id"])

    # logout revokes the session on the server and forgets it here; the other profile stays
    run_wsctl(["auth", "logout"], env)
    assert httpx.get(url + "/v1/auth/whoami", headers={"Authorization": f"Bearer {token}"}, trust_env=False).status_code == 401
    assert "profile:default" not in read_toml(creds) and "profile:boss" in read_toml(creds)
    r = run_wsctl(["auth", "status"], env, expect=3)
    assert re.search(r"^signed in\s+no: ", r.out, re.M) and "wsctl auth login" in r.out


def test_a_profile_token_is_never_sent_to_another_server(remote, tmp_path):
    client = tmp_path / "client"
    env = base_env(client)
    run_wsctl(["auth", "login", "--server", remote.base_url, "--code", login_code(remote, remote.owner["id"])], env)
    token = read_toml(client / "credentials.toml")["profile:default"]
    with CaptureServer() as other:
        r = run_wsctl(["auth", "status", "--json"], {**env, "WSCTL_SERVER": other.url}, expect=3)
    assert other.seen and all(h is None or token not in h for h in other.seen), other.seen
    assert (r.json["location"], r.json["tokenSource"], r.json["signedIn"]) == (other.url, "withheld", False)


KEYRINGS = '''
import json
import os
import time

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class Working(KeyringBackend):
    """A working OS keyring stand-in, kept in the JSON file TEST_KEYRING_FILE."""
    priority = 1

    def _load(self):
        try:
            with open(os.environ["TEST_KEYRING_FILE"]) as f:
                return json.load(f)
        except FileNotFoundError:
            return {}

    def _save(self, data):
        with open(os.environ["TEST_KEYRING_FILE"], "w") as f:
            json.dump(data, f)

    def get_password(self, service, username):
        return self._load().get(f"{service}/{username}")

    def set_password(self, service, username, password):
        self._save({**self._load(), f"{service}/{username}": password})

    def delete_password(self, service, username):
        data = self._load()
        if data.pop(f"{service}/{username}", None) is None:
            raise PasswordDeleteError(username)
        self._save(data)


class Hung(KeyringBackend):
    """A keyring whose every call blocks, like a locked vault behind a stuck D-Bus. Each call
    that reaches it is recorded (process id and method) in TEST_KEYRING_FILE + ".calls"."""
    priority = 1

    def _hang(self, method):
        with open(os.environ["TEST_KEYRING_FILE"] + ".calls", "a") as f:
            f.write(f"{os.getpid()} {method}\\n")
        time.sleep(3600)

    def get_password(self, service, username):
        self._hang("get_password")

    def set_password(self, service, username, password):
        self._hang("set_password")

    def delete_password(self, service, username):
        self._hang("delete_password")
'''


def keyring_env(tmp_path, client, backend: str) -> dict:
    mods = tmp_path / "mods"
    mods.mkdir(exist_ok=True)
    (mods / "test_keyrings.py").write_text(KEYRINGS)
    return {**base_env(client), "PYTHONPATH": str(mods), "PYTHON_KEYRING_BACKEND": f"test_keyrings.{backend}",
            "TEST_KEYRING_FILE": str(tmp_path / "ring.json")}


def test_the_token_lives_in_a_working_keyring_and_a_hung_one_is_waited_for_once(remote, tmp_path):
    # a working keyring: the token goes there, no file, no warning; logout takes it out again
    client = tmp_path / "client"
    env = keyring_env(tmp_path, client, "Working")
    r = run_wsctl(["auth", "login", "--server", remote.base_url, "--code", login_code(remote, remote.owner["id"])],
                  env)
    assert "warning" not in r.err and "token kept in the OS keyring" in r.err
    ring = json.loads((tmp_path / "ring.json").read_text())
    token = ring["wsctl/profile:default"]
    assert token.startswith("ws_session_") and not (client / "credentials.toml").exists()
    assert token not in (client / "config.toml").read_text()
    assert re.search(r"^token from\s+keyring$", run_wsctl(["auth", "status"], env).out, re.M)
    run_wsctl(["auth", "logout"], env)
    assert json.loads((tmp_path / "ring.json").read_text()) == {}
    assert httpx.get(remote.base_url + "/v1/auth/whoami", headers={"Authorization": f"Bearer {token}"}, trust_env=False).status_code == 401

    # a hung keyring: each command waits for it once (one timed-out call), then uses the 0600 file.
    # Counted, not timed: a busy machine makes the wait longer, never the count different.
    client = tmp_path / "client-hung"
    env = keyring_env(tmp_path, client, "Hung")
    calls = tmp_path / "ring.json.calls"
    r = run_wsctl(["auth", "login", "--server", remote.base_url, "--code", login_code(remote, remote.owner["id"])],
                  env)
    assert r.err.count("warning: no usable OS keyring") == 1, r.err
    creds = client / "credentials.toml"
    assert stat.S_IMODE(creds.stat().st_mode) == 0o600
    assert read_toml(creds)["profile:default"].startswith("ws_session_")
    login_calls = calls.read_text().splitlines()
    assert [c.split()[1] for c in login_calls] == ["set_password"], login_calls   # then no keyring call again
    st = run_wsctl(["auth", "status", "--json"], env).json
    assert (st["tokenSource"], st["member"]["id"]) == ("credentials file", remote.owner["id"])
    # status looks the token up twice: the keyring is asked once, the second lookup goes to the file
    status_calls = calls.read_text().splitlines()[len(login_calls):]
    assert [c.split()[1] for c in status_calls] == ["get_password"], status_calls
    assert status_calls[0].split()[0] != login_calls[0].split()[0]   # one wait per process
