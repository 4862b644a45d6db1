"""The agent door (issue 31): `wsctl mcp` driven by the MCP SDK's own client over stdio, on every
door (local workspace, server on SQLite, server on PostgreSQL), and `/mcp` over streamable HTTP on
both servers. Every tool is called; tokens leave audit rows with the agent's reason; refusals come
back as tool errors with the CLI's codes, messages and exit codes."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from tests.skill_helpers import create as create_skill
from tests.skill_helpers import skill_md
from tests.vault_helpers import (
    APIKEY_TOML,
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
    make_credential,
    member_with_session,
)

pytestmark = pytest.mark.usefixtures("canary_scan")

SECRET = "key-CANARY-mcp-7f3a"
READ_ONLY = {"catalog_search", "catalog_operation", "catalog_integrations", "vault_list_credentials", "skill_list",
             "skill_get", "skill_files", "skill_platform", "memory_read", "specialist_list", "specialist_get",
             "specialist_files", "trigger_list"}


def stdio_params(env: dict):
    from mcp.client.stdio import StdioServerParameters

    clean = {k: v for k, v in env.items() if v != ""}   # "" = unset (Backend.env_for)
    return StdioServerParameters(command=sys.executable, args=["-m", "workspacectl", "mcp"], env=clean)


def over_stdio(env: dict, script):
    """Run `script(session)` against `wsctl mcp` started with env; answers what it answers."""
    from mcp.client import ClientSession
    from mcp.client.stdio import stdio_client

    out: dict = {}

    async def main() -> None:
        with open(os.devnull, "w") as errlog:
            async with stdio_client(stdio_params(env), errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    out["value"] = await script(session)

    anyio.run(main)
    return out["value"]


def over_http(url: str, secret: str, script):
    import httpx2
    from mcp.client import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    out: dict = {}

    async def main() -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=60, trust_env=False) as hc:
            async with streamable_http_client(url, http_client=hc) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    out["value"] = await script(session)

    anyio.run(main)
    return out["value"]


def call(session, name: str, args: dict | None = None):
    return session.call_tool(name, args or {})


@pytest.fixture
def upstream():
    from tests.proxy_upstream import Upstream

    with Upstream() as up:
        yield up


@pytest.fixture
def setup(backend, upstream):
    """A credential (apiKey, secret holding the canary; its service a real loopback HTTP service
    that wants it as a Bearer token), a specialist, a published skill."""
    install_service(backend.workspace, APIKEY_TOML.format(base=upstream.url + "/api"))
    upstream.accept = lambda req: req.headers.get("authorization") == f"Bearer {SECRET}"
    cred = make_credential(backend.workspace, backend.owner["id"], "keysvc", {"apiKey": SECRET},
                           {"instanceUrl": upstream.url})
    backend.ok("PATCH", f"/v1/vault/credentials/{cred['id']}", {"name": "keys-main"})
    project = backend.ok("POST", "/v1/projects", {"name": "Support"})["project"]
    skill = create_skill(backend, "triage-notes")
    backend.ok("PUT", f"/v1/skills/{skill['id']}/files", {"path": "SKILL.md", "content": skill_md("triage-notes")})
    return {"cred": cred, "project": project, "skill": skill}


def test_every_tool_and_resource_as_the_owner(backend, setup):
    cred, project = setup["cred"], setup["project"]

    async def script(s):
        tools = (await s.list_tools()).tools
        results = {
            "search": await call(s, "catalog_search", {"query": "post a message to a slack channel", "limit": 3}),
            "operation": await call(s, "catalog_operation", {"opId": "slack.chat-post-message"}),
            "integrations": await call(s, "catalog_integrations"),
            "creds": await call(s, "vault_list_credentials", {"service": "keysvc"}),
            "token": await call(s, "vault_issue_token", {"credential": "keys-main", "reason": "agent: list invoices"}),
            "proxy": await call(s, "vault_proxy", {"credential": "keys-main", "method": "POST", "path": "/echo/items",
                                                   "reason": "agent: add an item", "query": {"dry": "1"},
                                                   "body": {"name": "widget"}}),
            "skills": await call(s, "skill_list"),
            "skill": await call(s, "skill_get", {"skill": "triage-notes"}),
            "skill_files": await call(s, "skill_files", {"skill": "triage-notes"}),
            "platform": await call(s, "skill_platform", {"name": "vault-tokens"}),
            "propose": await call(s, "memory_propose", {"ownerType": "organization", "text": "Deploys on Tuesdays.",
                                                        "section": "Process"}),
            "memory": await call(s, "memory_read", {"ownerType": "organization"}),
            "specialists": await call(s, "specialist_list"),
            "specialist": await call(s, "specialist_get", {"specialist": "Support"}),
            "files": await call(s, "specialist_files", {"specialist": project["id"]}),
            "triggers": await call(s, "trigger_list", {"query": "github"}),
            "unknown": await call(s, "no_such_tool"),
            "bad": await call(s, "catalog_search", {"query": "x", "limitt": 3}),
        }
        listed = (await s.list_resources()).resources
        templates = (await s.list_resource_templates()).resource_templates
        reads = {uri: (await s.read_resource(uri)).contents[0].text
                 for uri in ("wsctl://memory/organization", f"wsctl://skills/{setup['skill']['id']}/SKILL.md",
                             f"wsctl://specialists/{project['id']}/memory", "wsctl://specialists/Support/memory")}
        return tools, results, listed, templates, reads

    tools, r, listed, templates, reads = over_stdio(backend.env, script)
    by_name = {t.name: t for t in tools}
    assert set(by_name) == READ_ONLY | {"vault_issue_token", "vault_proxy", "memory_propose"}
    for name in READ_ONLY:
        assert by_name[name].annotations.read_only_hint is True, name
        assert by_name[name].input_schema["type"] == "object" and by_name[name].description
    token_tool = by_name["vault_issue_token"]
    assert token_tool.meta == {"wsctl/returnsSecret": True}
    assert token_tool.input_schema["required"] == ["credential", "reason"]
    assert by_name["vault_proxy"].annotations.destructive_hint is True
    assert by_name["memory_propose"].annotations.read_only_hint is False
    assert by_name["memory_propose"].annotations.destructive_hint is False

    for key, result in r.items():
        assert result.is_error is (key in ("unknown", "bad")), (key, result.content)
    assert r["search"].structured_content["operations"][0]["opId"] == "slack.chat-post-message"
    assert "chat.postMessage" in r["operation"].structured_content["markdown"]
    assert any(i["service"] == "slack" for i in r["integrations"].structured_content["integrations"])
    listed_creds = r["creds"].structured_content["credentials"]
    assert [c["id"] for c in listed_creds] == [cred["id"]]
    assert SECRET not in json.dumps(r["creds"].structured_content)
    assert r["token"].structured_content["apiKey"] == SECRET
    assert "refreshToken" not in r["token"].structured_content
    proxied = r["proxy"].structured_content
    assert proxied["status"] == 200 and proxied["headers"]["x-wsctl-upstream-status"] == "200"
    assert proxied["body"]["method"] == "POST" and proxied["body"]["path"] == "/api/echo/items"
    assert proxied["body"]["length"] == len(json.dumps({"name": "widget"}))
    assert SECRET not in json.dumps(proxied)
    assert [s["name"] for s in r["skills"].structured_content["skills"]] == ["triage-notes"]
    assert r["skill"].structured_content["id"] == setup["skill"]["id"]
    assert any(f["path"] == "SKILL.md" for f in r["skill_files"].structured_content["files"])
    assert r["platform"].structured_content["name"] == "vault-tokens"
    note = r["propose"].structured_content
    assert note["status"] == "pending"
    assert [n["id"] for n in r["memory"].structured_content["pendingNotes"]] == [note["id"]]
    assert [p["id"] for p in r["specialists"].structured_content["projects"]] == [project["id"]]
    assert r["specialist"].structured_content["project"]["id"] == project["id"]
    assert r["files"].structured_content["files"] == []
    assert all("github" in (t["service"] or "") + t["name"].lower() + t["description"].lower()
               for t in r["triggers"].structured_content["triggers"])
    assert r["triggers"].structured_content["triggers"]
    assert r["unknown"].structured_content["error"]["code"] == "not_found"
    assert r["unknown"].structured_content["exitCode"] == 5
    assert r["bad"].structured_content["error"]["code"] == "invalid_request"
    assert "limitt" in r["bad"].content[0].text and r["bad"].structured_content["exitCode"] == 7

    uris = {x.uri for x in listed}
    assert {"wsctl://memory/organization", "wsctl://memory/membership",
            f"wsctl://specialists/{project['id']}/memory", f"wsctl://skills/{setup['skill']['id']}/SKILL.md"} <= uris
    assert {t.uri_template for t in templates} >= {"wsctl://skills/{skill}/SKILL.md"}
    assert reads[f"wsctl://skills/{setup['skill']['id']}/SKILL.md"].startswith("---\nname: triage-notes")
    assert reads[f"wsctl://specialists/{project['id']}/memory"] == reads["wsctl://specialists/Support/memory"]

    log = backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"]
    assert [(e["reason"], e["outcome"], e["membershipId"]) for e in log] == [
        ("agent: add an item", "proxied", backend.owner["id"]),
        ("agent: list invoices", "issued", backend.owner["id"])]


def test_refusals_carry_the_cli_codes(backend, setup):
    cred = setup["cred"]
    backend.ok("PUT", f"/v1/credentials/{cred['id']}/sharing", {"workspace": True, "role": "viewer"})
    viewer, viewer_session = member_with_session(backend, "vic@example.com")
    docs_only = backend.key("platform", ["docs:read"])

    async def as_viewer(s):
        return (await call(s, "vault_issue_token", {"credential": cred["id"], "reason": "agent wants it"}),
                await call(s, "vault_list_credentials"),
                await call(s, "vault_issue_token", {"credential": cred["id"]}))

    async def as_docs_key(s):
        return (await call(s, "vault_list_credentials"),
                await call(s, "catalog_search", {"query": "send an email"}),
                await call(s, "memory_propose", {"ownerType": "organization", "text": "x"}))

    refused, seen, no_reason = over_stdio(backend.env_for(viewer_session), as_viewer)
    assert refused.is_error and refused.structured_content["error"]["code"] == "forbidden"
    assert refused.structured_content["exitCode"] == 4
    assert refused.content[0].text.startswith("error: ")
    assert SECRET not in json.dumps(refused.model_dump())
    assert [c["access"] for c in seen.structured_content["credentials"]] == ["viewer"]
    assert no_reason.is_error and "reason" in no_reason.content[0].text

    creds, search, propose = over_stdio(backend.env_for(docs_only), as_docs_key)
    assert creds.structured_content["error"]["code"] == "insufficient_scope" and creds.structured_content["exitCode"] == 4
    assert not search.is_error
    assert propose.structured_content["error"]["code"] == "insufficient_scope"

    log = backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"]
    assert [(e["outcome"], e["membershipId"], e["reason"]) for e in log] == [("refused", viewer["id"], "agent wants it")]


def test_a_key_limited_to_named_credentials_stays_limited(backend, setup):
    cred = setup["cred"]
    other = make_credential(backend.workspace, backend.owner["id"], "keysvc", {"apiKey": "other-CANARY-key"},
                            {"instanceUrl": "http://127.0.0.1:9"})
    limited = backend.ok("POST", "/v1/keys", {"kind": "platform", "scopes": ["vault:read", "vault:token"],
                                              "name": "agent", "credentials": [cred["id"]]})["secret"]

    async def script(s):
        return (await call(s, "vault_list_credentials"),
                await call(s, "vault_issue_token", {"credential": other["id"], "reason": "not mine"}),
                await call(s, "vault_proxy", {"credential": other["id"], "method": "GET", "path": "echo",
                                              "reason": "not mine"}),
                await call(s, "vault_issue_token", {"credential": cred["id"], "reason": "mine"}))

    listed, token, proxied, mine = over_stdio(backend.env_for(limited), script)
    assert [c["id"] for c in listed.structured_content["credentials"]] == [cred["id"]]
    for refused in (token, proxied):
        assert refused.is_error and refused.structured_content["error"]["code"] == "not_found"
        assert refused.structured_content["exitCode"] == 5
    assert mine.structured_content["apiKey"] == SECRET
    assert backend.ok("GET", f"/v1/credentials/{other['id']}/access-log")["entries"] == []


def test_streamable_http_behind_the_same_authentication(backend, setup):
    if backend.kind != "remote":
        pytest.skip("the HTTP endpoint is a server's (wsctl serve); the local door is served over stdio")
    import httpx

    url = f"{backend.base_url}/mcp"
    key = backend.key("platform", ["vault:read", "vault:token", "docs:read"])

    async def script(s):
        return (len((await s.list_tools()).tools),
                await call(s, "vault_issue_token", {"credential": "keys-main", "reason": "over http"}),
                await call(s, "memory_read", {"ownerType": "organization"}),
                await call(s, "vault_proxy", {"credential": "keys-main", "method": "GET", "path": "echo",
                                              "reason": "proxied over http"}))

    count, issued, memory, proxied = over_http(url, key, script)
    assert proxied.structured_content["status"] == 200 and proxied.structured_content["body"]["ok"] is True
    assert count == len(READ_ONLY) + 3
    assert issued.structured_content["apiKey"] == SECRET
    assert memory.structured_content["error"]["code"] == "insufficient_scope"   # a platform key: no memory scope
    log = backend.ok("GET", f"/v1/credentials/{setup['cred']['id']}/access-log")["entries"]
    assert [(e["reason"], e["keyId"].startswith("key_")) for e in log] == [("proxied over http", True),
                                                                           ("over http", True)]

    hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with httpx.Client(trust_env=False, timeout=60) as h:
        bare = h.post(url, json=hello)
        wrong = h.post(url, json=hello, headers={"Authorization": "Bearer ws_platform_nope"})
    assert (bare.status_code, bare.json()["error"]["code"]) == (401, "unauthenticated")
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "unauthenticated")
    key_id = backend.ok("GET", "/v1/keys")["keys"][0]["id"]
    backend.ok("DELETE", f"/v1/keys/{key_id}")
    with httpx.Client(trust_env=False, timeout=60) as h:
        revoked = h.post(url, json=hello, headers={"Authorization": f"Bearer {key}"})
    assert revoked.status_code == 401


def test_only_wsctl_mcp_loads_the_sdk(tmp_path: Path, home):
    from tests.conftest import base_env, run_wsctl

    env = base_env(home)
    probe = ("import sys, runpy; sys.argv = ['wsctl', 'catalog', 'integrations', '--json'];"
             "from workspacectl.cli.main import main\n"
             "try:\n main()\nexcept SystemExit:\n pass\n"
             "print('SDK', any(m == 'mcp' or m.startswith(('mcp.', 'mcp_types')) for m in sys.modules), file=sys.stderr)")
    import subprocess

    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert "SDK False" in done.stderr, done.stderr
    assert run_wsctl(["mcp", "--http"], env, expect=7).err.startswith("error: This profile uses a local workspace")
