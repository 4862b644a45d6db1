"""/v1/openapi.json against the engine: every handled route is described, and real answers
validate against the schemas it documents (tests/schema_helpers.py, no dependency)."""
from __future__ import annotations

from tests.project_helpers import workflow_body
from tests.schema_helpers import assert_documented, schema_errors
from tests.skill_helpers import skill_md
from workspacectl.engine.scopes import ROUTE_SCOPES


def _refs(node) -> set[str]:
    if isinstance(node, dict):
        own = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        return own.union(*(_refs(x) for x in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(x) for x in node))
    return set()


def test_every_route_with_a_handler_is_documented():
    from workspacectl.engine.dispatch import load_routes
    from workspacectl.engine.openapi.components import COMPONENTS
    from workspacectl.engine.openapi.routes import build_openapi
    from workspacectl.engine.registry import DECLARED

    load_routes()
    assert set(DECLARED) == set(ROUTE_SCOPES)
    spec = build_openapi()
    for (method, path) in DECLARED:
        op = spec["paths"][path][method.lower()]
        assert set(op["responses"]) - {"default"}, (method, path)  # at least one success answer
        for status in op["responses"]:
            assert status == "default" or 200 <= int(status) < 300, (method, path, status)
    missing = {r for r in _refs(spec) if r.rsplit("/", 1)[-1] not in COMPONENTS}
    assert not missing, missing


def test_the_validator_refuses_what_it_should():
    doc = {"components": {"schemas": {"P": {"type": "object", "properties": {"n": {"type": ["integer", "null"]}},
                                            "required": ["n"], "additionalProperties": False}}}}
    schema = {"type": "array", "items": {"$ref": "#/components/schemas/P"}}
    assert schema_errors([{"n": 1}, {"n": None}], schema, doc) == []
    for bad in ([{"n": "1"}], [{}], [{"n": 1, "x": 2}], [{"n": True}], {"n": 1}):
        assert schema_errors(bad, schema, doc), bad
    assert schema_errors("b", {"enum": ["a"]}, doc) and schema_errors("x", {"format": "date-time"}, doc)
    assert schema_errors(3, {"anyOf": [{"type": "string"}, {"type": "null"}]}, doc)


def test_answers_validate_against_the_documented_schemas(backend):
    r = backend.api("GET", "/v1/openapi.json", secret="")
    assert r.status == 200
    spec = r.body

    def call(method: str, template: str, status: int, body=None, query=None, **ids):
        path = template.format(**ids)
        return assert_documented(spec, backend.api(method, path, body, query=query), method, template, status)

    # projects: create, read, list, memory, grants
    pid = call("POST", "/v1/projects", 201, {"name": "Docs", "icon": "📚"})["project"]["id"]
    memory = call("GET", "/v1/projects/{id}", 200, id=pid)["memory"]
    call("GET", "/v1/projects", 200)
    written = call("PUT", "/v1/projects/{id}/memory", 200, {"text": "# Notes\n", "version": memory["version"]}, id=pid)
    assert written["version"] == memory["version"] + 1
    assert call("PUT", "/v1/projects/{id}/grants", 200, {"workspace": True, "role": "viewer"},
                id=pid)["project"]["grants"] == [{"workspace": True, "role": "viewer"}]

    # workflows: import, read, list, configure a trigger, pin, connections
    wf = call("POST", "/v1/workflows", 201, workflow_body())
    call("GET", "/v1/workflows/{id}", 200, id=wf["id"])
    call("GET", "/v1/workflows", 200, query={"kind": "workflow"})
    call("PUT", "/v1/workflows/{id}/triggers/{nodeId}/config", 200, {"inputs": {"repo": "acme/app"}},
         id=wf["id"], nodeId="t1")
    call("POST", "/v1/projects/pin", 200, {"resourceId": wf["id"], "projectId": pid})
    call("GET", "/v1/projects/{id}/connections", 200, id=pid)

    # skills: create, list, publish a file, read files and versions, links, archive
    sk = call("POST", "/v1/skills", 201, {"name": "doc-check", "description": "Checks docs. Use in tests."})
    call("GET", "/v1/skills", 200)
    published = call("PUT", "/v1/skills/{id}/files", 200, {"path": "SKILL.md", "content": skill_md("doc-check"),
                                                             "baseVersion": 0}, id=sk["id"])
    assert published["number"] == 1 and published["skill"]["status"] == "published"
    call("GET", "/v1/skills/{id}/files", 200, id=sk["id"])
    call("GET", "/v1/skills/{id}/versions", 200, id=sk["id"])
    call("GET", "/v1/skills/{id}/file-url", 200, query={"path": "SKILL.md"}, id=sk["id"])
    call("POST", "/v1/skills/{id}/bundle-upload-url", 201, id=sk["id"])
    call("PATCH", "/v1/skills/{id}/enabled", 200, {"enabled": False}, id=sk["id"])
    call("DELETE", "/v1/skills/{id}", 200, id=sk["id"])
    call("GET", "/v1/skills/platform/{name}", 200, name="skill-authoring")

    gone = call("POST", "/v1/projects/{id}/delete", 200, id=pid)
    assert gone["returnedResources"] == 1



def test_every_operation_has_a_summary_that_says_what_it_does_and_a_declared_tag():
    from workspacectl.engine.openapi.routes import build_openapi

    spec = build_openapi()
    declared = [t["name"] for t in spec["tags"]]
    assert len(declared) == len(set(declared)) and all(t["description"] for t in spec["tags"])
    used, count = set(), 0
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            count += 1
            summary = op["summary"].strip()
            assert summary and summary != f"{method.upper()} {path}", (method, path)
            assert len(summary.split()) >= 3 and not summary.endswith((";", ",")), (method, path, summary)
            assert len(op["tags"]) == 1 and op["tags"][0] in declared, (method, path, op["tags"])
            assert op["tags"][0] != "meta" or path == "/v1/openapi.json", (method, path)
            used.add(op["tags"][0])
    assert count == len(ROUTE_SCOPES)
    assert used == set(declared), set(declared) - used  # no area declared without a route
