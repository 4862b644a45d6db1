"""Workflows and apps: import, visibility through projects, poll trigger config and `ready`."""
import json

from tests.api_helpers import assert_error
from tests.project_helpers import GITHUB_POLL, grant, make_project, make_workflow, member_key, pin, workflow_body
from tests.vault_helpers import make_credential


def github_credential(backend, owner_id=None) -> str:
    return make_credential(backend.workspace, owner_id or backend.owner["id"], "github", {"accessToken": "gh-x"})["id"]


def raw_json(backend, method, path, text):
    """A body only Python's lenient JSON reader accepts (NaN, Infinity), sent as the wire carries it."""
    if backend.kind == "remote":
        return backend.api(method, path, raw=text.encode())
    return backend.api(method, path, json.loads(text))


def config(backend, wid, node, body, secret=None):
    return backend.api("PUT", f"/v1/workflows/{wid}/triggers/{node}/config", body, secret=secret)


def test_import_and_read(backend):
    wf = make_workflow(backend)
    assert wf["id"].startswith("wf_") and wf["kind"] == "workflow" and wf["projectId"] is None
    assert wf["createdBy"] == backend.owner["id"] and wf["canEdit"] and wf["lastUsedAt"] is None
    trigger, action = wf["nodes"]
    assert trigger["ready"] is False and "ready" not in action and action["operation"] == "slack.chat-post-message"
    assert wf["triggers"] == [{"nodeId": "t1", "triggerId": GITHUB_POLL, "type": "poll", "credentialId": None,
                               "inputs": None, "ready": False, "missing": ["credentialId", "inputs"]}]
    app = make_workflow(backend, name="Dashboard", kind="app", nodes=[{"id": "w", "triggerId": "webhook"}])
    assert app["kind"] == "app" and app["nodes"][0]["ready"] is True
    read = backend.ok("GET", f"/v1/workflows/{wf['id']}")   # a read of the definition is a use
    assert read == {**wf, "lastUsedAt": read["lastUsedAt"]} and read["lastUsedAt"] is not None
    listed = backend.ok("GET", "/v1/workflows")
    assert [w["id"] for w in listed["workflows"]] == [wf["id"], app["id"]] and "nodes" not in listed["workflows"][0]
    assert [w["id"] for w in backend.ok("GET", "/v1/workflows", query={"kind": "app"})["workflows"]] == [app["id"]]
    page = backend.ok("GET", "/v1/workflows", query={"limit": "1"})
    assert len(page["workflows"]) == 1 and page["nextCursor"]


def test_bad_imports_change_nothing(backend):
    cred = github_credential(backend)
    bad = [
        {}, {"name": "x"}, {"name": "", "nodes": []}, {"name": "x", "kind": "robot", "nodes": []},
        {"name": "x", "nodes": {"id": "a"}}, {"name": "x", "nodes": ["a"]}, {"name": "x", "nodes": [{"type": "x"}]},
        {"name": "x", "nodes": [{"id": "a"}, {"id": "a"}]},
        {"name": "x", "nodes": [{"id": "t", "triggerId": "no-such-trigger"}]},
        {"name": "x", "nodes": [{"id": "t", "type": "trigger"}]},
        {"name": "x", "nodes": [{"id": "t", "triggerId": 5}]},
        {"name": "x", "nodes": [{"id": "t", "triggerId": GITHUB_POLL, "inputs": ["owner"]}]},
        {"name": "x", "nodes": [{"id": "t", "triggerId": "hacker-news-new-story", "credentialId": cred}]},
        {"name": "x", "nodes": [{"id": "a", "credentialId": 7}]},
    ]
    for body in bad:
        assert_error(backend.api("POST", "/v1/workflows", body), 400, "invalid_request")
    for text in ('{"name": "x", "nodes": [{"id": "a", "weight": NaN}]}', '{"name": "x", "nodes": [{"id": "a", "w": 1e999}]}'):
        assert_error(raw_json(backend, "POST", "/v1/workflows", text), 400, "invalid_request")
    assert_error(raw_json(backend, "PUT", "/v1/workflows/wf_x/triggers/t/config", '{"inputs": {"a": Infinity}}'),
                 400, "invalid_request")
    assert_error(backend.api("POST", "/v1/workflows", workflow_body(nodes=[{"id": "a", "credentialId": "cred_nope"}])),
                 404, "not_found")
    assert backend.ok("GET", "/v1/workflows")["workflows"] == []


def test_poll_trigger_ready_after_credential_and_inputs(backend):
    wf = make_workflow(backend)
    cred = github_credential(backend)
    only_cred = config(backend, wf["id"], "t1", {"credentialId": cred})
    assert only_cred.status == 200 and only_cred.body["nodes"][0]["ready"] is False
    assert only_cred.body["triggers"][0]["missing"] == ["inputs"]
    partial = config(backend, wf["id"], "t1", {"credentialId": cred, "inputs": {"owner": "acme"}}).body
    assert partial["triggers"][0]["missing"] == ["inputs.repo"] and not partial["nodes"][0]["ready"]
    done = config(backend, wf["id"], "t1", {"credentialId": cred, "inputs": {"owner": "acme", "repo": "web"}}).body
    assert done["nodes"][0]["ready"] is True and done["nodes"][0]["credentialId"] == cred
    assert backend.ok("GET", f"/v1/workflows/{wf['id']}")["triggers"][0]["ready"] is True
    no_cred = config(backend, wf["id"], "t1", {"inputs": {"owner": "acme", "repo": "web"}}).body
    assert no_cred["triggers"][0]["missing"] == ["credentialId"]
    # a poll provider that needs no credential is ready once its inputs are set
    hn = make_workflow(backend, nodes=[{"id": "hn", "triggerId": "hacker-news-new-story"}])
    assert config(backend, hn["id"], "hn", {"inputs": {}}).body["nodes"][0]["ready"] is True


def test_trigger_config_errors(backend):
    wf = make_workflow(backend)
    cred = github_credential(backend)
    for body in ({"credentialId": cred, "inputs": "owner=acme"}, {"credentialId": 5}, ["x"],
                 {"inputs": {"owner": {"nested": 1}}}):
        assert_error(config(backend, wf["id"], "t1", body), 400, "invalid_request")
    assert_error(config(backend, wf["id"], "a1", {"credentialId": cred}), 400, "invalid_request")
    assert_error(config(backend, wf["id"], "zz", {"credentialId": cred}), 404, "not_found")
    assert_error(config(backend, "wf_nope", "t1", {"credentialId": cred}), 404, "not_found")
    assert_error(config(backend, wf["id"], "t1", {"credentialId": "cred_nope", "inputs": {}}), 404, "not_found")
    # someone else's credential: unseen 404; shared as viewer 403; shared as user OK
    bob, _bob_key = member_key(backend, "bob@example.com")
    bob_cred = github_credential(backend, bob["id"])
    assert_error(config(backend, wf["id"], "t1", {"credentialId": bob_cred}), 404, "not_found")
    bob_session = backend.session(bob["id"])
    backend.ok("PUT", f"/v1/credentials/{bob_cred}/sharing", {"membershipId": backend.owner["id"], "role": "viewer"},
               secret=bob_session)
    assert_error(config(backend, wf["id"], "t1", {"credentialId": bob_cred}), 403, "forbidden")
    backend.ok("PUT", f"/v1/credentials/{bob_cred}/sharing", {"membershipId": backend.owner["id"], "role": "user"},
               secret=bob_session)
    assert config(backend, wf["id"], "t1", {"credentialId": bob_cred}).status == 200
    assert backend.ok("GET", f"/v1/workflows/{wf['id']}")["triggers"][0]["credentialId"] == bob_cred
    # scope: triggers:manage, not projects:manage
    assert_error(config(backend, wf["id"], "t1", {"credentialId": cred},
                        secret=backend.key("personal", ["projects:manage"])), 403, "insufficient_scope")
    assert config(backend, wf["id"], "t1", {"credentialId": cred},
                  secret=backend.key("personal", ["triggers:manage"])).status == 200


def test_visibility_flows_down_from_the_project(backend):
    wf = make_workflow(backend)
    pid = make_project(backend)
    bob, bob_key = member_key(backend, "bob@example.com")
    assert_error(backend.api("GET", f"/v1/workflows/{wf['id']}", secret=bob_key), 404, "not_found")
    assert pin(backend, wf["id"], pid).status == 200
    assert_error(backend.api("GET", f"/v1/workflows/{wf['id']}", secret=bob_key), 404, "not_found")
    assert backend.ok("GET", "/v1/workflows", secret=bob_key)["workflows"] == []
    grant(backend, pid, "viewer", bob["id"])
    seen = backend.ok("GET", f"/v1/workflows/{wf['id']}", secret=bob_key)
    assert seen["canEdit"] is False and seen["projectId"] == pid
    assert [w["id"] for w in backend.ok("GET", "/v1/workflows", secret=bob_key)["workflows"]] == [wf["id"]]
    assert_error(config(backend, wf["id"], "t1", {"inputs": {}}, secret=bob_key), 403, "forbidden")
    grant(backend, pid, "editor", bob["id"])
    assert config(backend, wf["id"], "t1", {"inputs": {"owner": "a", "repo": "b"}}, secret=bob_key).status == 200
    # the platform key is refused before anything is looked up
    assert_error(backend.api("GET", "/v1/workflows", secret=backend.key("platform", ["docs:read"])),
                 403, "insufficient_scope")


def test_import_straight_into_a_project(backend):
    pid = make_project(backend)
    body = {**workflow_body(), "projectId": pid}
    wf = backend.api("POST", "/v1/workflows", body)
    assert wf.status == 201 and wf.body["projectId"] == pid
    bob, bob_key = member_key(backend, "bob@example.com")
    grant(backend, pid, "viewer", bob["id"])
    assert_error(backend.api("POST", "/v1/workflows", body, secret=bob_key), 403, "forbidden")
    assert backend.ok("GET", f"/v1/projects/{pid}")["project"]["counts"]["workflows"] == 1


def test_workflow_json_names_credentials_by_name(backend, tmp_path):
    """Issue 26: `"credentialId": "stripe-live"` in a workflow.json, as `vault list` shows the name.
    `workflow import` sends its id; the API, which takes ids, says so and where they are."""
    cred = github_credential(backend)   # named "github", after its service
    doc = workflow_body(nodes=[{"id": "t1", "triggerId": GITHUB_POLL, "credentialId": "github",
                                "inputs": {"owner": "acme", "repo": "web"}}])
    path = tmp_path / "workflow.json"
    path.write_text(json.dumps(doc))
    wid = backend.wsctl("workflow", "import", path).out.strip()
    shown = backend.ok("GET", f"/v1/workflows/{wid}")
    assert shown["nodes"][0]["credentialId"] == cred and shown["triggers"][0]["ready"] is True
    # an unknown name: exit 5 naming the node and where names are listed; nothing made
    path.write_text(json.dumps(workflow_body(nodes=[{"id": "t1", "triggerId": GITHUB_POLL, "credentialId": "gh-nope"}])))
    err = backend.wsctl("workflow", "import", path, expect=5).err
    assert "Node 't1': No credential named 'gh-nope' that you can see. Run `wsctl vault list`." in err
    # the API itself: a name where an id goes is a 404 that says an id is needed and how to find it
    r = backend.api("POST", "/v1/workflows", doc)
    assert_error(r, 404, "not_found")
    message = r.body["error"]["message"]
    assert "Node 't1'" in message and "takes a credential's id (cred_…), not its name" in message
    assert "`wsctl vault list`" in message and "`wsctl workflow import`" in message
    assert [w["id"] for w in backend.ok("GET", "/v1/workflows")["workflows"]] == [wid]
