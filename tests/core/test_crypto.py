"""Encryption at rest: AES-256-GCM blobs bound to their AAD, key sources, nothing in plaintext on
disk, and rotate-key (owner only, re-seals credentials and OAuth client secrets, drops old keys).
"""
from __future__ import annotations

import base64
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from tests.conftest import base_env, make_backend, serve
from tests.oauth_provider import OAuthProvider
from tests.vault_helpers import (
    APIKEY_TOML,
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
    make_credential,
    member_with_session,
    oauth_credential,
    open_ws,
    token,
)

pytestmark = pytest.mark.usefixtures("canary_scan")


@pytest.fixture
def ws(workspace):
    w = open_ws(workspace)
    yield w
    w.conn().close()


def test_seal_round_trip_binds_the_aad(ws):
    from workspacectl.engine import crypto
    from workspacectl.errors import ApiError

    blob = crypto.seal(ws, "cred_a", b"hello CANARY")
    assert b"hello" not in blob and blob[0] == crypto.VERSION
    assert crypto.unseal(ws, "cred_a", blob) == b"hello CANARY"
    assert crypto.blob_fingerprint(blob) == crypto.current_key(ws).fp
    with pytest.raises(ApiError) as e:
        crypto.unseal(ws, "cred_b", blob)  # moved onto another row
    assert "CANARY" not in e.value.message
    tampered = bytearray(blob)
    tampered[-1] ^= 1
    with pytest.raises(ApiError):
        crypto.unseal(ws, "cred_a", bytes(tampered))
    assert crypto.seal(ws, "cred_a", b"x") != crypto.seal(ws, "cred_a", b"x"), "fresh nonce each time"


def test_key_file_is_made_0600_on_first_need(ws):
    from workspacectl.engine import crypto

    key_file = Path(ws.path) / "master.key"
    assert not key_file.exists(), "no key before anything is sealed"
    crypto.seal(ws, "a", b"x")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = crypto.current_key(ws)
    assert repr(key) == f"Key(fp={key.fp.hex()})" and key.encoded() not in repr(key) + str(key)


def test_env_key_wins_and_accepts_hex_or_base64(ws, monkeypatch):
    from workspacectl.engine import crypto
    from workspacectl.errors import ApiError

    raw = os.urandom(32)
    monkeypatch.setenv("WSCTL_MASTER_KEY", raw.hex())
    blob = crypto.seal(ws, "a", b"v")
    assert not (Path(ws.path) / "master.key").exists()
    assert crypto.blob_fingerprint(blob) == crypto.fingerprint(raw)
    crypto.forget_cached_keys()
    monkeypatch.setenv("WSCTL_MASTER_KEY", base64.b64encode(raw).decode())
    assert crypto.unseal(ws, "a", blob) == b"v"
    monkeypatch.setenv("WSCTL_MASTER_KEY", "too-short")
    with pytest.raises(ApiError) as e:
        crypto.seal(ws, "a", b"v")
    assert e.value.code == "invalid_request" and "32 bytes" in e.value.message


def test_a_missing_key_is_a_clear_error_not_garbage(ws, monkeypatch):
    from workspacectl.engine import crypto
    from workspacectl.errors import ApiError

    blob = crypto.seal(ws, "a", b"v")
    (Path(ws.path) / "master.key").unlink()
    crypto.forget_cached_keys()
    with pytest.raises(ApiError) as e:
        crypto.unseal(ws, "a", blob)
    assert "WSCTL_MASTER_KEY" in e.value.message
    with pytest.raises(ApiError):  # and no new key is silently made for a workspace that had one
        crypto.seal(ws, "b", b"v")
    assert not (Path(ws.path) / "master.key").exists()


def _workspace_bytes(path: Path) -> bytes:
    out = b""
    for f in sorted(path.rglob("*")):
        if f.is_file():
            out += f.read_bytes()
    con = sqlite3.connect(path / "workspace.db")
    out += "\n".join(con.iterdump()).encode()
    con.close()
    return out


def test_no_secret_in_any_workspace_file_or_log(backend):
    with OAuthProvider() as provider:
        install_service(backend.workspace, provider.service_toml("loopcrm"))
        install_service(backend.workspace, APIKEY_TOML.format(base=provider.url))
        cred, _grant = oauth_credential(backend, provider, expires_in=5)
        key = make_credential(backend.workspace, backend.owner["id"], "keysvc", {"apiKey": "sk-CANARY-at-rest"})
        issued = token(backend, cred["id"]).body["accessToken"]
        assert token(backend, key["id"]).body["apiKey"] == "sk-CANARY-at-rest"
        backend.api("POST", f"/v1/vault/credentials/{cred['id']}/sync")
        secrets = [*provider.all_secrets(), "sk-CANARY-at-rest", issued]
    data = _workspace_bytes(backend.workspace)
    leaks = [s for s in secrets if s.encode() in data]
    assert leaks == [], "secrets found in workspace files"
    log = backend.server.log_text() if backend.server else ""
    assert not [s for s in secrets if s in log]


def _fps(workspace: Path) -> set[bytes]:
    con = sqlite3.connect(workspace / "workspace.db")
    rows = con.execute("SELECT secret_blob FROM credentials UNION ALL SELECT oauth_client_secret FROM integrations "
                       "WHERE oauth_client_secret IS NOT NULL").fetchall()
    con.close()
    return {bytes(r[0])[1:9] for r in rows if r[0] is not None}


def test_rotate_key_reseals_everything_and_drops_the_old_key(backend):
    with OAuthProvider() as provider:
        install_service(backend.workspace, provider.service_toml("loopcrm"))
        install_service(backend.workspace, APIKEY_TOML.format(base=provider.url))
        cred, _ = oauth_credential(backend, provider, expires_in=5)
        key = make_credential(backend.workspace, backend.owner["id"], "keysvc", {"apiKey": "sk-CANARY-rot"})
        key_file = backend.workspace / "master.key"
        old_key_text = key_file.read_text()
        before = _fps(backend.workspace)
        assert len(before) == 1
        r = backend.api("POST", "/v1/admin/rotate-key")
        assert r.status == 200, r.body
        assert r.body == {"credentials": 2, "oauthClients": 1, "connections": 0, "webhooks": 0, "keySource": "file",
                          "retiredKeys": 1}
        after = _fps(backend.workspace)
        assert len(after) == 1 and after != before
        assert key_file.read_text() != old_key_text and len(key_file.read_text().split()) == 1
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        # Everything still opens: the API key, and an OAuth refresh (needs the client secret too).
        assert token(backend, key["id"]).body["apiKey"] == "sk-CANARY-rot"
        t = token(backend, cred["id"])
        assert t.status == 200 and provider.refreshes == 1
        # A second rotation works the same way.
        assert backend.api("POST", "/v1/admin/rotate-key").body["credentials"] == 2
        assert token(backend, key["id"]).body["apiKey"] == "sk-CANARY-rot"


def test_rotate_key_is_for_the_owner_session_only(backend):
    _admin, admin_s = member_with_session(backend, "ada@example.com", role="admin")
    r = backend.api("POST", "/v1/admin/rotate-key", secret=admin_s)
    assert r.status == 403 and r.code == "forbidden"
    platform = backend.key("platform", ["vault:manage", "vault:read"])
    r = backend.api("POST", "/v1/admin/rotate-key", secret=platform)
    assert r.status == 403 and r.code == "insufficient_scope"


@pytest.mark.parametrize("kind", ["local", "remote"])
def test_rotate_with_env_key_needs_the_previous_one(kind, workspace, home, monkeypatch):
    old, new = base64.b64encode(os.urandom(32)).decode(), base64.b64encode(os.urandom(32)).decode()
    monkeypatch.setenv("WSCTL_MASTER_KEY", old)
    b = make_backend("local", workspace, home)
    try:
        install_service(workspace, APIKEY_TOML.format(base="http://127.0.0.1:9"))
        key = make_credential(workspace, b.owner["id"], "keysvc", {"apiKey": "sk-CANARY-env"})
        assert not (workspace / "master.key").exists()

        def call(env: dict, method: str, path: str, body=None):
            for k, v in env.items():
                monkeypatch.setenv(k, v)
            if kind == "local":
                r = b.api(method, path, body)
                return r.status, r.body
            import httpx

            with serve(workspace, {**base_env(workspace.parent / "srv-home"), **env}) as url:
                r = httpx.request(method, url + path, json=body, timeout=30,
                                  headers={"Authorization": f"Bearer {b.owner_token}"}, trust_env=False)
                return r.status_code, r.json()

        status, body = call({"WSCTL_MASTER_KEY": old}, "POST", "/v1/admin/rotate-key")
        assert status == 400 and "WSCTL_MASTER_KEY_PREVIOUS" in body["error"]["message"]
        env = {"WSCTL_MASTER_KEY": new, "WSCTL_MASTER_KEY_PREVIOUS": old}
        status, body = call(env, "POST", "/v1/admin/rotate-key")
        assert status == 200 and body["credentials"] == 1 and body["keySource"] == "env"
        from workspacectl.engine import crypto

        crypto.forget_cached_keys()
        monkeypatch.delenv("WSCTL_MASTER_KEY_PREVIOUS")
        status, body = call({"WSCTL_MASTER_KEY": new}, "POST", f"/v1/credentials/{key['id']}/token",
                            {"reason": "after rotation"})
        assert status == 200 and body["apiKey"] == "sk-CANARY-env"
    finally:
        b.close()


class _MemoryKeyring:
    """A working OS keyring stand-in (keyring's backend API), kept in memory. With hung=True its
    reads block until `release` is set, like a locked vault; `reads` counts the reads that
    started and `finished` those that returned."""

    def __init__(self, hung: bool = False):
        import threading

        from keyring.backend import KeyringBackend

        store = {}
        self.release = threading.Event()
        self.reads = self.finished = 0
        outer = self

        class Backend(KeyringBackend):
            priority = 1

            def get_password(self, service, username):
                outer.reads += 1
                if hung:
                    outer.release.wait(120)
                outer.finished += 1
                return store.get((service, username))

            def set_password(self, service, username, password):
                store[(service, username)] = password

            def delete_password(self, service, username):
                store.pop((service, username), None)

        self.store = store
        self.backend = Backend()


@pytest.fixture
def memory_keyring():
    import keyring

    previous = keyring.get_keyring()
    ring = _MemoryKeyring()
    keyring.set_keyring(ring.backend)
    yield ring
    keyring.set_keyring(previous)


def test_keyring_is_used_before_the_file_and_rotation_keeps_it_there(ws, memory_keyring):
    from workspacectl.engine import crypto
    from workspacectl.engine.identity.key_rotation import rotate_workspace_key

    blob = crypto.seal(ws, "cred_k", b"in the keyring")
    assert not (Path(ws.path) / "master.key").exists()
    (entry,) = [(s, u) for s, u in memory_keyring.store]
    assert entry == ("wsctl", f"master-key:{crypto.workspace_id(ws)}")
    crypto.forget_cached_keys()
    assert crypto.unseal(ws, "cred_k", blob) == b"in the keyring"
    from workspacectl.engine.db import transaction

    with transaction(ws.conn()):
        ws.conn().execute("INSERT INTO members (id, name, email, role, created_at) VALUES "
                          "('um_k', 'K', 'k@example.com', 'member', '2026-01-01T00:00:00Z')")
    install_service(Path(ws.path), APIKEY_TOML.format(base="http://127.0.0.1:9"))
    cred = make_credential(Path(ws.path), "um_k", "keysvc", {"apiKey": "sk-CANARY-ring"})
    result = rotate_workspace_key(ws)
    assert result["keySource"] == "keyring" and result["credentials"] == 1 and result["retiredKeys"] == 1
    assert len(memory_keyring.store[entry].split()) == 1
    assert not (Path(ws.path) / "master.key").exists()
    crypto.forget_cached_keys()
    from workspacectl.engine.store import vault as store
    from workspacectl.engine.vault.credentials import open_secrets

    secrets = open_secrets(ws, store.get_credential_sealed(ws.conn(), cred["id"]))
    assert secrets["apiKey"].reveal() == "sk-CANARY-ring"


def test_a_hung_keyring_falls_back_to_the_file_within_the_timeout(ws, monkeypatch):
    """seal() gives up on a keyring read that never returns: it is done, with the key in the
    file, while that read is still blocked (an order, not a stopwatch)."""
    import keyring

    from workspacectl.engine import crypto
    from workspacectl.engine.crypto import keys as crypto_keys

    previous = keyring.get_keyring()
    ring = _MemoryKeyring(hung=True)
    keyring.set_keyring(ring.backend)
    monkeypatch.setattr(crypto_keys, "KEYRING_TIMEOUT_SECONDS", 0.2)
    try:
        blob = crypto.seal(ws, "a", b"v")
        assert ring.finished == 0, "seal() waited for the hung keyring read"
        assert (Path(ws.path) / "master.key").exists()
        assert crypto.unseal(ws, "a", blob) == b"v"
    finally:
        ring.release.set()
        keyring.set_keyring(previous)


def test_rotate_key_is_one_transaction(workspace, home):
    """One blob that cannot be opened stops the rotation: nothing was re-sealed, all still opens."""
    b = make_backend("local", workspace, home)
    try:
        install_service(workspace, APIKEY_TOML.format(base="http://127.0.0.1:9"))
        good = make_credential(workspace, b.owner["id"], "keysvc", {"apiKey": "sk-CANARY-kept"})
        bad = make_credential(workspace, b.owner["id"], "keysvc", {"apiKey": "sk-CANARY-damaged"})
        con = sqlite3.connect(workspace / "workspace.db", timeout=15)
        with con:
            row = con.execute("SELECT secret_blob FROM credentials WHERE id = ?", (bad["id"],)).fetchone()
            blob = bytearray(row[0])
            blob[-1] ^= 1
            con.execute("UPDATE credentials SET secret_blob = ? WHERE id = ?", (bytes(blob), bad["id"]))
        before = con.execute("SELECT id, secret_blob FROM credentials ORDER BY id").fetchall()
        r = b.api("POST", "/v1/admin/rotate-key")
        assert r.status == 500 and r.code == "internal" and "integrity" in r.body["error"]["message"]
        assert con.execute("SELECT id, secret_blob FROM credentials ORDER BY id").fetchall() == before, \
            "the credential re-sealed before the damaged one was rolled back"
        con.close()
        assert token(b, good["id"]).body["apiKey"] == "sk-CANARY-kept"
    finally:
        b.close()


def test_env_key_is_used_before_the_keyring(ws, memory_keyring, monkeypatch):
    from workspacectl.engine import crypto

    raw = os.urandom(32)
    monkeypatch.setenv("WSCTL_MASTER_KEY", base64.b64encode(raw).decode())
    blob = crypto.seal(ws, "cred_e", b"under the env key")
    assert crypto.blob_fingerprint(blob) == crypto.fingerprint(raw)
    assert memory_keyring.store == {} and not (Path(ws.path) / "master.key").exists()
