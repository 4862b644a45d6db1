"""Naming things in one request (issue 12): the list routes the CLI resolves names with take
`?name=` (regardless of case, by Unicode case folding), and workflows are named like the rest.
Every door."""
from __future__ import annotations

import re
import sqlite3
import sys

import pytest

from tests.project_helpers import make_workflow
from tests.vault_helpers import install_service, make_credential
from workspacectl.engine.store import MAX_FOLD_GROWTH, fetch_named, name_clause

SVC = 'service = "lookup"\nname = "Lookup"\ndescription = "d"\ncredentialType = "apiKey"\nenvVars = { apiKey = "LOOKUP_KEY" }\n'


def _names(body: dict, key: str) -> list:
    return sorted(r["name"] for r in body[key])


def test_list_routes_filter_by_name(backend):
    install_service(backend.workspace, SVC)
    for _ in range(3):
        make_credential(backend.workspace, backend.owner["id"], "lookup", {"apiKey": "k"})   # lookup, -2, -3
    for name in ("Ops", "ops", "Opsy", "Öps"):
        backend.ok("POST", "/v1/projects", {"name": name})
        make_workflow(backend, name=name)
    backend.add_member("ann@example.com", name="Ann")
    backend.add_member("ann2@example.com", name="ANN")
    backend.ok("POST", "/v1/keys", {"kind": "personal", "scopes": ["skills:manage"], "name": "ci"})
    backend.ok("POST", "/v1/keys", {"kind": "personal", "scopes": ["skills:manage"], "name": "CI-2"})

    assert _names(backend.ok("GET", "/v1/credentials", query={"name": "LOOKUP-2"}), "credentials") == ["lookup-2"]
    assert _names(backend.ok("GET", "/v1/projects", query={"name": "OPS"}), "projects") == ["Ops", "ops"]
    assert _names(backend.ok("GET", "/v1/projects", query={"name": "Öps"}), "projects") == ["Öps"]
    assert _names(backend.ok("GET", "/v1/workflows", query={"name": "ops"}), "workflows") == ["Ops", "ops"]
    assert _names(backend.ok("GET", "/v1/workflows", query={"name": "ops", "kind": "app"}), "workflows") == []
    assert _names(backend.ok("GET", "/v1/members", query={"name": "ann"}), "members") == ["ANN", "Ann"]
    assert _names(backend.ok("GET", "/v1/keys", query={"name": "ci"}), "keys") == ["ci"]
    assert _names(backend.ok("GET", "/v1/keys", query={"name": "ci-2"}), "keys") == ["CI-2"]
    assert _names(backend.ok("GET", "/v1/projects", query={"name": "öPS"}), "projects") == ["Öps"]
    # empty means no filter; too long is 400; a filter still pages
    assert len(backend.ok("GET", "/v1/projects", query={"name": ""})["projects"]) == 4
    r = backend.api("GET", "/v1/projects", query={"name": "x" * 201})
    assert r.status == 400 and "'name'" in r.body["error"]["message"]
    first = backend.ok("GET", "/v1/projects", query={"name": "ops", "limit": "1"})
    assert len(first["projects"]) == 1 and first["nextCursor"]
    second = backend.ok("GET", "/v1/projects", query={"name": "ops", "limit": "1", "cursor": first["nextCursor"]})
    assert len(second["projects"]) == 1 and second["projects"][0]["id"] != first["projects"][0]["id"]


def _lookups(err: str, path: str) -> list[str]:
    return re.findall(rf"^debug: GET \S*{re.escape(path)}\?(\S+) ->", err, re.M)


def test_the_cli_resolves_a_name_in_one_request(backend):
    pid = backend.ok("POST", "/v1/projects", {"name": "Ops Desk"})["project"]["id"]
    for i in range(3):
        backend.ok("POST", "/v1/projects", {"name": f"other-{i}"})
    r = backend.wsctl("specialist", "show", "ops desk", "--json", "--debug")
    assert r.json["project"]["id"] == pid
    queries = _lookups(r.err, "/v1/projects")
    assert len(queries) == 1 and re.search(r"name=ops(\+|%20)desk", queries[0]), r.err


def test_workflows_are_named_like_the_rest(backend):
    triage = make_workflow(backend, name="Triage")
    make_workflow(backend, name="dup")
    make_workflow(backend, name="dup", kind="app")
    assert backend.wsctl("workflow", "show", "triage", "--json").json["id"] == triage["id"]
    assert backend.wsctl("workflow", "show", triage["id"], "--json").json["id"] == triage["id"]
    r = backend.wsctl("workflow", "show", "dup", expect=7)
    lines = r.err.strip().splitlines()
    assert "2 workflows are named 'dup'" in lines[0] and len(lines) == 3
    assert all(line.strip().startswith("wf_") for line in lines[1:])
    assert "wsctl workflow list" in backend.wsctl("workflow", "show", "nope", expect=5).err
    r = backend.wsctl("workflow", "configure", "Triage", "t1", "--credential", "missing-cred", expect=5)
    assert "No credential named 'missing-cred'" in r.err


@pytest.mark.parametrize("path", ["/v1/credentials", "/v1/projects", "/v1/workflows", "/v1/members", "/v1/keys"])
def test_openapi_documents_the_name_filter(backend, path):
    doc = backend.ok("GET", "/v1/openapi.json", secret="")
    params = {p["name"] for p in doc["paths"][path]["get"].get("parameters", [])}
    assert "name" in params


def test_names_match_by_unicode_case_folding(backend):
    for name in ("Équipe", "Straße", "equipe"):
        backend.ok("POST", "/v1/projects", {"name": name})
        make_workflow(backend, name=name)
    backend.add_member("elo@example.com", name="Élodie")
    backend.ok("POST", "/v1/keys", {"kind": "personal", "scopes": ["skills:manage"], "name": "Clé-Ω"})
    for path, key in (("/v1/projects", "projects"), ("/v1/workflows", "workflows")):
        assert _names(backend.ok("GET", path, query={"name": "équipe"}), key) == ["Équipe"]
        assert _names(backend.ok("GET", path, query={"name": "ÉQUIPE"}), key) == ["Équipe"]
        assert _names(backend.ok("GET", path, query={"name": "STRASSE"}), key) == ["Straße"]
        assert _names(backend.ok("GET", path, query={"name": "strasse", "limit": "1"}), key) == ["Straße"]
    assert _names(backend.ok("GET", "/v1/members", query={"name": "ÉLODIE"}), "members") == ["Élodie"]
    assert _names(backend.ok("GET", "/v1/keys", query={"name": "clé-ω"}), "keys") == ["Clé-Ω"]

    pid = backend.ok("GET", "/v1/projects", query={"name": "Équipe"})["projects"][0]["id"]
    assert backend.wsctl("specialist", "show", "équipe", "--json").json["project"]["id"] == pid
    wid = backend.ok("GET", "/v1/workflows", query={"name": "Straße"})["workflows"][0]["id"]
    assert backend.wsctl("workflow", "show", "STRASSE", "--json").json["id"] == wid

    # two names folding to the same one are still ambiguous: exit 7 listing both ids
    other = backend.ok("POST", "/v1/projects", {"name": "ÉQUIPE"})["project"]["id"]
    r = backend.wsctl("specialist", "show", "équipe", expect=7)
    lines = r.err.strip().splitlines()
    assert "2 specialists are named 'équipe'" in lines[0] and len(lines) == 3, r.err
    assert sorted(line.split()[0] for line in lines[1:]) == sorted([pid, other])
    # an exact match still wins over the others
    assert backend.wsctl("specialist", "show", "ÉQUIPE", "--json").json["project"]["id"] == other


def test_casefold_grows_a_character_into_at_most_three():
    assert max(len(chr(c).casefold()) for c in range(sys.maxunicode + 1)) == MAX_FOLD_GROWTH


def test_the_name_scan_pages_through_batches_until_enough_match():
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    conn.execute("CREATE TABLE t (id TEXT PRIMARY KEY, name TEXT)")
    names = ["x", "Équipe", "y", "z", "ÉQUIPE", "w", "équipe", "ß", "equipe"]
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(f"t{i}", n) for i, n in enumerate(names)])
    named = ("équipe", "équipe")
    clause, args = name_clause("name", named)
    sql = f"SELECT * FROM t WHERE id > :after{clause} ORDER BY id LIMIT :limit"
    for batch in (1, 2, 3, 500):
        got = fetch_named(conn, sql, {"after": "", "limit": 2, **args}, named, batch=batch)
        assert [r["id"] for r in got] == ["t1", "t4"]
        got = fetch_named(conn, sql, {"after": "t1", "limit": 5, **args}, named, batch=batch)
        assert [r["id"] for r in got] == ["t4", "t6"]
    conn.close()
