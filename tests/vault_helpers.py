"""Setup helpers for the vault tests: install a service, make a credential in-process.

Only *setup* goes in-process (as a completed connection would); every behaviour under test is
exercised through `backend.api(...)` / `backend.wsctl(...)`.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from workspacectl import clock

APIKEY_TOML = """
service = "keysvc"
name = "Key Service"
description = "An API-key service for the vault tests."
credentialType = "apiKey"
envVars = {{ apiKey = "KEYSVC_API_KEY", instanceUrl = "KEYSVC_URL" }}
fields = ["instanceUrl"]
secretFields = ["apiKey"]
baseUrl = "{base}"
probe = "whoami"
auth = {{ type = "bearer" }}
[[operations]]
name = "whoami"
summary = "Who the key belongs to"
method = "GET"
path = "/probe"
"""

TWO_SECRET_TOML = """
service = "twosecret"
name = "Two Secret SMS"
description = "An API-key service with two secret fields, like Twilio."
credentialType = "apiKey"
envVars = { accountSid = "TWO_ACCOUNT_SID", authToken = "TWO_AUTH_TOKEN" }
secretFields = ["accountSid", "authToken"]
[[operations]]
name = "send"
summary = "Send a message"
method = "POST"
path = "/messages"
"""


def open_ws(workspace: Path):
    """The workspace in-process: a folder, or a PostgreSQL door's URL (tests/conftest.PgLocation)."""
    from workspacectl.engine.workspaces import open_workspace

    return open_workspace(str(workspace))


def install_service(workspace: Path, toml_text: str) -> str:
    """Import a service definition into the workspace (what `wsctl catalog import` does)."""
    from workspacectl.engine import crypto
    from workspacectl.engine.catalog.importer import parse_toml
    from workspacectl.engine.catalog.services import oauth_aad, replace_service
    from workspacectl.engine.db import transaction

    record = parse_toml(toml_text, "test service")
    ws = open_ws(workspace)
    conn = ws.conn()
    with transaction(conn):
        secret = record.get("oauthClientSecret")
        sealed = crypto.seal(ws, oauth_aad(record["service"]), secret.encode()) if secret else None
        replace_service(conn, record, "import", sealed)
    conn.close()
    return record["service"]


def make_credential(workspace: Path, owner_id: str, service: str, secrets: dict, fields: dict | None = None,
                    expires_in: float | None = None, scopes: list | None = None, lifetime: float | None = 3600) -> dict:
    """A credential as a completed connection makes it (engine.credentials.create_credential).

    With expires_in, its token is one of `lifetime` seconds (default an hour) obtained
    `lifetime - expires_in` seconds ago (its refreshed_at), so a token 5 s from its end is an old
    one-hour token inside its 60 s refresh margin; lifetime=None: obtained now."""
    from workspacectl.engine.db import transaction
    from workspacectl.engine.vault.credentials import create_credential, precise_iso

    ws = open_ws(workspace)
    conn = ws.conn()
    with transaction(conn):
        d = create_credential(ws, conn, owner_member_id=owner_id, service=service, secrets=secrets,
                              fields=fields or {}, scopes=scopes,
                              expires_at=clock.later(expires_in) if expires_in is not None else None)
        if expires_in is not None and lifetime is not None:
            from datetime import timedelta

            obtained = precise_iso(clock.now() + timedelta(seconds=expires_in - lifetime))
            conn.execute("UPDATE credentials SET refreshed_at = ? WHERE id = ?", (obtained, d["id"]))
    conn.close()
    return d


def oauth_credential(backend, provider, service: str = "loopcrm", expires_in: float = 3600,
                     owner_id: str | None = None, lifetime: float | None = 3600) -> tuple[dict, dict]:
    """A credential holding a real grant from the loopback provider; answers (detail, grant)."""
    grant = provider.grant()
    d = make_credential(backend.workspace, owner_id or backend.owner["id"], service,
                        {"accessToken": grant["access_token"], "refreshToken": grant["refresh_token"]},
                        expires_in=expires_in, scopes=grant["scope"].split(), lifetime=lifetime)
    return d, grant


def member_with_session(backend, email: str, role: str = "member") -> tuple[dict, str]:
    m = backend.add_member(email, role=role)
    return m, backend.session(m["id"])


def token(backend, cred_id: str, secret: str | None = None, reason: str = "tests"):
    return backend.api("POST", f"/v1/credentials/{cred_id}/token", {"reason": reason}, secret=secret)


# --- the canary scan ------------------------------------------------------------------------

CANARY = "CANARY"  # every secret the vault tests hand out contains it (tests/oauth_provider.py too)
# Commands whose output exists to show a secret: `vault token|env|run`, and a raw token request.
SECRET_COMMANDS = (("vault", "token"), ("vault", "env"), ("vault", "run"))
BROWSER_PROFILE = "chromium-profile"


def _prints_a_secret(args: list[str]) -> bool:
    words = [a for a in args if not a.startswith("-")]
    if tuple(words[:2]) in SECRET_COMMANDS:
        return True
    return words[:2] == ["api", "POST"] and len(words) > 2 and words[2].rstrip("/").endswith("/token")


def _scanned_files(root: Path) -> list[Path]:
    """Every file of each workspace folder under root, every server log, every WSCTL_HOME."""
    dirs = {p.parent for p in root.rglob("workspace.db")}
    dirs |= {p for p in root.rglob("*home*") if p.is_dir()}
    files = {p for d in dirs for p in d.rglob("*") if p.is_file()}
    files |= {p for p in root.rglob("*.log") if p.is_file()}
    return sorted(f for f in files if BROWSER_PROFILE not in f.parts)  # the browser's own history is not ours


@pytest.fixture
def canary_scan(request, tmp_path, monkeypatch):
    """After the test: no canary secret in any file of its workspaces (database, WAL, key file,
    blobs), any server log or any WSCTL_HOME, nor in the stdout/stderr of any `wsctl` command it
    ran through `backend.wsctl`/`run_wsctl` other than those that print a token."""
    import tests.conftest as cf

    roots = {tmp_path}
    if "backend" in request.fixturenames:  # set up first, so it is torn down (server stopped) before the scan
        roots.add(request.getfixturevalue("backend").workspace.parent)
    outputs: list[tuple[list[str], object]] = []
    real = cf.run_wsctl

    def recording(args, env, *a, **kw):
        result = real(args, env, *a, **kw)
        outputs.append(([str(x) for x in args], result))
        return result

    monkeypatch.setattr(cf, "run_wsctl", recording)
    yield
    leaks = []
    for root in roots:
        for f in _scanned_files(root):
            try:
                if CANARY.encode() in f.read_bytes():
                    leaks.append(str(f))
            except OSError:
                continue
    for args, r in outputs:
        if not _prints_a_secret(args) and (CANARY in r.out or CANARY in r.err):
            leaks.append("output of wsctl " + " ".join(args))
    assert not leaks, f"a canary secret leaked into: {leaks}"
