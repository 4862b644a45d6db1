"""What a project holds: pin, resources and counts, connections, delete returning resources."""

from tests.api_helpers import assert_error
from tests.project_helpers import grant, make_project, make_workflow, member_key, pin
from tests.vault_helpers import make_credential


def resource_ids(backend, pid, secret=None):
    return [r["id"] for r in backend.ok("GET", f"/v1/projects/{pid}", secret=secret)["resources"]]


def test_pin_moves_and_counts(backend):
    wf = make_workflow(backend, name="Triage")
    app = make_workflow(backend, name="Board", kind="app", nodes=[])
    a, b = make_project(backend, "A"), make_project(backend, "B")
    r = pin(backend, wf["id"], a)
    assert r.status == 200 and r.body == {
        "resource": {"id": wf["id"], "name": "Triage", "description": "Triage things", "type": "workflow",
                     "lastUsedAt": None}, "projectId": a, "previousProjectId": None}
    pin(backend, app["id"], a)
    got = backend.ok("GET", f"/v1/projects/{a}")
    assert got["project"]["counts"] == {"workflows": 1, "apps": 1, "skills": 0, "files": 0}
    assert got["resources"] == [
        {"id": wf["id"], "name": "Triage", "description": "Triage things", "type": "workflow", "lastUsedAt": None},
        {"id": app["id"], "name": "Board", "description": "Board things", "type": "app", "lastUsedAt": None}]
    # one home only: moving into B takes it out of A
    assert pin(backend, wf["id"], b).body["previousProjectId"] == a
    assert resource_ids(backend, a) == [app["id"]] and resource_ids(backend, b) == [wf["id"]]
    assert backend.ok("GET", f"/v1/workflows/{wf['id']}")["projectId"] == b
    listed = {p["id"]: p["counts"] for p in backend.ok("GET", "/v1/projects")["projects"]}
    assert listed[a]["apps"] == 1 and listed[b]["workflows"] == 1
    # projectId null returns it to its creator
    assert pin(backend, wf["id"], None).body["projectId"] is None
    assert resource_ids(backend, b) == []


def test_pin_needs_edit_on_both_sides(backend):
    bob, bob_key = member_key(backend, "bob@example.com")
    mine = make_project(backend, "Mine")
    bobs = make_project(backend, "Bob's", secret=bob_key)
    wf = make_workflow(backend)
    pin(backend, wf["id"], mine)
    # bob cannot see the workflow at all, nor the target he has no grant on
    assert_error(pin(backend, wf["id"], bobs, secret=bob_key), 404, "not_found")
    grant(backend, mine, "viewer", bob["id"])
    assert_error(pin(backend, wf["id"], bobs, secret=bob_key), 403, "forbidden")      # viewer on the source
    grant(backend, mine, "editor", bob["id"])
    assert_error(pin(backend, wf["id"], bobs), 404, "not_found")                      # owner cannot see bob's
    grant(backend, bobs, "viewer", backend.owner["id"], secret=bob_key)
    assert_error(pin(backend, wf["id"], bobs), 403, "forbidden")                      # viewer on the target
    assert pin(backend, wf["id"], bobs, secret=bob_key).status == 200                 # editor on source, owner of target
    assert resource_ids(backend, mine) == [] and resource_ids(backend, bobs, bob_key) == [wf["id"]]
    # an unpinned resource: its creator or a workspace owner/admin may pin it
    own = make_workflow(backend, secret=bob_key, name="Bob's own")
    assert_error(pin(backend, own["id"], mine, secret=member_key(backend, "cy@example.com")[1]), 404, "not_found")
    assert pin(backend, own["id"], mine).status == 200


def test_pin_bad_bodies_change_nothing(backend):
    wf = make_workflow(backend)
    pid = make_project(backend)
    for body in ({}, {"resourceId": wf["id"]}, {"projectId": pid}, {"resourceId": 5, "projectId": pid}, {"resourceId": wf["id"], "projectId": 5}, ["x"]):
        assert_error(backend.api("POST", "/v1/projects/pin", body), 400, "invalid_request")
    assert_error(pin(backend, "wf_nothing", pid), 404, "not_found")
    assert_error(pin(backend, "skl_nothing", pid), 404, "not_found")
    assert_error(pin(backend, "cred_x", pid), 404, "not_found")  # read as a name: nothing is called that
    assert_error(pin(backend, wf["id"], "proj_nothing"), 404, "not_found")
    assert backend.ok("GET", f"/v1/workflows/{wf['id']}")["projectId"] is None
    assert_error(backend.api("POST", "/v1/projects/pin", {"resourceId": wf["id"], "projectId": pid},
                             secret=backend.key("platform", ["vault:read"])), 403, "insufficient_scope")
    assert backend.api("POST", "/v1/projects/pin", {"resourceId": wf["id"], "projectId": pid},
                       secret=backend.key("personal", ["projects:manage"])).status == 200


def test_skills_pin_and_return(backend):
    sid = backend.ok("POST", "/v1/skills", {"name": "tone-guide", "description": "How we write to customers."})["id"]
    pid = make_project(backend)
    assert pin(backend, sid, pid).body["resource"]["type"] == "skill"
    got = backend.ok("GET", f"/v1/projects/{pid}")
    assert got["project"]["counts"]["skills"] == 1 and [x["type"] for x in got["resources"]] == ["skill"]
    backend.ok("POST", f"/v1/projects/{pid}/delete")
    assert backend.ok("GET", f"/v1/skills/{sid}")["projectId"] is None


def test_pin_skill_seen_but_not_movable_is_403(backend):
    """CONTRACT §3: a skill the caller can see but may not change is 403, not 404."""
    scopes = ("projects:manage", "skills:manage")
    _bob, bob_key = member_key(backend, "bob@example.com", scopes=scopes)
    _admin, admin_key = member_key(backend, "adam@example.com", role="admin", scopes=scopes)
    bobs = make_project(backend, "Bob's", secret=bob_key)
    sid = backend.ok("POST", "/v1/skills", {"name": "tone-guide", "description": "How we write."})["id"]
    # in no project: every member sees it, only its creator or an owner/admin may move it
    assert backend.api("GET", f"/v1/skills/{sid}", secret=bob_key).status == 200
    assert_error(pin(backend, sid, bobs, secret=bob_key), 403, "forbidden")
    mine = make_project(backend, "Mine")
    pin(backend, sid, mine)
    # in a project: an admin sees it (skills rule) but has no edit on that project
    assert backend.api("GET", f"/v1/skills/{sid}", secret=admin_key).status == 200
    assert_error(pin(backend, sid, None, secret=admin_key), 403, "forbidden")
    assert_error(pin(backend, sid, bobs, secret=bob_key), 404, "not_found")       # bob cannot see it now
    # an archived skill is visible and read-only: 409, and it stays where it is
    old = backend.ok("POST", "/v1/skills", {"name": "old-guide", "description": "Retired."})["id"]
    backend.ok("DELETE", f"/v1/skills/{old}")
    assert_error(pin(backend, old, mine), 409, "conflict")
    assert backend.ok("GET", f"/v1/skills/{old}")["projectId"] is None
    assert [r["id"] for r in backend.ok("GET", f"/v1/projects/{mine}")["resources"]] == [sid]


def test_connections_list_wired_credentials(backend):
    cred = make_credential(backend.workspace, backend.owner["id"], "github", {"accessToken": "gh-x"})
    pid = make_project(backend)
    wf = make_workflow(backend, nodes=[{"id": "t1", "triggerId": "github-new-issue", "credentialId": cred["id"],
                                        "inputs": {"owner": "a", "repo": "b"}},
                                       {"id": "n2", "credentialId": cred["id"]}])
    other = make_workflow(backend, name="Plain", nodes=[{"id": "x"}])
    assert backend.ok("GET", f"/v1/projects/{pid}/connections") == {"connections": [], "nextCursor": None}
    pin(backend, wf["id"], pid)
    pin(backend, other["id"], pid)
    bob, bob_key = member_key(backend, "bob@example.com")
    assert_error(backend.api("GET", f"/v1/projects/{pid}/connections", secret=bob_key), 404, "not_found")
    grant(backend, pid, "viewer", bob["id"])
    body = backend.ok("GET", f"/v1/projects/{pid}/connections", secret=bob_key)
    assert body == {"connections": [{
        "id": cred["id"], "service": "github", "name": cred["name"], "credentialType": "oauth2", "status": "ok",
        "usedBy": [{"id": wf["id"], "name": "Triage", "type": "workflow", "nodeIds": ["t1", "n2"]}], "usedByCount": 1}],
        "nextCursor": None}
    assert "gh-x" not in str(body)
    # paged by credential id like every list (docs/api.md §1 "Bounded answers")
    second = make_credential(backend.workspace, backend.owner["id"], "slack", {"accessToken": "sl-x"})
    pin(backend, make_workflow(backend, name="Two", nodes=[{"id": "a", "credentialId": second["id"]}])["id"], pid)
    first = backend.ok("GET", f"/v1/projects/{pid}/connections", query={"limit": "1"})
    assert len(first["connections"]) == 1 and first["nextCursor"]
    rest = backend.ok("GET", f"/v1/projects/{pid}/connections", query={"limit": "1", "cursor": first["nextCursor"]})
    assert [c["id"] for c in first["connections"] + rest["connections"]] == sorted([cred["id"], second["id"]])
    assert rest["nextCursor"] is None
    listed = backend.wsctl("specialist", "connections", pid, "--json").json
    assert [c["id"] for c in listed["connections"]] == sorted([cred["id"], second["id"]])


def test_delete_returns_resources_to_creators(backend):
    bob, bob_key = member_key(backend, "bob@example.com")
    pid = make_project(backend)
    grant(backend, pid, "editor", bob["id"])
    mine = make_workflow(backend)
    his = make_workflow(backend, secret=bob_key, name="Bob flow")
    pin(backend, mine["id"], pid)
    pin(backend, his["id"], pid, secret=bob_key)
    assert_error(backend.api("POST", f"/v1/projects/{pid}/delete", secret=bob_key), 403, "forbidden")
    assert_error(backend.api("POST", "/v1/projects/proj_nothing/delete"), 404, "not_found")
    gone = backend.ok("POST", f"/v1/projects/{pid}/delete")
    assert gone == {"id": pid, "deleted": True, "returnedResources": 2, "deletedFiles": 0}
    assert_error(backend.api("GET", f"/v1/projects/{pid}"), 404, "not_found")
    assert backend.ok("GET", "/v1/projects")["projects"] == []
    assert backend.ok("GET", f"/v1/workflows/{mine['id']}")["projectId"] is None
    back = backend.ok("GET", f"/v1/workflows/{his['id']}", secret=bob_key)
    assert back["projectId"] is None and back["createdBy"] == bob["id"]
    assert_error(backend.api("GET", f"/v1/workflows/{his['id']}"), 404, "not_found")   # only its creator now


def test_files_are_counted_and_go_with_the_project(backend, tmp_path):
    pid = make_project(backend)
    folder = tmp_path / "shared"
    (folder / "docs").mkdir(parents=True)
    (folder / "a.md").write_text("alpha")
    (folder / "docs" / "b.md").write_text("beta")
    backend.wsctl("specialist", "files", "bundle", "upload", pid, folder)
    assert backend.ok("GET", f"/v1/projects/{pid}")["project"]["counts"]["files"] == 2
    assert len(_stored_blobs(backend)) == 2
    assert backend.ok("POST", f"/v1/projects/{pid}/delete")["deletedFiles"] == 2
    assert backend.ok("GET", "/v1/projects")["projects"] == []
    assert _stored_blobs(backend) == []  # their contents leave the blob store with them


def _stored_blobs(backend) -> list:
    """The stored blobs, whichever store holds them (rows on the postgres door, files elsewhere)."""
    if backend.door == "postgres":
        from tests.projects.test_project_files import _blob_rows

        return _blob_rows(backend)
    return [p for p in (backend.workspace / "blobs" / "sha256").rglob("*") if p.is_file()]
