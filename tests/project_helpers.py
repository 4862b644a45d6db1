"""Setup helpers for the projects and workflows tests (everything goes through the API)."""
from __future__ import annotations

GITHUB_POLL = "github-new-issue"


def make_project(backend, name: str = "Support", secret: str | None = None) -> str:
    return backend.ok("POST", "/v1/projects", {"name": name}, secret=secret)["project"]["id"]


def member_key(backend, email: str, role: str = "member", scopes=("projects:manage", "triggers:manage")):
    """(member, personal key) of a new member."""
    m = backend.add_member(email, role=role)
    return m, backend.key("personal", scopes, m["id"])


def grant(backend, pid: str, role, member_id: str | None = None, secret: str | None = None):
    body = {"workspace": True} if member_id is None else {"membershipId": member_id}
    return backend.api("PUT", f"/v1/projects/{pid}/grants", {**body, "role": role}, secret=secret)


def workflow_body(name: str = "Triage", kind: str = "workflow", nodes=None) -> dict:
    if nodes is None:
        nodes = [{"id": "t1", "type": "trigger", "triggerId": GITHUB_POLL},
                 {"id": "a1", "type": "action", "operation": "slack.chat-post-message"}]
    return {"name": name, "kind": kind, "description": f"{name} things", "nodes": nodes}


def make_workflow(backend, secret: str | None = None, **kw) -> dict:
    r = backend.api("POST", "/v1/workflows", workflow_body(**kw), secret=secret)
    assert r.status == 201, r.body
    return r.body


def pin(backend, rid: str, pid, secret: str | None = None):
    return backend.api("POST", "/v1/projects/pin", {"resourceId": rid, "projectId": pid}, secret=secret)
