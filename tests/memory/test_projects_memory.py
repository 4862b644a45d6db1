"""A project's own memory: replace it naming the version read (409 when stale)."""
from tests.api_helpers import ISO_Z, assert_error
from tests.project_helpers import grant, make_project, member_key


def test_memory_write_bumps_version_and_names_writer(backend):
    pid = make_project(backend)
    bob, bob_key = member_key(backend, "bob@example.com")
    grant(backend, pid, "editor", bob["id"])
    m = backend.ok("PUT", f"/v1/projects/{pid}/memory", {"text": "# Tone\nBe brief.", "version": 1})
    assert m["text"] == "# Tone\nBe brief." and m["version"] == 2 and ISO_Z.match(m["updatedAt"])
    assert m["updatedBy"] == {"membershipId": backend.owner["id"], "displayName": backend.owner["name"]}
    m2 = backend.ok("PUT", f"/v1/projects/{pid}/memory", {"text": "Edited by Bob", "version": 2}, secret=bob_key)
    assert m2["version"] == 3 and m2["updatedBy"] == {"membershipId": bob["id"], "displayName": bob["name"]}
    assert backend.ok("GET", f"/v1/projects/{pid}")["memory"] == m2


def test_stale_version_is_409_with_current_version(backend):
    pid = make_project(backend)
    backend.ok("PUT", f"/v1/projects/{pid}/memory", {"text": "first", "version": 1})
    for stale in (1, 0, 7, -1, 2**70):  # any integer but the current one is 409 (CONTRACT §6), not 400
        r = backend.api("PUT", f"/v1/projects/{pid}/memory", {"text": "lost update", "version": stale})
        assert_error(r, 409, "conflict")
        assert r.body["error"]["detail"]["currentVersion"] == 2
    memory = backend.ok("GET", f"/v1/projects/{pid}")["memory"]
    assert (memory["text"], memory["version"]) == ("first", 2)


def test_memory_bad_bodies_and_access(backend):
    pid = make_project(backend)
    for body in ({}, {"text": "x"}, {"version": 1}, {"text": 5, "version": 1}, {"text": "x", "version": "1"},
                 {"text": "x", "version": True}, {"text": "x", "version": 1.5}, ["x"]):
        assert_error(backend.api("PUT", f"/v1/projects/{pid}/memory", body), 400, "invalid_request")
    assert backend.ok("GET", f"/v1/projects/{pid}")["memory"]["version"] == 1
    bob, bob_key = member_key(backend, "bob@example.com")
    assert_error(backend.api("PUT", f"/v1/projects/{pid}/memory", {"text": "x", "version": 1}, secret=bob_key),
                 404, "not_found")
    grant(backend, pid, "viewer", bob["id"])
    assert_error(backend.api("PUT", f"/v1/projects/{pid}/memory", {"text": "x", "version": 1}, secret=bob_key),
                 403, "forbidden")
    platform = backend.key("platform", ["vault:read"])
    assert_error(backend.api("PUT", f"/v1/projects/{pid}/memory", {"text": "x", "version": 1}, secret=platform),
                 403, "insufficient_scope")
    personal = backend.key("personal", ["projects:manage"])
    assert backend.ok("PUT", f"/v1/projects/{pid}/memory", {"text": "", "version": 1}, secret=personal)["version"] == 2
