"""Issue 26's audit items on projects and workflows, on every door: a project's icon is one emoji,
icon and workerColor are strings with defaults, a workflow's or app's lastUsedAt is its last
definition read (docs/api.md §7.2, §7.3)."""
from __future__ import annotations

from tests.api_helpers import ISO_Z, assert_error
from tests.conftest import base_env, run_wsctl


def test_icon_is_one_emoji_and_defaults_are_strings(backend):
    made = backend.ok("POST", "/v1/projects", {"name": "Plain"})["project"]
    assert (made["icon"], made["workerColor"]) == ("🤖", "blue")
    pid = made["id"]
    assert backend.ok("GET", "/v1/projects")["projects"][0]["icon"] == "🤖"
    for icon in ("🎧", "👩🏽‍💻", "🇫🇷", "#️⃣", "❤️"):   # a ZWJ sequence with a skin tone, a flag, a keycap
        got = backend.ok("PATCH", f"/v1/projects/{pid}", {"icon": icon, "workerColor": "dark blue"})["project"]
        assert (got["icon"], got["workerColor"]) == (icon, "dark blue")
    for icon in ("", "ab", "🎧🎧", " 🎧", "1", "x" * 40, "é"):
        r = backend.api("PATCH", f"/v1/projects/{pid}", {"icon": icon})
        assert_error(r, 400, "invalid_request")
        assert r.body["error"]["message"].startswith("'icon' must be"), (icon, r.body)
    for color in ("", "#00ff00", "x" * 41, "red;", 5):
        r = backend.api("PATCH", f"/v1/projects/{pid}", {"workerColor": color})
        assert_error(r, 400, "invalid_request")
        assert "'workerColor' must be" in r.body["error"]["message"], (color, r.body)
    r = backend.api("POST", "/v1/projects", {"name": "Bad icon", "icon": "no"})
    assert_error(r, 400, "invalid_request")
    assert [p["name"] for p in backend.ok("GET", "/v1/projects")["projects"]] == ["Plain"]   # nothing made
    # refused changes changed nothing; null puts the defaults back
    assert backend.ok("GET", f"/v1/projects/{pid}")["project"]["icon"] == "❤️"
    got = backend.ok("PATCH", f"/v1/projects/{pid}", {"icon": None, "workerColor": None})["project"]
    assert (got["icon"], got["workerColor"]) == ("🤖", "blue")
    # the CLI's --icon goes through the same rule (exit 7, the one line)
    r = backend.wsctl("specialist", "edit", pid, "--icon", "smile", expect=7)
    assert r.err.startswith("error: 'icon' must be one emoji"), r.err


def test_workflow_and_app_last_used_is_the_last_definition_read(backend):
    pid = backend.ok("POST", "/v1/projects", {"name": "Runs"})["project"]["id"]
    wf = backend.ok("POST", "/v1/workflows", {"name": "Nightly", "nodes": [], "projectId": pid})
    app = backend.ok("POST", "/v1/workflows", {"name": "Board", "kind": "app", "nodes": []})
    assert wf["lastUsedAt"] is None and app["lastUsedAt"] is None   # importing is not a use
    listed = backend.ok("GET", "/v1/workflows")["workflows"]
    assert [w["lastUsedAt"] for w in listed] == [None, None]          # nor is listing
    read = backend.ok("GET", f"/v1/workflows/{wf['id']}")
    assert ISO_Z.match(read["lastUsedAt"]) and read["updatedAt"] == wf["updatedAt"]
    by = {w["id"]: w for w in backend.ok("GET", "/v1/workflows")["workflows"]}
    assert by[wf["id"]]["lastUsedAt"] == read["lastUsedAt"] and by[app["id"]]["lastUsedAt"] is None
    resources = backend.ok("GET", f"/v1/projects/{pid}")["resources"]
    assert [(r["id"], r["lastUsedAt"]) for r in resources] == [(wf["id"], read["lastUsedAt"])]
    opened = backend.ok("GET", f"/v1/workflows/{app['id']}")
    assert ISO_Z.match(opened["lastUsedAt"]) and opened["lastUsedAt"] >= read["lastUsedAt"]
    # a caller who cannot see it gets 404 and records nothing
    bob = backend.add_member("bob@example.com")
    r = backend.api("GET", f"/v1/workflows/{app['id']}", secret=backend.session(bob["id"]))
    assert_error(r, 404, "not_found")


def test_bundle_upload_help_says_what_json_prints(home):
    """The folder upload's --json is a summary over its calls, and its help says so (the output's
    keys are checked in tests/projects/test_project_files.py)."""
    out = run_wsctl(["specialist", "files", "bundle", "upload", "--help"], base_env(home)).out
    flat = " ".join(out.split())
    assert "{added, updated, unchanged, deleted, bytesSent}" in flat and "the API's JSON body exactly" not in flat
    out = run_wsctl(["specialist", "files", "bundle", "download", "--help"], base_env(home)).out
    assert "Print {path, bytes} as JSON" in " ".join(out.split())
