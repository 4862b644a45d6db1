"""`wsctl members`, `wsctl keys` and `wsctl api` through the real CLI, on both backends.

--json prints exactly the API body; on a pipe a list is plain tab-separated lines.
"""
from __future__ import annotations

import re

from tests.cli_helpers import one_error_line
from tests.conftest import workspace_db

CODE = re.compile(r"^[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}$")


def test_members_add_list_and_login_codes_by_id_and_email(backend):
    mia = backend.wsctl("members", "add", "Mia@Example.com", "--name", "Mia Member", "--role", "admin", "--json").json
    assert set(mia) == {"id", "name", "email", "role", "createdAt"} and mia["id"].startswith("um_")
    assert (mia["email"], mia["role"]) == ("mia@example.com", "admin")
    api_body = backend.ok("GET", "/v1/members", query={"limit": "500"})
    assert backend.wsctl("members", "list", "--json").json == api_body

    plain = backend.wsctl("members", "list").out
    assert plain.splitlines() == ["\t".join([m["id"], m["name"], m["email"], m["role"], m["createdAt"]])
                                  for m in api_body["members"]]
    assert not re.search(r"[\u2500-\u257f]|\x1b\[", plain)  # no box drawing, no colour codes

    # a login code by id and by email (any case), each printed alone on stdout, each single use
    by_id = backend.wsctl("members", "login-code", mia["id"])
    by_email = backend.wsctl("members", "login-code", "MIA@example.COM")
    assert "wsctl auth login" in by_id.err
    for r in (by_id, by_email):
        code = r.out.strip()
        assert CODE.match(code), r.out
        session = backend.api("POST", "/v1/auth/session", {"code": code}, secret="")
        assert session.status == 201 and session.body["member"] == mia
        assert backend.api("POST", "/v1/auth/session", {"code": code}, secret="").status == 401


def test_keys_create_list_revoke_and_api_calls(backend):
    r = backend.wsctl("keys", "create", "--kind", "platform", "--scope", "vault:read", "--scope", "docs:read",
                      "--name", "ci")
    secret = r.out.strip()
    assert r.out == secret + "\n" and secret.startswith("ws_platform_") and "shown once" in r.err
    personal = backend.wsctl("keys", "create", "--kind", "personal", "-s", "projects:manage,skills:manage",
                             "--name", "me", "--json").json
    assert personal["scopes"] == ["projects:manage", "skills:manage"] and personal["name"] == "me"
    listing = backend.wsctl("keys", "list", "--json").json
    assert listing == backend.ok("GET", "/v1/keys", query={"limit": "500"})
    assert {k["name"] for k in listing["keys"]} == {"ci", "me"}
    assert all("secret" not in k for k in listing["keys"]) and secret not in backend.wsctl("keys", "list").out

    assert backend.api("GET", "/v1/projects", secret=personal["secret"]).status == 200
    r = backend.wsctl("keys", "revoke", personal["id"])
    assert r.out == "" and personal["id"] in r.err
    assert backend.api("GET", "/v1/projects", secret=personal["secret"]).status == 401
    assert "wsctl keys list" in one_error_line(backend.wsctl("keys", "revoke", personal["id"], expect=5))

    # `wsctl api`: the body as JSON; errors print their body on stdout and exit with the mapped code
    assert backend.wsctl("api", "GET", "/members").json == backend.ok("GET", "/v1/members")
    made = backend.wsctl("api", "post", "/v1/members", "--data", '{"email": "api@example.com", "name": "Api"}').json
    assert made["email"] == "api@example.com"
    r = backend.wsctl("api", "POST", "/v1/members", "--data", '{"email": "x@example.com", "name":', expect=7)
    assert "--data is not valid JSON" in one_error_line(r) and r.out == ""
    not_text = backend.workspace.parent / "not-text.json"
    not_text.write_bytes(b"\xff\xfe{")
    r = backend.wsctl("api", "POST", "/v1/members", "--data", f"@{not_text}", expect=7)
    assert "not UTF-8" in one_error_line(r) and r.out == ""
    r = backend.wsctl("api", "POST", "/v1/members", "--data", '{"email": "api@example.com", "name": "Again"}',
                      expect=6)
    assert r.json["error"]["code"] == "conflict" and r.json["error"]["status"] == 409
    assert one_error_line(r) == "error: " + r.json["error"]["message"]
    assert backend.wsctl("api", "DELETE", "/v1/keys/key_nope", expect=5).json["error"]["code"] == "not_found"


def test_list_commands_follow_every_page(backend):
    """`members list` and `keys list` show the whole list, not the first page of 500."""
    con = workspace_db(backend.workspace)
    con.execute("BEGIN")   # one transaction, straight into the workspace: 600 API calls would cost seconds
    con.executemany("INSERT INTO members (id, name, email, role, created_at) VALUES (?, ?, ?, 'member', ?)",
                    [(f"um_zz{i:05d}", f"M{i}", f"m{i}@example.com", "2026-01-01T00:00:00Z") for i in range(520)])
    con.executemany("INSERT INTO secrets (id, kind, member_id, name, scopes, secret_hash, created_at) "
                    "VALUES (?, 'personal', ?, 'k', '[\"projects:manage\"]', ?, ?)",
                    [(f"key_zz{i:05d}", backend.owner["id"], f"{i:064x}", "2026-01-01T00:00:00Z") for i in range(520)])
    con.execute("COMMIT")
    con.close()
    members = backend.wsctl("members", "list", "--json").json
    assert len(members["members"]) == 521 and members["nextCursor"] is None
    assert len({m["id"] for m in members["members"]}) == 521
    keys = backend.wsctl("keys", "list", "--json").json
    assert len(keys["keys"]) >= 520 and keys["nextCursor"] is None
    assert len(backend.wsctl("members", "list").out.splitlines()) == 521
