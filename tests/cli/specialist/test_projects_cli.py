"""`wsctl specialist …` and `wsctl workflow …` through the real CLI, on both backends."""
import json
import sys

from tests.project_helpers import member_key, workflow_body


def test_specialist_lifecycle(backend, tmp_path):
    made = backend.wsctl("specialist", "create", "Support", "--icon", "🎧", "--color", "teal", "--json").json
    pid = made["project"]["id"]
    assert made == backend.ok("GET", f"/v1/projects/{pid}")
    listed = backend.wsctl("specialist", "list")
    assert listed.out.split("\t")[:3] == [pid, "Support", "owner"]
    assert backend.wsctl("specialist", "list", "--json").json == backend.ok("GET", "/v1/projects")
    shown = backend.wsctl("specialist", "show", "Support").out      # by exact name
    assert pid in shown and "version 1" in shown
    edited = backend.wsctl("specialist", "edit", pid, "--name", "Customer care", "--json").json
    assert edited["project"]["name"] == "Customer care"
    assert backend.wsctl("specialist", "edit", pid, expect=7).err.startswith("error: Nothing to change")
    # grants by email, then removed
    bob = backend.add_member("bob@example.com")
    g = backend.wsctl("specialist", "grant", pid, "--member", "bob@example.com", "--role", "viewer", "--json").json
    assert g["project"]["grants"][0]["membershipId"] == bob["id"] and g["project"]["isShared"]
    backend.wsctl("specialist", "grant", pid, "--workspace", "--role", "editor")
    assert backend.ok("GET", f"/v1/projects/{pid}")["project"]["orgGrant"] == {"role": "editor"}
    none = backend.wsctl("specialist", "grant", pid, "--workspace", "--role", "none", "--json").json
    assert none["project"]["orgGrant"] is None
    assert backend.wsctl("specialist", "grant", pid, "--role", "editor", expect=7).code == 7
    # delete asks for confirmation; without a terminal it refuses unless --yes
    r = backend.wsctl("specialist", "delete", pid, expect=7)
    assert "--yes" in r.err and backend.api("GET", f"/v1/projects/{pid}").status == 200
    gone = backend.wsctl("specialist", "delete", pid, "--yes", "--json").json
    assert gone["deleted"] is True
    assert backend.wsctl("specialist", "show", pid, expect=5).err.startswith("error: No specialist")
    assert backend.wsctl("specialist", "show", "Nobody", expect=5).code == 5


def test_memory_show_set_edit(backend, tmp_path):
    pid = backend.ok("POST", "/v1/projects", {"name": "Docs"})["project"]["id"]
    f = tmp_path / "memory.md"
    f.write_text("# Style\nShort sentences.\n", encoding="utf-8")
    m = backend.wsctl("specialist", "memory", "set", pid, f, "--version", "1", "--json").json
    assert m["version"] == 2 and m["text"] == "# Style\nShort sentences.\n"
    stale = backend.wsctl("specialist", "memory", "set", pid, f, "--version", "1", expect=6)
    assert "version 2" in stale.err
    assert backend.wsctl("specialist", "memory", "set", pid, "-", input="from stdin").code == 0   # reads the version
    assert backend.wsctl("specialist", "memory", "show", pid).out == "from stdin\n"
    assert backend.wsctl("specialist", "memory", "show", pid, "--json").json["memory"]["version"] == 3
    script = tmp_path / "editor.py"
    script.write_text("import sys\np = sys.argv[1]\nopen(p, 'a').write(' and edited')\n")
    env = {"EDITOR": f"{sys.executable} {script}", "VISUAL": ""}
    edited = backend.wsctl("specialist", "memory", "edit", pid, "--json", env=env).json
    assert edited["version"] == 4 and edited["text"] == "from stdin and edited"
    noop = tmp_path / "noop.py"
    noop.write_text("")
    r = backend.wsctl("specialist", "memory", "edit", pid, env={"EDITOR": f"{sys.executable} {noop}", "VISUAL": ""})
    assert "No change" in r.err and backend.ok("GET", f"/v1/projects/{pid}")["memory"]["version"] == 4


def test_workflow_import_pin_connections(backend, tmp_path):
    pid = backend.ok("POST", "/v1/projects", {"name": "Ops"})["project"]["id"]
    wf_file = tmp_path / "workflow.json"
    wf_file.write_text(json.dumps(workflow_body("Triage")))
    imported = backend.wsctl("workflow", "import", wf_file)
    wid = imported.out.strip()
    assert wid.startswith("wf_") and "not ready" in imported.err
    shown = backend.wsctl("workflow", "show", wid, "--json").json   # each read records its use (lastUsedAt)
    again = backend.ok("GET", f"/v1/workflows/{wid}")
    assert shown == {**again, "lastUsedAt": shown["lastUsedAt"]} and shown["lastUsedAt"] <= again["lastUsedAt"]
    assert wid in backend.wsctl("workflow", "list").out
    app_file = tmp_path / "app.json"
    app_file.write_text(json.dumps(workflow_body("Board", kind="app", nodes=[])))
    app = backend.wsctl("workflow", "import", app_file, "--into", "Ops", "--json").json
    assert app["projectId"] == pid and app["kind"] == "app"
    pinned = backend.wsctl("specialist", "pin", wid, "--into", pid, "--json").json
    assert pinned["projectId"] == pid
    counts = backend.ok("GET", f"/v1/projects/{pid}")["project"]["counts"]
    assert (counts["workflows"], counts["apps"]) == (1, 1)
    assert backend.wsctl("specialist", "connections", pid, "--json").json == {"connections": [], "nextCursor": None}
    cfg = backend.wsctl("workflow", "configure", wid, "t1", "--input", "owner=acme", "--input", "repo=web", "--json")
    assert cfg.json["triggers"][0]["missing"] == ["credentialId"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x", "nodes": [{"id": "t", "triggerId": "nope"}]}')
    assert "unknown triggerId" in backend.wsctl("workflow", "import", bad, expect=7).err
    assert backend.wsctl("specialist", "pin", wid, "--unpin").code == 0
    assert backend.ok("GET", f"/v1/workflows/{wid}")["projectId"] is None


def test_cli_with_personal_and_platform_keys(backend):
    _, key = member_key(backend, "kim@example.com", scopes=("projects:manage",))
    env = backend.env_for(key)
    made = backend.wsctl("specialist", "create", "Kim's", "--json", env=env).json
    assert made["project"]["ownerMembershipId"] != backend.owner["id"]
    platform = backend.key("platform", ["vault:read"])
    r = backend.wsctl("specialist", "list", env=backend.env_for(platform), expect=4)
    assert r.err.startswith("error: Insufficient scope")
