"""Guests are read-only: a grant gives a guest at most viewer (CONTRACT §6 roles, docs/api.md §7).

The review found a guest granted `editor` could rename the project and write its memory."""
from __future__ import annotations

from tests.conftest import workspace_db
from tests.project_helpers import grant, make_project, member_key
from tests.skill_helpers import create as create_skill


def test_granting_editor_to_a_guest_is_400_and_changes_nothing(backend):
    pid = make_project(backend, "Ops")
    guest, _ = member_key(backend, "gail@example.com", role="guest")
    r = grant(backend, pid, "editor", guest["id"])
    assert r.status == 400 and r.code == "invalid_request" and "guest" in r.body["error"]["message"]
    assert backend.ok("GET", f"/v1/projects/{pid}")["project"]["grants"] == []
    assert grant(backend, pid, "viewer", guest["id"]).status == 200
    r = backend.wsctl("specialist", "grant", pid, "--member", guest["email"], "--role", "editor", expect=7)
    assert "guest" in r.err


def test_a_guest_under_an_editor_grant_reads_but_cannot_write(backend):
    pid = make_project(backend, "Ops")
    skill = create_skill(backend, "ops-skill")
    assert backend.api("POST", "/v1/projects/pin", {"resourceId": skill["id"], "projectId": pid}).status == 200
    _guest, key = member_key(backend, "gail@example.com", role="guest",
                            scopes=("projects:manage", "skills:manage"))
    _member, mkey = member_key(backend, "mo@example.com", scopes=("projects:manage", "skills:manage"))
    assert grant(backend, pid, "editor").status == 200           # the workspace grant: editor
    seen = backend.ok("GET", f"/v1/projects/{pid}", secret=key)["project"]
    assert (seen["role"], seen["canEdit"]) == ("viewer", False)
    assert backend.ok("GET", f"/v1/projects/{pid}", secret=mkey)["project"]["role"] == "editor"
    r = backend.api("PATCH", f"/v1/projects/{pid}", {"name": "Pwned"}, secret=key)
    assert r.status == 403 and r.code == "forbidden"
    r = backend.api("PATCH", f"/v1/skills/{skill['id']}", {"description": "Pwned. Use never."}, secret=key)
    assert r.status == 403 and r.code == "forbidden"
    assert backend.ok("GET", f"/v1/projects/{pid}")["project"]["name"] == "Ops"
    assert backend.api("PATCH", f"/v1/projects/{pid}", {"name": "Ops 2"}, secret=mkey).status == 200


def test_a_member_made_guest_after_an_editor_grant_is_capped(backend):
    pid = make_project(backend, "Ops")
    member, key = member_key(backend, "mo@example.com")
    assert grant(backend, pid, "editor", member["id"]).status == 200
    assert backend.ok("GET", f"/v1/projects/{pid}", secret=key)["project"]["role"] == "editor"
    # No route changes a member's role yet; the cap must hold for data made before it anyway.
    con = workspace_db(backend.workspace)
    con.execute("UPDATE members SET role = 'guest' WHERE id = ?", (member["id"],))
    con.close()
    assert backend.ok("GET", f"/v1/projects/{pid}", secret=key)["project"]["role"] == "viewer"
    r = backend.api("PUT", f"/v1/projects/{pid}/memory", {"text": "pwned", "version": 1}, secret=key)
    assert r.status == 403 and r.code == "forbidden"
