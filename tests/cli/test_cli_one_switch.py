"""One --json switch across every group, names where ids are asked for, and the dependencies we
lean on (issue 9, items 6 and 7). Through the real CLI on both backends."""
from __future__ import annotations

import inspect
import json
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from tests.project_helpers import make_project, make_workflow, member_key, pin
from tests.vault_helpers import TWO_SECRET_TOML, install_service, make_credential

ROOT = Path(__file__).resolve().parents[2]


# --- one --json switch (item 6) ---------------------------------------------------------------

def test_top_level_and_command_json_flags_mean_the_same(backend):
    install_service(backend.workspace, TWO_SECRET_TOML)
    c = make_credential(backend.workspace, backend.owner["id"], "twosecret", {"accountSid": "AC1", "authToken": "t1"})
    pid = make_project(backend, "Ops")
    commands = [
        ["members", "list"], ["vault", "show", c["id"]], ["catalog", "integration", "twosecret"],
        ["skill", "list"], ["trigger", "list", "-q", "github"], ["memory", "show", "org"], ["auth", "whoami"],
        ["specialist", "show", pid],
        # these printed their own format whatever the top-level flag said
        ["vault", "token", c["id"], "--reason", "r", "--format", "env"],
        ["vault", "env", c["id"], "--reason", "r", "--format", "dotenv"],
    ]
    for args in commands:
        top = backend.wsctl("--json", *args)
        own = backend.wsctl(*args, "--json")
        assert top.out == own.out and top.json == own.json is not None, args
    for args in commands[-3:]:
        with pytest.raises(ValueError):  # without either flag, human output
            json.loads(backend.wsctl(*args).out)
    assert backend.wsctl("--json", "vault", "env", c["id"], "--reason", "r").json == \
        {"TWO_ACCOUNT_SID": "AC1", "TWO_AUTH_TOKEN": "t1"}
    # --format value cannot carry two secrets, but --json (either place) asks for the body instead.
    backend.wsctl("vault", "token", c["id"], "--reason", "r", "--format", "value", expect=7)
    for args in (["--json", "vault", "token", c["id"], "--reason", "r", "--format", "value"],
                 ["vault", "token", c["id"], "--reason", "r", "--format", "value", "--json"]):
        assert backend.wsctl(*args).json == {"accountSid": "AC1", "authToken": "t1"}


# --- vault log names the key as --json does (item 7) ------------------------------------------

def test_vault_log_names_each_key_as_its_json_does(backend):
    install_service(backend.workspace, TWO_SECRET_TOML)
    c = make_credential(backend.workspace, backend.owner["id"], "twosecret", {"accountSid": "AC1", "authToken": "t1"})
    key = backend.key("platform", ["vault:read", "vault:token"])
    backend.wsctl("vault", "token", c["id"], "--reason", "as me")
    backend.wsctl("vault", "token", c["id"], "--reason", "as a key", env={**backend.env_for(key), "WSCTL_TOKEN": ""})
    backend.wsctl("vault", "token", c["id"], "--reason", "as a session", env=backend.env_for(backend.session()))
    entries = backend.wsctl("vault", "log", c["id"], "--json").json["entries"]
    plain = [line.split("\t") for line in backend.wsctl("vault", "log", c["id"]).out.splitlines()]
    assert [row[2] for row in plain] == [e["keyId"] for e in entries]
    assert entries[1]["keyId"].startswith("key_") and entries[0]["keyId"].startswith("ses_")


# --- pin by name (item 7) ---------------------------------------------------------------------

def test_pin_takes_a_skill_or_workflow_name_and_lists_the_candidates_of_an_ambiguous_one(backend):
    pid = make_project(backend, "Ops")
    sid = backend.wsctl("skill", "create", "tone-guide", "-d", "How we write to customers.", "--json").json["id"]
    r = backend.wsctl("specialist", "pin", "tone-guide", "--into", "Ops", "--json").json
    assert (r["resource"]["id"], r["resource"]["type"], r["projectId"]) == (sid, "skill", pid)
    assert backend.ok("GET", f"/v1/skills/{sid}")["projectId"] == pid
    wf = make_workflow(backend, name="tone-guide")
    r = backend.wsctl("specialist", "pin", "tone-guide", "--unpin", expect=7)
    assert f"{sid} (skill)" in r.err and f"{wf['id']} (workflow)" in r.err and len(r.err.strip().splitlines()) == 1
    assert backend.ok("GET", f"/v1/skills/{sid}")["projectId"] == pid, "nothing moved"
    body = pin(backend, "tone-guide", None).body
    assert body["error"]["code"] == "invalid_request" and sid in body["error"]["message"]
    backend.wsctl("specialist", "pin", sid, "--unpin")
    backend.wsctl("specialist", "pin", "no-such-thing", "--into", pid, expect=5)
    # A name counts only what the caller can see: the owner's two unpinned "Triage" workflows
    # neither make a member's own "Triage" ambiguous nor show up in its error.
    hidden = [make_workflow(backend, name="Triage")["id"] for _ in range(2)]
    r = backend.wsctl("specialist", "pin", "Triage", "--into", pid, expect=7)
    assert all(h in r.err for h in hidden)
    _member, key = member_key(backend, "mo@example.com")
    mine = make_project(backend, "Mo's", secret=key)
    own = make_workflow(backend, secret=key, name="Triage")
    moved = pin(backend, "Triage", mine, secret=key)
    assert moved.status == 200 and moved.body["resource"]["id"] == own["id"]
    assert pin(backend, "Triage", None, secret=member_key(backend, "cy@example.com")[1]).status == 404


# --- dependencies (item 7) --------------------------------------------------------------------

def _declared() -> set[str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].lower().replace("_", "-") for d in deps}


def test_every_package_the_source_imports_is_declared():
    """h11 was imported directly but arrived only through uvicorn."""
    roots = set()
    for f in (ROOT / "src" / "workspacectl").rglob("*.py"):
        for m in re.finditer(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", f.read_text(encoding="utf-8"), re.M):
            roots.add(m.group(1))
    dists = metadata.packages_distributions()
    third_party = {d.lower().replace("_", "-") for r in roots if r != "workspacectl" for d in dists.get(r, [])}
    assert "h11" in third_party
    assert third_party - _declared() == set()


def test_the_private_uvicorn_hook_we_override_is_there_in_the_declared_range():
    from packaging.requirements import Requirement
    from uvicorn.protocols.http.h11_impl import H11Protocol

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    uvicorn = next(Requirement(d) for d in deps if d.startswith("uvicorn"))
    assert uvicorn.specifier and any(s.operator == "<" for s in uvicorn.specifier), "an upper bound"
    assert metadata.version("uvicorn") in uvicorn.specifier
    assert list(inspect.signature(H11Protocol.send_400_response).parameters) == ["self", "msg"]
