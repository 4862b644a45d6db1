"""The integration catalog routes, their scope rules, `wsctl catalog`, and the built-in catalog."""
from __future__ import annotations

import base64
import json
import os
import pty
import re
import textwrap
from pathlib import Path

import pytest

from tests.conftest import WSCTL, base_env, workspace_at_rest, workspace_db

PLATFORM = ["vault:read", "vault:token", "vault:connect", "vault:manage", "docs:read"]
PERSONAL = ["projects:manage", "memory:manage", "skills:manage", "triggers:manage"]

ACME = textwrap.dedent("""
    service = "acme"
    name = "Acme CRM"
    description = "Contacts and deals."
    credentialType = "apiKey"
    envVars = { apiKey = "ACME_API_KEY", instanceUrl = "ACME_URL" }
    fields = ["instanceUrl"]
    [[operations]]
    name = "list-contacts"
    summary = "List contacts"
    method = "GET"
    path = "/v2/contacts"
    params = [ { name = "limit", in = "query", type = "integer", description = "Page size" } ]
    response = { contacts = [{ id = "string", email = "string" }], next = "string" }
    example = { limit = 10 }
    [[operations]]
    name = "createContact"
    summary = "Create a contact"
    method = "POST"
    path = "/v2/contacts"
    params = [ { name = "email", in = "body", type = "string", required = true, description = "Email address" },
               { name = "name", in = "body", type = "string", description = "Full name" } ]
    example = { email = "ada@example.com" }
    [[operations]]
    name = "get-contact"
    summary = "Get one contact"
    method = "GET"
    path = "/v2/contacts/{id}"
    params = [ { name = "id", type = "string", description = "Contact id" } ]
    [[triggers]]
    type = "poll"
    event = "new-contact"
    name = "New contact"
    description = "Fires when a contact appears"
    cadenceSeconds = 300
""")

CATALOG_GETS = ["/v1/integrations", "/v1/integrations/acme", "/v1/integrations/acme/operations",
                "/v1/integrations/acme/operations/acme.list-contacts", "/v1/operations/acme.list-contacts"]


def import_text(backend, text: str, name: str = "acme.toml", *args, expect: int = 0):
    f = backend.workspace.parent / name
    f.write_text(text)
    return backend.wsctl("catalog", "import", str(f), *args, expect=expect)


@pytest.fixture
def acme(backend):
    import_text(backend, ACME)
    return backend


def test_list_and_detail(acme):
    body = acme.ok("GET", "/v1/integrations", query={"limit": "500"})
    assert body["nextCursor"] is None
    by = {i["service"]: i for i in body["integrations"]}
    assert by["acme"] == {"service": "acme", "name": "Acme CRM", "description": "Contacts and deals.",
                          "credentialType": "apiKey", "envVars": {"apiKey": "ACME_API_KEY", "instanceUrl": "ACME_URL"},
                          "operationCount": 3}
    detail = acme.ok("GET", "/v1/integrations/acme")
    assert detail["secretFields"] == ["apiKey"] and detail["fields"] == ["instanceUrl"]
    assert detail["source"] == "import"
    assert "authorizeUrl" not in detail


def test_oauth2_detail_has_setup_metadata(backend):
    oauth = [i for i in backend.ok("GET", "/v1/integrations", query={"limit": "500"})["integrations"]
             if i["credentialType"] == "oauth2"]
    assert oauth, "the built-in catalog has oauth2 services"
    detail = backend.ok("GET", f"/v1/integrations/{oauth[0]['service']}")
    assert detail["authorizeUrl"].startswith("http") and detail["tokenUrl"].startswith("http")
    assert isinstance(detail["scopes"], list)
    assert detail["oauthClientConfigured"] is False


def test_integrations_paginate(acme):
    full = acme.ok("GET", "/v1/integrations", query={"limit": "500"})["integrations"]
    seen, cursor = [], None
    while True:
        q = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        body = acme.ok("GET", "/v1/integrations", query=q)
        assert len(body["integrations"]) <= 2
        seen += [i["service"] for i in body["integrations"]]
        cursor = body["nextCursor"]
        if not cursor:
            break
    assert seen == [i["service"] for i in full]
    assert acme.api("GET", "/v1/integrations", query={"cursor": "%%%"}).status == 400
    assert acme.api("GET", "/v1/integrations", query={"limit": "501"}).status == 400


def _cursor(value) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def test_odd_queries_and_names_are_4xx_never_500(acme):
    """Forged cursors (a 2**70 position, a lone surrogate), odd limits and odd names."""
    ops = "/v1/integrations/acme/operations"
    for path, query in ((ops, {"cursor": _cursor(2 ** 70)}), (ops, {"cursor": _cursor(-2 ** 70)}),
                        (ops, {"cursor": _cursor("\ud800")}), (ops, {"cursor": _cursor(1.5)}),
                        ("/v1/integrations", {"cursor": _cursor("\ud800")}),
                        ("/v1/integrations", {"cursor": _cursor(["acme"])}),
                        *(("/v1/integrations", {"limit": v}) for v in ("0", "-1", "1e3", "9" * 30, "9" * 5000)),
                        ("/v1/operations", {"q": "contact", "limit": "9" * 30})):
        r = acme.api("GET", path, query=query)
        assert (r.status, r.code) == (400, "invalid_request"), (path, query, r.body)
    for name in ("%C3%BCber", "%ED%A0%80", "%00", "%F0%9F%92%A5", "x" * 3000):
        for path in (f"/v1/integrations/{name}", f"/v1/integrations/{name}/operations",
                     f"/v1/operations/{name}", f"/v1/integrations/acme/operations/{name}"):
            r = acme.api("GET", path)
            assert (r.status, r.code) == (404, "not_found"), (path, r.body)
    assert acme.api("GET", ops, query={"limit": "500"}).body["nextCursor"] is None


def test_operations_and_reference(acme):
    ops = acme.ok("GET", "/v1/integrations/acme/operations")
    assert [o["opId"] for o in ops["operations"]] == ["acme.list-contacts", "acme.create-contact", "acme.get-contact"]
    assert ops["operations"][1] == {"opId": "acme.create-contact", "service": "acme", "name": "create-contact",
                                    "summary": "Create a contact", "method": "POST", "path": "/v2/contacts"}
    page1 = acme.ok("GET", "/v1/integrations/acme/operations", query={"limit": "2"})
    page2 = acme.ok("GET", "/v1/integrations/acme/operations", query={"limit": "2", "cursor": page1["nextCursor"]})
    assert [o["name"] for o in page1["operations"] + page2["operations"]] == ["list-contacts", "create-contact", "get-contact"]
    assert page2["nextCursor"] is None

    op = acme.ok("GET", "/v1/operations/acme.create-contact")
    assert op == acme.ok("GET", "/v1/integrations/acme/operations/acme.create-contact")
    assert op == acme.ok("GET", "/v1/integrations/acme/operations/create-contact")
    md = op["markdown"]
    assert "`POST /v2/contacts`" in md
    assert "| email | body | string | yes | Email address |" in md
    assert "| name | body | string | no | Full name |" in md
    assert "curl -X POST \"$ACME_URL/v2/contacts\"" in md and "$ACME_API_KEY" in md
    assert '"ada@example.com"' in md
    assert "`ACME_API_KEY`" in md and "`ACME_URL`" in md
    listing = acme.ok("GET", "/v1/operations/acme.list-contacts")
    assert listing["response"] == {"contacts": [{"id": "string", "email": "string"}], "next": "string"}
    assert '"next": "string"' in listing["markdown"] and "limit=10" in listing["markdown"]
    path_param = acme.ok("GET", "/v1/operations/acme.get-contact")["params"][0]
    assert path_param == {"name": "id", "in": "path", "type": "string", "required": True, "description": "Contact id"}


def test_unknown_names_are_404_naming_the_list_command(acme):
    r = acme.api("GET", "/v1/integrations/nope")
    assert r.status == 404 and r.code == "not_found" and "wsctl catalog integrations" in r.body["error"]["message"]
    r = acme.api("GET", "/v1/integrations/acme/operations/nope")
    assert r.status == 404 and "wsctl catalog operations acme" in r.body["error"]["message"]
    assert acme.api("GET", "/v1/integrations/nope/operations").status == 404
    assert acme.api("GET", "/v1/operations/acme.nope").status == 404
    # an operation of another service is not found under this one
    other = next(i["service"] for i in acme.ok("GET", "/v1/integrations")["integrations"] if i["service"] != "acme")
    assert acme.api("GET", f"/v1/integrations/{other}/operations/acme.list-contacts").status == 404
    r = acme.wsctl("catalog", "operation", "acme.nope", expect=5)
    assert r.err.startswith("error: ") and "wsctl catalog search" in r.err


def test_scope_rules_on_every_catalog_route(acme):
    docs = acme.key("platform", ["docs:read"])
    vault_only = acme.key("platform", ["vault:read"])
    personal = acme.key("personal", PERSONAL)
    for path in CATALOG_GETS:
        assert acme.api("GET", path, secret=docs).status == 200, path
        r = acme.api("GET", path, secret=vault_only)
        assert (r.status, r.code) == (403, "insufficient_scope"), path
        r = acme.api("GET", path, secret=personal)
        assert (r.status, r.code, r.body["error"]["message"]) == (403, "insufficient_scope", "Insufficient scope"), path
        assert acme.api("GET", path, secret="").status == 401, path
        assert acme.api("GET", path, secret="ws_platform_" + "x" * 40).status == 401, path
    # read-only: no writes on the catalog routers (nor on the trigger providers)
    for path in [*CATALOG_GETS, "/v1/operations", "/v1/triggers", "/v1/triggers/webhook"]:
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            r = acme.api(method, path, body={})
            assert (r.status, r.code, r.headers.get("allow")) == (405, "method_not_allowed", "GET"), (method, path, r.body)
    # /v1/openapi.json (public) describes the routers, scopes and query parameters ...
    spec = acme.ok("GET", "/v1/openapi.json", secret="")
    for path in ["/v1/integrations", "/v1/integrations/{service}", "/v1/integrations/{service}/operations",
                 "/v1/integrations/{service}/operations/{opId}", "/v1/operations", "/v1/operations/{opId}"]:
        assert set(spec["paths"][path]) == {"get"} and spec["paths"][path]["get"]["x-wsctl-scope"] == "docs:read"
    assert spec["paths"]["/v1/triggers"]["get"]["x-wsctl-scope"] == "triggers:manage"
    search = {p["name"]: p for p in spec["paths"]["/v1/operations"]["get"]["parameters"]}
    assert search["q"]["required"] is True and search["q"]["in"] == "query" and {"service", "limit"} <= set(search)
    # ... and our own importer reads it (an OpenAPI 3.1 document like any other)
    r = acme.api("POST", "/v1/admin/catalog", {"content": json.dumps(spec), "filename": "openapi.json",
                                               "service": "wsctl-api"})
    assert r.status == 201 and r.body["operationCount"] == sum(len(v) for v in spec["paths"].values())
    md = acme.ok("GET", "/v1/operations/wsctl-api.get-v1-operations")["markdown"]
    assert "`GET /v1/operations`" in md and "| q | query | string | yes |" in md


def test_admin_routes_need_an_owner_or_admin_session(acme):
    member = acme.add_member("mo@example.com", "Mo", "member")
    admin = acme.add_member("ada@example.com", "Ada", "admin")
    body = {"format": "toml", "content": ACME.replace('"Acme CRM"', '"Acme 2"')}
    r = acme.api("POST", "/v1/admin/catalog", body, secret=acme.session(member["id"]))
    assert (r.status, r.code) == (403, "forbidden")
    guest = acme.session(acme.add_member("gus@example.com", "Gus", "guest")["id"])
    keys = (acme.key("platform", PLATFORM), acme.key("personal", PERSONAL))
    for secret in (guest, *keys):
        r = acme.api("POST", "/v1/admin/catalog", body, secret=secret)
        assert (r.status, r.code) == ((403, "forbidden") if secret == guest else (403, "insufficient_scope"))
    for secret in (acme.session(member["id"]), *keys):
        assert acme.api("DELETE", "/v1/admin/catalog/acme", secret=secret).status == 403
        r = acme.api("PUT", "/v1/admin/catalog/acme/oauth-client", {"clientId": "a", "clientSecret": "b"},
                     secret=secret)
        assert r.status == 403
    assert acme.ok("GET", "/v1/integrations/acme")["name"] == "Acme CRM"
    r = acme.api("POST", "/v1/admin/catalog", body, secret=acme.session(admin["id"]))
    assert r.status == 200 and r.body["created"] is False and r.body["integration"]["name"] == "Acme 2"


def test_delete_service(acme):
    """A service in use by credentials or pending connections is refused (409, nothing removed); a
    re-import that replaces it keeps them working; once unused it goes with its operations and triggers."""
    from tests.connect_helpers import Door
    from tests.vault_helpers import make_credential

    cred = make_credential(acme.workspace, acme.owner["id"], "acme", {"apiKey": "sk-acme-1"},
                           {"instanceUrl": "https://acme.example"})
    r = acme.api("DELETE", "/v1/admin/catalog/acme")
    assert (r.status, r.code) == (409, "conflict"), r.body
    assert r.body["error"]["detail"] == {"credentials": 1, "pendingConnections": 0}
    assert "1 credential;" in r.body["error"]["message"] and "wsctl vault delete" in r.body["error"]["message"]
    assert acme.ok("GET", "/v1/integrations/acme")["operationCount"] == 3
    assert "acme-new-contact" in {t["triggerId"] for t in acme.ok("GET", "/v1/triggers", query={"q": "new contact"})[
        "triggers"]}
    assert acme.ok("GET", "/v1/operations", query={"q": "list contacts", "service": "acme"})["operations"]
    # a re-import replaces the service in place: the credential keeps its env vars and its token
    renamed = {"format": "toml", "content": ACME.replace('"Acme CRM"', '"Acme 2"')}
    assert acme.ok("POST", "/v1/admin/catalog", renamed)["created"] is False
    listed = acme.ok("GET", "/v1/credentials")["credentials"]
    assert [c["envVars"] for c in listed] == [{"apiKey": "ACME_API_KEY", "instanceUrl": "ACME_URL"}]
    assert acme.ok("POST", f"/v1/credentials/{cred['id']}/token", {"reason": "t"})["apiKey"] == "sk-acme-1"
    # ... but not one that changes its credential type under the credential
    retyped = ACME.replace('credentialType = "apiKey"', 'credentialType = "noAuth"')
    r = acme.api("POST", "/v1/admin/catalog", {"format": "toml", "content": retyped})
    assert (r.status, r.code) == (409, "conflict") and "wsctl vault delete" in r.body["error"]["message"], r.body
    assert acme.ok("GET", "/v1/integrations/acme")["credentialType"] == "apiKey"
    assert acme.api("DELETE", f"/v1/vault/credentials/{cred['id']}").status == 204
    # a pending connection holds it too, until it lapses
    pending = Door(acme, acme.base_url or "http://127.0.0.1:9").connect("acme")
    r = acme.api("DELETE", "/v1/admin/catalog/acme")
    assert (r.status, r.body["error"]["detail"]) == (409, {"credentials": 0, "pendingConnections": 1}), r.body
    assert "1 pending connection;" in r.body["error"]["message"]
    con = workspace_db(acme.workspace)   # an hour passes
    con.execute("UPDATE connections SET expires_at = '2000-01-01T00:00:00Z' WHERE id = ?", (pending["id"],))
    con.close()
    assert acme.api("DELETE", "/v1/admin/catalog/acme").status == 204
    assert acme.api("GET", "/v1/integrations/acme").status == 404
    assert acme.api("GET", "/v1/operations/acme.list-contacts").status == 404
    triggers = acme.ok("GET", "/v1/triggers", query={"limit": "500"})["triggers"]
    assert "acme-new-contact" not in {t["triggerId"] for t in triggers}
    assert acme.api("DELETE", "/v1/admin/catalog/acme").status == 404


def test_oauth_client_secret_is_sealed(backend):
    service = next(i["service"] for i in backend.ok("GET", "/v1/integrations", query={"limit": "500"})["integrations"]
                   if i["credentialType"] == "oauth2")
    secret = "client-SECRET-oauth-xyz123"
    r = backend.api("PUT", f"/v1/admin/catalog/{service}/oauth-client", {"clientId": "cid-1", "clientSecret": secret})
    assert r.status == 200 and r.body["oauthClientConfigured"] is True
    assert secret not in str(r.body)
    for place, data in workspace_at_rest(backend.workspace).items():
        assert b"client-SECRET" not in data, place
    from workspacectl.engine.catalog.services import get_oauth_client
    from workspacectl.engine.workspaces import open_workspace

    ws = open_workspace(str(backend.workspace))
    client_id, client_secret = get_oauth_client(ws, service)
    ws.conn().close()
    assert client_id == "cid-1" and client_secret.reveal() == secret and "SECRET" not in repr(client_secret)
    # no catalog answer carries the client secret, on a docs:read key or a session
    docs = backend.key("platform", ["docs:read"])
    first_op = backend.ok("GET", f"/v1/integrations/{service}/operations")["operations"][0]["opId"]
    answers = [backend.ok("GET", path, secret=key, query=query) for key in (None, docs) for path, query in (
        ("/v1/integrations", {"limit": "500"}), (f"/v1/integrations/{service}", None),
        (f"/v1/integrations/{service}/operations", {"limit": "500"}), (f"/v1/operations/{first_op}", None),
        (f"/v1/integrations/{service}/operations/{first_op}", None),
        ("/v1/operations", {"q": f"{service} list", "limit": "500"}))]
    answers.append(backend.wsctl("catalog", "integration", service, "--json").json)
    for body in answers:
        text = json.dumps(body)
        assert secret not in text and "client-SECRET" not in text and "clientSecret" not in text
    r = backend.api("PUT", "/v1/admin/catalog/nope/oauth-client", {"clientId": "a", "clientSecret": "b"})
    assert r.status == 404
    r = backend.api("PUT", f"/v1/admin/catalog/{service}/oauth-client", {"clientId": "a"})
    assert r.status == 400


def test_cli_catalog_commands(acme):
    listed = acme.wsctl("catalog", "integrations", "--json").json
    assert listed == {**acme.ok("GET", "/v1/integrations", query={"limit": "500"}), "nextCursor": None}
    plain = acme.wsctl("catalog", "integrations").out.splitlines()
    assert any(line.split("\t")[:3] == ["acme", "Acme CRM", "apiKey"] for line in plain)
    assert acme.wsctl("catalog", "integration", "acme", "--json").json == acme.ok("GET", "/v1/integrations/acme")
    assert "ACME_API_KEY" in acme.wsctl("catalog", "integration", "acme").out
    ops = acme.wsctl("catalog", "operations", "acme").out.splitlines()
    assert ops[0].split("\t") == ["acme.list-contacts", "GET", "/v2/contacts", "List contacts"]
    md = acme.wsctl("catalog", "operation", "acme.create-contact").out
    assert md == acme.ok("GET", "/v1/operations/acme.create-contact")["markdown"]
    assert acme.wsctl("catalog", "operation", "acme.create-contact", "--json").json == \
        acme.ok("GET", "/v1/operations/acme.create-contact")
    r = acme.wsctl("catalog", "integration", "nope", expect=5)
    assert "wsctl catalog integrations" in r.err
    r = acme.wsctl("catalog", "operations", "nope", expect=5)
    assert r.err.count("\n") == 1 and "wsctl catalog integrations" in r.err
    # an argument that is not UTF-8 (a stray byte) is bad input, not a crash
    r = acme.wsctl("catalog", "integration", os.fsdecode(b"acme\xff"), expect=7)
    assert r.err == "error: SERVICE is not valid UTF-8 text; check it for stray bytes.\n"


def test_operation_reference_renders_with_rich_on_a_terminal(workspace, home):
    """On a TTY `wsctl catalog operation` renders the markdown (headings, a table, no fences)."""
    env = {**base_env(home), "WSCTL_WORKSPACE": str(workspace), "COLUMNS": "120"}
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(WSCTL[0], [*WSCTL, "catalog", "operation", "twilio.send-message"], env)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:     # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, out
    text = out.decode(errors="replace")
    assert "POST /Accounts/{AccountSid}/Messages.json" in text and "TWILIO_AUTH_TOKEN" in text
    assert "Parameters" in text and "## Parameters" not in text and "```" not in text and "|---|" not in text
    assert re.search(r"AccountSid\s+path\s+string\s+yes", text), text


def test_builtin_catalog_is_loaded_in_new_workspaces(backend):
    from workspacectl.engine.catalog.builtins import default_data_dir, load_builtin_records

    records, generic = load_builtin_records(default_data_dir())
    body = backend.ok("GET", "/v1/integrations", query={"limit": "500"})
    listed = {i["service"]: i for i in body["integrations"]}
    for rec in records:
        assert listed[rec["service"]]["operationCount"] == len(rec["operations"])
        assert backend.ok("GET", f"/v1/integrations/{rec['service']}")["source"] == "builtin"
    ids = {t["triggerId"] for t in backend.ok("GET", "/v1/triggers", query={"limit": "500"})["triggers"]}
    assert {t["id"] for t in generic} <= ids


def test_shipped_catalog_data_is_complete():
    """The package's data files load strictly: >=15 services, every credential type, >=5 ops each,
    and the generic webhook and cron providers."""
    from workspacectl.engine.catalog.builtins import default_data_dir, load_builtin_records

    records, generic = load_builtin_records(default_data_dir(), strict=True)
    assert len(records) >= 15, [r["service"] for r in records]
    assert {r["credentialType"] for r in records} == {"oauth2", "apiKey", "platform", "noAuth"}
    for r in records:
        assert len(r["operations"]) >= 5, r["service"]
    assert {"webhook", "cron"} <= {t["id"] for t in generic}
    assert len({r["service"] for r in records}) == len(records)


# --- ensure_builtin_catalog with data directories of our own --------------------------------

SVC = """
service = "{service}"
name = "{name}"
credentialType = "apiKey"
[[operations]]
name = "ping"
summary = "Ping"
method = "GET"
path = "/ping"
[[triggers]]
type = "poll"
event = "new-thing"
name = "New thing"
"""
GENERIC = """
[[triggers]]
id = "webhook"
type = "webhook"
name = "Webhook"
description = "An HTTP POST arrives"
[[triggers]]
id = "cron"
type = "cron"
name = "Schedule"
config = { schedule = "0 9 * * *" }
"""


def _open(workspace: Path):
    from workspacectl.engine.workspaces import open_workspace

    return open_workspace(str(workspace))


def test_ensure_builtin_catalog_loads_once_per_content(workspace, tmp_path):
    from workspacectl.engine.catalog import builtins, services
    from workspacectl.engine.store import catalog as store

    data = tmp_path / "data"
    data.mkdir()
    (data / "one.toml").write_text(SVC.format(service="one", name="One"))
    (data / "_generic.toml").write_text(GENERIC)
    ws = _open(workspace)
    conn = ws.conn()
    assert builtins.ensure_builtin_catalog(conn, data) is True
    assert store.get_integration(conn, "one")["name"] == "One"
    assert store.get_trigger(conn, "one-new-thing")["cadence_seconds"] == 300
    assert store.get_trigger(conn, "cron")["service"] is None
    # the previous built-ins are gone: this directory is now the whole built-in catalog
    assert conn.execute("SELECT count(*) FROM integrations WHERE source = 'builtin'").fetchone()[0] == 1
    assert builtins.ensure_builtin_catalog(conn, data) is False  # unchanged: nothing to do
    (data / "one.toml").write_text(SVC.format(service="one", name="One v2"))
    (data / "two.toml").write_text(SVC.format(service="two", name="Two"))
    assert builtins.ensure_builtin_catalog(conn, data) is True
    assert store.get_integration(conn, "one")["name"] == "One v2"
    assert store.get_integration(conn, "two")["operation_count"] == 1
    # a retired built-in stays while a credential uses it; once unused an admin can delete it
    from workspacectl.engine.store.identity import first_owner
    from workspacectl.engine.vault.credentials import create_credential

    cred = create_credential(ws, conn, owner_member_id=first_owner(conn)["id"], service="two",
                             secrets={"apiKey": "k-two"}, fields={})
    (data / "two.toml").unlink()
    assert builtins.ensure_builtin_catalog(conn, data) is True
    assert store.get_integration(conn, "two")["source"] == "builtin"
    conn.execute("DELETE FROM credentials WHERE id = ?", (cred["id"],))
    assert services.delete_service(conn, "two") is True and store.get_integration(conn, "two") is None
    (data / "one.toml").unlink()
    assert builtins.ensure_builtin_catalog(conn, data) is True
    assert store.get_integration(conn, "one") is None
    conn.close()


def test_ensure_builtin_catalog_never_clobbers_an_import(workspace, tmp_path):
    from workspacectl.engine.catalog import builtins, services
    from workspacectl.engine.catalog.importer import parse_toml
    from workspacectl.engine.store import catalog as store

    conn = _open(workspace).conn()
    services.replace_service(conn, parse_toml(SVC.format(service="one", name="Admin's One"), "x.toml"), source="import")
    data = tmp_path / "data"
    data.mkdir()
    (data / "one.toml").write_text(SVC.format(service="one", name="Shipped One"))
    (data / "bad.toml").write_text("service = ")  # a broken file is skipped, the rest loads
    (data / "three.toml").write_text(SVC.format(service="three", name="Three"))
    assert builtins.ensure_builtin_catalog(conn, data) is True
    row = store.get_integration(conn, "one")
    assert (row["name"], row["source"]) == ("Admin's One", "import")
    assert store.get_integration(conn, "three")["source"] == "builtin"
    conn.close()


def test_cli_search(acme):
    body = acme.wsctl("catalog", "search", "add a new contact", "--service", "acme", "--limit", "2", "--json").json
    assert body == acme.ok("GET", "/v1/operations", query={"q": "add a new contact", "service": "acme", "limit": "2"})
    assert 1 <= len(body["operations"]) <= 2 and all(o["service"] == "acme" for o in body["operations"])
    lines = acme.wsctl("catalog", "search", "add a new contact", "--service", "acme").out.splitlines()
    assert [line.split("\t")[0] for line in lines] == [o["opId"] for o in acme.ok(
        "GET", "/v1/operations", query={"q": "add a new contact", "service": "acme", "limit": "10"})["operations"]]
    assert float(lines[0].split("\t")[1]) > 0
    acme.wsctl("catalog", "search", "  ", expect=7)


def test_an_admins_oauth_client_survives_a_builtin_reload(workspace, tmp_path):
    from workspacectl.engine.catalog import builtins, services
    from workspacectl.engine.store import catalog as store

    ws = _open(workspace)
    conn = ws.conn()
    data = tmp_path / "data"
    data.mkdir()
    oauth = SVC.replace('credentialType = "apiKey"', 'credentialType = "oauth2"\n[oauth2]\n'
                        'authorizeUrl = "https://o.example/a"\ntokenUrl = "https://o.example/t"\nclientId = "shipped"')
    (data / "one.toml").write_text(oauth.format(service="one", name="One"))
    builtins.ensure_builtin_catalog(conn, data)
    services.set_oauth_client(ws, "one", "admin-client", "admin-SECRET")
    (data / "one.toml").write_text(oauth.format(service="one", name="One v2"))
    assert builtins.ensure_builtin_catalog(conn, data) is True
    client_id, secret = services.get_oauth_client(ws, "one")
    assert (client_id, secret.reveal()) == ("admin-client", "admin-SECRET")
    assert store.get_integration(conn, "one")["name"] == "One v2"
    conn.close()
