"""Sessions, API keys, login codes and sign-in links are stored only as SHA-256 (CONTRACT §2):
none of them appears in any file of the workspace folder (database, WAL, shared memory, blobs),
in an SQL dump of the database (`pg_dump` on the PostgreSQL door), or in the server's log."""
from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from tests.conftest import workspace_at_rest


def _forms(secret: str) -> set[str]:
    """The secret as made, its random part, and slices of it (a store might drop the prefix or
    dashes, or keep part of it)."""
    forms = {secret}
    for prefix in ("ws_session_", "ws_platform_", "ws_personal_"):
        if secret.startswith(prefix):
            forms.add(secret[len(prefix):])
    if len(secret) >= 32:  # and any 16 characters of it (a "hint" or suffix kept in clear)
        forms |= {secret[i:i + 16] for i in range(0, len(secret) - 15, 8)}
    if "-" in secret and len(secret) == 14:  # a login code XXXX-XXXX-XXXX
        forms |= {secret.replace("-", ""), secret.lower(), secret.replace("-", "").lower()}
    return forms


def test_no_secret_in_plaintext_at_rest(backend, home):
    made: dict[str, str] = {}
    mia = backend.add_member("mia@example.com", "Mia")
    for who in (backend.owner["id"], mia["id"]):
        made[f"session {who}"] = backend.session(who)
        made[f"unused code {who}"] = backend.ok("POST", f"/v1/members/{who}/login-codes")["code"]
    used = backend.ok("POST", f"/v1/members/{mia['id']}/login-codes")["code"]
    made["used code"] = used
    made["session from used code"] = backend.ok("POST", "/v1/auth/session", {"code": used.lower()}, secret="")["token"]
    made["owner session of the fixture"] = backend.owner_token
    for kind, scopes in (("platform", ["vault:read", "docs:read"]), ("personal", ["skills:manage"])):
        made[f"{kind} key"] = backend.key(kind, scopes)
        made[f"{kind} key of mia"] = backend.key(kind, scopes, member_id=mia["id"])
    revoked = backend.ok("POST", "/v1/keys", {"kind": "platform", "scopes": ["docs:read"]})
    backend.ok("DELETE", f"/v1/keys/{revoked['id']}")
    made["revoked key"] = revoked["secret"]
    ended = backend.session()
    backend.ok("DELETE", "/v1/auth/session", secret=ended)
    made["ended session"] = ended
    if backend.kind == "remote":
        unused = backend.ok("POST", "/v1/auth/web-link", {"next": "/"})["url"]
        made["unused web link"] = urlsplit(unused).path.rsplit("/", 1)[1]
        link = backend.ok("POST", "/v1/auth/web-link", {"next": "/"}, secret=made[f"session {mia['id']}"])["url"]
        made["used web link"] = urlsplit(link).path.rsplit("/", 1)[1]
        first = httpx.get(link, follow_redirects=False, timeout=30, trust_env=False)
        assert first.status_code == 303
        made["web session cookie"] = first.cookies["wsctl_web"]
    # The live ones work (so each is a real secret, not a typo); the dead ones do not.
    for name, secret in made.items():
        if name.endswith("key") or name.endswith("of mia") or ("session" in name and "cookie" not in name):
            want = 401 if name in ("revoked key", "ended session") else 200
            assert backend.api("GET", "/v1/auth/whoami", secret=secret).status == want, name

    places = workspace_at_rest(backend.workspace)
    assert any(b"mia@example.com" in data for data in places.values()), "the scan reads the rows"
    if backend.door != "postgres":
        assert any(n.endswith("-wal") for n in places), sorted(places)
    if backend.kind == "remote":
        log = backend.server.log_text()
        assert "/signin/" in log  # the followed link was logged, redacted
        places["server log"] = log.encode()
    for name, secret in made.items():
        for form in _forms(secret):
            for place, data in places.items():
                assert form.encode() not in data, f"{name} found in plaintext in {place}"
