"""Project grants and the role of the nearest grant, on both backends."""
from tests.api_helpers import assert_error
from tests.project_helpers import grant, make_project, member_key


def test_member_grant_gives_role_and_viewer_is_read_only(backend):
    pid = make_project(backend)
    bob, bob_key = member_key(backend, "bob@example.com")
    assert backend.api("GET", f"/v1/projects/{pid}", secret=bob_key).status == 404
    got = grant(backend, pid, "viewer", bob["id"])
    assert got.status == 200 and got.body["project"]["isShared"] is True
    assert got.body["project"]["grants"] == [{"membershipId": bob["id"], "displayName": bob["name"], "role": "viewer"}]
    p = backend.ok("GET", f"/v1/projects/{pid}", secret=bob_key)["project"]
    assert (p["role"], p["isOwner"], p["canEdit"], p["isShared"]) == ("viewer", False, False, True)
    assert [x["id"] for x in backend.ok("GET", "/v1/projects", secret=bob_key)["projects"]] == [pid]
    before = backend.ok("GET", f"/v1/projects/{pid}")
    for method, path, body in (("PATCH", f"/v1/projects/{pid}", {"name": "x"}),
                               ("PUT", f"/v1/projects/{pid}/memory", {"text": "x", "version": 1}),
                               ("POST", f"/v1/projects/{pid}/delete", None),
                               ("PUT", f"/v1/projects/{pid}/grants", {"workspace": True, "role": "editor"})):
        assert_error(backend.api(method, path, body, secret=bob_key), 403, "forbidden")
    after = backend.ok("GET", f"/v1/projects/{pid}")
    assert after == before
    # editor by email: may edit, may not grant or delete
    grant(backend, pid, "editor", "BOB@example.com")
    assert backend.ok("PATCH", f"/v1/projects/{pid}", {"name": "Renamed"}, secret=bob_key)["project"]["role"] == "editor"
    assert_error(grant(backend, pid, "viewer", None, secret=bob_key), 403, "forbidden")
    assert_error(backend.api("POST", f"/v1/projects/{pid}/delete", secret=bob_key), 403, "forbidden")
    # removing the grant removes access
    removed = grant(backend, pid, None, bob["id"])
    assert removed.status == 200 and removed.body["project"]["isShared"] is False
    assert_error(backend.api("GET", f"/v1/projects/{pid}", secret=bob_key), 404, "not_found")


def test_nearest_grant_beats_higher_workspace_grant(backend):
    pid = make_project(backend)
    bob, bob_key = member_key(backend, "bob@example.com")
    _cy, cy_key = member_key(backend, "cy@example.com")
    body = grant(backend, pid, "editor").body
    assert body["project"]["orgGrant"] == {"role": "editor"} and body["project"]["isShared"]
    grant(backend, pid, "viewer", bob["id"])
    assert backend.ok("GET", f"/v1/projects/{pid}", secret=bob_key)["project"]["role"] == "viewer"
    assert backend.ok("GET", f"/v1/projects/{pid}", secret=cy_key)["project"]["role"] == "editor"
    assert_error(backend.api("PATCH", f"/v1/projects/{pid}", {"name": "x"}, secret=bob_key), 403, "forbidden")
    assert backend.api("PATCH", f"/v1/projects/{pid}", {"name": "y"}, secret=cy_key).status == 200
    # the workspace grant removed: cy has nothing, bob keeps his own
    grant(backend, pid, None)
    assert_error(backend.api("GET", f"/v1/projects/{pid}", secret=cy_key), 404, "not_found")
    assert backend.ok("GET", f"/v1/projects/{pid}", secret=bob_key)["project"]["orgGrant"] is None


def test_grant_bad_bodies_change_nothing(backend):
    pid = make_project(backend)
    bob, _ = member_key(backend, "bob@example.com")
    before = backend.ok("GET", f"/v1/projects/{pid}")
    for body in ({}, {"membershipId": bob["id"]}, {"membershipId": bob["id"], "role": "owner"},
                 {"membershipId": bob["id"], "workspace": True, "role": "viewer"}, {"role": "viewer"},
                 {"workspace": "yes", "role": "viewer"}, {"membershipId": backend.owner["id"], "role": "viewer"},
                 ["x"]):
        assert_error(backend.api("PUT", f"/v1/projects/{pid}/grants", body), 400, "invalid_request")
    assert_error(grant(backend, pid, "viewer", "um_nobody"), 404, "not_found")
    assert_error(grant(backend, "proj_nothere", "viewer"), 404, "not_found")
    assert backend.ok("GET", f"/v1/projects/{pid}") == before


def test_scopes_on_grants(backend):
    pid = make_project(backend)
    bob, _ = member_key(backend, "bob@example.com")
    personal = backend.key("personal", ["projects:manage"])
    assert grant(backend, pid, "viewer", bob["id"], secret=personal).status == 200
    for key in (backend.key("platform", ["vault:read", "vault:manage", "docs:read"]),
                backend.key("personal", ["memory:manage", "skills:manage", "triggers:manage"])):
        assert_error(grant(backend, pid, "editor", bob["id"], secret=key), 403, "insufficient_scope",
                     "Insufficient scope")
    assert backend.ok("GET", f"/v1/projects/{pid}")["project"]["grants"][0]["role"] == "viewer"
