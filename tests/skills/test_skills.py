"""Skills records (CONTRACT §8) on both backends: lifecycle, names, access, scopes, platform skills."""
from __future__ import annotations

from tests.api_helpers import assert_error
from tests.skill_helpers import create, skill_md

SKILL_KEYS = {"id", "name", "description", "status", "enabled", "version", "projectId", "createdBy", "createdAt",
              "updatedAt", "lastUsedAt", "canEdit"}


def test_create_list_get_patch_enable_archive(backend):
    b = backend
    s = create(b, "pdf-forms", "Fill PDF forms.")
    assert set(s) == SKILL_KEYS
    assert s["id"].startswith("skl_") and s["status"] == "draft" and s["version"] == 0 and s["enabled"] is True
    assert s["projectId"] is None and s["createdBy"] == b.owner["id"] and s["lastUsedAt"] is None
    listed = b.ok("GET", "/v1/skills")
    assert [x["id"] for x in listed["skills"]] == [s["id"]] and listed["nextCursor"] is None
    assert b.ok("GET", f"/v1/skills/{s['id']}") == s
    assert b.ok("GET", "/v1/skills/pdf-forms")["id"] == s["id"]          # a name works as the id

    p = b.ok("PATCH", f"/v1/skills/{s['id']}", {"name": "pdf-filler", "description": "Fill in PDF forms."})
    assert (p["name"], p["description"], p["version"]) == ("pdf-filler", "Fill in PDF forms.", 0)
    assert b.ok("PATCH", f"/v1/skills/{s['id']}/enabled", {"enabled": False})["enabled"] is False
    assert b.ok("PATCH", f"/v1/skills/{s['id']}/enabled", {"enabled": True})["enabled"] is True
    assert_error(b.api("PATCH", f"/v1/skills/{s['id']}/enabled", {"enabled": "yes"}), 400, "invalid_request")

    a = b.ok("DELETE", f"/v1/skills/{s['id']}")
    assert a["status"] == "archived" and a["canEdit"] is False
    assert b.ok("GET", "/v1/skills")["skills"] == []
    assert [x["id"] for x in b.ok("GET", "/v1/skills", query={"status": "archived"})["skills"]] == [s["id"]]
    assert_error(b.api("PATCH", f"/v1/skills/{s['id']}", {"description": "x"}), 409, "conflict")
    # the archived skill's name is free again
    assert create(b, "pdf-filler")["id"] != s["id"]


def test_names_are_validated_and_unique(backend):
    b = backend
    create(b, "dup-name")
    assert_error(b.api("POST", "/v1/skills", {"name": "dup-name", "description": "again"}), 409, "conflict")
    for bad in ("Upper", "-lead", "trail-", "dou--ble", "sp ace", "x" * 65, ""):
        assert_error(b.api("POST", "/v1/skills", {"name": bad, "description": "d"}), 400, "invalid_request")
    assert_error(b.api("POST", "/v1/skills", {"name": "ok-name"}), 400, "invalid_request")
    assert_error(b.api("POST", "/v1/skills", {"name": "ok-name", "description": "d" * 1025}), 400, "invalid_request")
    other = create(b, "other-name")
    assert_error(b.api("PATCH", f"/v1/skills/{other['id']}", {"name": "dup-name"}), 409, "conflict")
    assert_error(b.api("GET", "/v1/skills/skl_missing"), 404, "not_found")


def test_list_paginates(backend):
    b = backend
    ids = [create(b, f"page-{i}")["id"] for i in range(5)]
    first = b.ok("GET", "/v1/skills", query={"limit": "2"})
    assert len(first["skills"]) == 2 and first["nextCursor"]
    seen = [x["id"] for x in first["skills"]]
    cursor = first["nextCursor"]
    while cursor:
        nxt = b.ok("GET", "/v1/skills", query={"limit": "2", "cursor": cursor})
        seen += [x["id"] for x in nxt["skills"]]
        cursor = nxt["nextCursor"]
    assert seen == ids


def test_access_members_read_creator_and_admins_change(backend):
    b = backend
    s = create(b, "team-skill")
    member = b.add_member("mia@example.com")
    guest = b.add_member("gus@example.com", role="guest")
    m_tok, g_tok = b.session(member["id"]), b.session(guest["id"])
    seen = b.ok("GET", f"/v1/skills/{s['id']}", secret=m_tok)
    assert seen["canEdit"] is False
    assert_error(b.api("PATCH", f"/v1/skills/{s['id']}", {"description": "x"}, secret=m_tok), 403, "forbidden")
    assert_error(b.api("DELETE", f"/v1/skills/{s['id']}", secret=g_tok), 403, "forbidden")
    assert_error(b.api("POST", "/v1/skills", {"name": "guest-skill", "description": "d"}, secret=g_tok),
                 403, "forbidden")
    assert b.ok("GET", "/v1/skills", secret=g_tok)["skills"][0]["id"] == s["id"]
    # the member's own skill: the member changes it, the owner (workspace owner) may too
    mine = create(b, "mias-skill", secret=m_tok)
    assert mine["canEdit"] is True
    assert b.ok("PATCH", f"/v1/skills/{mine['id']}", {"description": "owner edit"})["description"] == "owner edit"


def test_scopes_personal_key_ok_platform_key_refused(backend):
    b = backend
    s = create(b, "scoped-skill")
    personal = b.key("personal", ["skills:manage"])
    assert b.ok("GET", f"/v1/skills/{s['id']}", secret=personal)["id"] == s["id"]
    assert b.api("POST", "/v1/skills", {"name": "by-key", "description": "d"}, secret=personal).status == 201
    platform = b.key("platform", ["vault:read", "docs:read"])
    for method, path in (("GET", "/v1/skills"), ("GET", f"/v1/skills/{s['id']}"),
                         ("POST", f"/v1/skills/{s['id']}/bundle-upload-url"), ("GET", "/v1/skills/platform/vault-tokens")):
        assert_error(b.api(method, path, secret=platform), 403, "insufficient_scope", "Insufficient scope")
    other_personal = b.key("personal", ["projects:manage"])
    assert_error(b.api("GET", "/v1/skills", secret=other_personal), 403, "insufficient_scope")


def test_platform_skills(backend):
    b = backend
    body = b.ok("GET", "/v1/skills/platform/skill-authoring")
    assert body["name"] == "skill-authoring"
    paths = [f["path"] for f in body["files"]]
    assert paths[0] == "SKILL.md" and "references/frontmatter.md" in paths
    md = body["files"][0]
    assert md["content"].startswith("---\nname: skill-authoring\n") and md["size"] == len(md["content"].encode())
    for name in ("vault-tokens", "integration-discovery"):
        assert b.ok("GET", f"/v1/skills/platform/{name}")["files"][0]["path"] == "SKILL.md"
    assert_error(b.api("GET", "/v1/skills/platform/no-such-skill"), 404, "not_found")


def test_inline_put_publishes_versions(backend):
    b = backend
    s = create(b, "inline-skill")
    assert b.ok("GET", f"/v1/skills/{s['id']}/files") == {"skillId": s["id"], "version": 0, "files": [],
                                                        "inlinedBytes": 0, "inlineLimit": 4 * 1024 * 1024}
    # a draft without SKILL.md cannot publish another file alone
    r = b.api("PUT", f"/v1/skills/{s['id']}/files", {"path": "references/a.md", "content": "A"})
    assert_error(r, 422, "unprocessable")
    assert r.body["error"]["detail"]["errors"][0]["path"] == "SKILL.md"
    v1 = b.ok("PUT", f"/v1/skills/{s['id']}/files", {"path": "SKILL.md", "content": skill_md("inline-skill")})
    assert v1["number"] == 1 and v1["source"] == "inline" and v1["skill"]["status"] == "published"
    assert v1["id"].startswith("skv_") and len(v1["sha256"]) == 64
    v2 = b.ok("PUT", f"/v1/skills/{s['id']}/files", {"path": "references/a.md", "content": "A", "baseVersion": 1})
    assert v2["number"] == 2 and v2["skill"]["version"] == 2
    files = b.ok("GET", f"/v1/skills/{s['id']}/files")
    assert files["version"] == 2
    assert {f["path"]: f["content"] for f in files["files"]} == {"SKILL.md": skill_md("inline-skill"),
                                                                 "references/a.md": "A"}
    # SKILL.md edits are re-validated: a frontmatter name that is not the skill's is refused
    r = b.api("PUT", f"/v1/skills/{s['id']}/files", {"path": "SKILL.md", "content": skill_md("another-name")})
    assert_error(r, 422, "unprocessable")
    assert "must equal" in r.body["error"]["detail"]["errors"][0]["message"]
    for bad_path in ("../x", "/abs", "a//b", "a/./b"):
        assert_error(b.api("PUT", f"/v1/skills/{s['id']}/files", {"path": bad_path, "content": "x"}),
                     400, "invalid_request")
    assert b.ok("GET", f"/v1/skills/{s['id']}")["version"] == 2


def test_rename_of_published_skill_rewrites_frontmatter(backend):
    b = backend
    s = create(b, "old-name")
    b.ok("PUT", f"/v1/skills/{s['id']}/files", {"path": "SKILL.md", "content": skill_md("old-name")})
    p = b.ok("PATCH", f"/v1/skills/{s['id']}", {"name": "new-name"})
    assert p["name"] == "new-name" and p["version"] == 2
    md = next(f for f in b.ok("GET", f"/v1/skills/{s['id']}/files")["files"] if f["path"] == "SKILL.md")
    assert "name: new-name" in md["content"] and "Instructions." in md["content"]


def test_project_grants_flow_down_to_skills(backend):
    b = backend
    member = b.add_member("pia@example.com")
    tok = b.session(member["id"])
    proj = b.ok("POST", "/v1/projects", {"name": "Ops"})["project"]
    s = create(b, "ops-skill")
    b.ok("POST", "/v1/projects/pin", {"resourceId": s["id"], "projectId": proj["id"]})
    assert b.ok("GET", f"/v1/skills/{s['id']}")["projectId"] == proj["id"]
    assert_error(b.api("GET", f"/v1/skills/{s['id']}", secret=tok), 404, "not_found")
    assert b.ok("GET", "/v1/skills", secret=tok)["skills"] == []
    b.ok("PUT", f"/v1/projects/{proj['id']}/grants", {"membershipId": member["id"], "role": "viewer"})
    assert b.ok("GET", f"/v1/skills/{s['id']}", secret=tok)["canEdit"] is False
    assert_error(b.api("PATCH", f"/v1/skills/{s['id']}/enabled", {"enabled": False}, secret=tok), 403, "forbidden")
    b.ok("PUT", f"/v1/projects/{proj['id']}/grants", {"membershipId": member["id"], "role": "editor"})
    assert b.ok("PATCH", f"/v1/skills/{s['id']}/enabled", {"enabled": False}, secret=tok)["enabled"] is False
