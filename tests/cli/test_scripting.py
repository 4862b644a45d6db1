"""Scripting as with gh: --json FIELDS, --jq, --limit/--all on lists, `wsctl api` -f/-F/-H/-i/--paginate,
and one meaning per short flag. Through the real CLI on both backends."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from workspacectl.docgen.tree import load_tree

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def specialists(backend):
    return [backend.wsctl("specialist", "create", f"spec-{i}", "--json").json["project"] for i in range(5)]


def test_json_field_list_trims_each_entry_and_keeps_the_envelope(backend, specialists):
    full = backend.wsctl("specialist", "list", "--json").json
    for args in (["specialist", "list", "--json", "id,name"], ["specialist", "list", "--json=id,name"],
                 ["--json", "id,name", "specialist", "list"]):
        r = backend.wsctl(*args)
        assert r.json == {**full, "projects": [{"id": p["id"], "name": p["name"]} for p in full["projects"]]}
    # plain --json is unchanged, before or after the command
    assert backend.wsctl("--json", "specialist", "list").json == full
    # a word after --json that is not a field list stays the command's argument
    one = specialists[0]
    assert backend.wsctl("specialist", "show", "--json", one["id"]).json["project"]["id"] == one["id"]
    assert backend.wsctl("specialist", "show", "--json", "spec-1").json["project"]["name"] == "spec-1"
    # a name that reads like a field list is taken as one, then given back when the command lacks it
    backend.wsctl("specialist", "create", "ops")
    assert backend.wsctl("specialist", "show", "--json", "ops").json["project"]["name"] == "ops"
    # on one object: its top-level keys (dotted for nested ones)
    r = backend.wsctl("specialist", "show", one["id"], "--json", "project.id,project.name")
    assert r.json == {"project": {"id": one["id"], "name": one["name"]}}
    r = backend.wsctl("specialist", "list", "--json", "id,colour", expect=7)
    assert "Unknown JSON field colour" in r.err and "name" in r.err


def test_jq_filters_with_real_jq(backend, specialists):
    r = backend.wsctl("specialist", "list", "--jq", ".projects[].name")
    assert sorted(r.out.splitlines()) == [f"spec-{i}" for i in range(5)]  # strings raw, one per line
    r = backend.wsctl("--jq", "[.projects[] | select(.name | test(\"spec-[34]\")) | .name] | sort", "specialist", "list")
    assert json.loads(r.out) == ["spec-3", "spec-4"]
    r = backend.wsctl("specialist", "list", "--json", "name", "--jq", ".projects | map(keys[]) | unique")
    assert json.loads(r.out) == ["name"]
    r = backend.wsctl("specialist", "list", "--jq", ".projects[", expect=2)  # refused before any request
    assert r.err.startswith("error: --jq:") and len(r.err.splitlines()) == 1
    r = backend.wsctl("specialist", "list", "--jq", ".projects[0] | error(\"boom\")", expect=7)
    assert "boom" in r.err


def test_limit_and_all_on_lists(backend, specialists):
    full = backend.wsctl("specialist", "list", "--json").json["projects"]
    r = backend.wsctl("specialist", "list", "--limit", "2", "--json")
    assert r.json["projects"] == full[:2] and r.json["nextCursor"]
    # the cursor printed continues exactly after the entries shown
    rest = backend.wsctl("api", "GET", "/v1/projects", "-f", f"cursor={r.json['nextCursor']}").json["projects"]
    assert rest == full[2:]
    assert backend.wsctl("specialist", "list", "-L", "5", "--json").json == {"projects": full, "nextCursor": None}
    assert backend.wsctl("specialist", "list", "--all", "--json").json == {"projects": full, "nextCursor": None}
    assert len(backend.wsctl("specialist", "list", "-L", "3").out.splitlines()) == 3
    backend.wsctl("specialist", "list", "--limit", "0", expect=2)
    r = backend.wsctl("specialist", "list", "--limit", "2", "--all", expect=2)
    assert "not both" in r.err


def test_every_list_takes_limit_and_all():
    from workspacectl.cli.app import LISTS

    tree = {n.path: n for n in load_tree().walk()}
    lists = {path for path, n in tree.items() if path and path[-1] in ("list", "versions", "history", "integrations",
                                                                        "operations", "connections", "files", "log")
             and not n.is_group}
    assert lists <= LISTS | {("skill", "files")}, "a list command without --limit/--all"
    for path in LISTS:
        names = {name for o in tree[path].options for name in o.names}
        assert {"--limit", "-L", "--all"} <= names, path
    for node in tree.values():
        names = {name for o in node.options for name in o.names}
        if "--json" in names:
            assert "--jq" in names, node.name


def test_api_fields_headers_include_and_paginate(backend, specialists, tmp_path):
    # -f on GET: query fields
    r = backend.wsctl("api", "GET", "/projects", "-f", "limit=2")
    assert len(r.json["projects"]) == 2 and r.json["nextCursor"]
    # --paginate: every page in one body
    r = backend.wsctl("api", "GET", "/projects", "-f", "limit=2", "--paginate")
    assert [p["id"] for p in r.json["projects"]] == [p["id"] for p in backend.ok("GET", "/v1/projects")["projects"]]
    assert r.json["nextCursor"] is None
    # -f / -F on POST: a JSON body, typed values and @file
    (tmp_path / "desc.txt").write_text("from a file")
    r = backend.wsctl("api", "POST", "/projects", "-f", "name=made-by-api", "-F", "description=@" +
                      str(tmp_path / "desc.txt"), "-F", "icon=null")
    made = r.json["project"]
    assert (made["name"], made["description"]) == ("made-by-api", "from a file")
    assert made["icon"] == "🤖"  # -F null is JSON null (the default icon; the text "null" is no emoji: 400)
    r = backend.wsctl("api", "PATCH", f"/projects/{made['id']}", "-F", "name=123", expect=7)
    assert "name" in r.err  # a number stays a number, which the route refuses for a name
    # -i: status line and headers, then the body
    r = backend.wsctl("api", "GET", f"/projects/{made['id']}", "-i")
    head, _, body = r.out.partition("\n\n")
    assert head.splitlines()[0] == "HTTP/1.1 200 OK"
    assert re.search(r"^Content-Type: application/json", head, re.M | re.I)
    assert json.loads(body)["project"]["id"] == made["id"]
    r = backend.wsctl("api", "GET", "/projects/proj_nope", "-i", expect=5)
    assert r.out.startswith("HTTP/1.1 404 Not Found\n") and '"not_found"' in r.out
    # -H: a header is sent (and a key is never taken on the command line)
    backend.wsctl("api", "GET", "/projects", "-H", "X-Trace: abc", "--jq", ".projects | length")
    r = backend.wsctl("api", "GET", "/projects", "-H", "Authorization: Bearer x", expect=2)
    assert "shell history" in r.err
    backend.wsctl("api", "GET", "/projects", "-H", "no-colon", expect=2)
    backend.wsctl("api", "POST", "/projects", "--data", "{}", "-f", "name=x", expect=2)
    backend.wsctl("api", "POST", "/projects", "--paginate", expect=2)
    backend.wsctl("api", "FETCH", "/projects", expect=2)  # METHOD is a choice
    assert backend.wsctl("api", "get", "/projects", "--jq", ".projects | length").out.strip() == "6"  # 5 + made


# ------------------------------------------------------------------ short flags

def _short_flags() -> dict[str, set[str]]:
    meaning: dict[str, set[str]] = {}
    for node in load_tree().walk():
        for o in node.options:
            longs = [n for n in o.names if n.startswith("--")]
            for n in o.names:
                if not n.startswith("--"):
                    meaning.setdefault(n, set()).update(longs)
    return meaning


# The one short flag with two meanings, each as the tool it copies has it: `gh api -i` and `op inject -i`.
TWO_MEANINGS = {"-i": {"--include", "--in-file"}}


def test_a_short_flag_means_the_same_in_every_command_and_the_table_says_so():
    meaning = _short_flags()
    for flag, longs in meaning.items():
        assert len(longs) == 1 or longs == TWO_MEANINGS.get(flag), f"{flag} means {sorted(longs)}"
    table = (ROOT / "docs" / "cli.md").read_text()
    for flag, longs in meaning.items():
        for long in longs:
            assert re.search(rf"^\| `{flag}` \| `{long}` \|", table, re.M), f"docs/cli.md lacks {flag} {long}"
