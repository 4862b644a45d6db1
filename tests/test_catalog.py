"""The integration catalog routes, their scope rules, `wsctl catalog`, and the built-in catalog."""
from __future__ import annotations

import sqlite3
import textwrap
from pathlib import Path

import pytest

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
    # read-only: no writes on the catalog routers
    for method in ("POST", "PUT", "DELETE"):
        assert acme.api(method, "/v1/integrations/acme", body={}).status in (404, 405)


def test_admin_routes_need_an_owner_or_admin_session(acme):
    member = acme.add_member("mo@example.com", "Mo", "member")
    admin = acme.add_member("ada@example.com", "Ada", "admin")
    body = {"format": "toml", "content": ACME.replace('"Acme CRM"', '"Acme 2"')}
    r = acme.api("POST", "/v1/admin/catalog", body, secret=acme.session(member["id"]))
    assert (r.status, r.code) == (403, "forbidden")
    r = acme.api("POST", "/v1/admin/catalog", body, secret=acme.key("platform", PLATFORM))
    assert (r.status, r.code) == (403, "insufficient_scope")
    assert acme.api("DELETE", "/v1/admin/catalog/acme", secret=acme.session(member["id"])).status == 403
    assert acme.ok("GET", "/v1/integrations/acme")["name"] == "Acme CRM"
    r = acme.api("POST", "/v1/admin/catalog", body, secret=acme.session(admin["id"]))
    assert r.status == 200 and r.body["created"] is False and r.body["integration"]["name"] == "Acme 2"


def test_delete_service(acme):
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
    db = backend.workspace / "workspace.db"
    con = sqlite3.connect(db)
    dump = "\n".join(con.iterdump())
    con.close()
    assert "client-SECRET" not in dump
    from workspacectl.engine.store.catalog import get_oauth_client
    from workspacectl.engine.workspace import Workspace

    ws = Workspace.open(backend.workspace)
    client_id, client_secret = get_oauth_client(ws, service)
    ws.conn().close()
    assert client_id == "cid-1" and client_secret.reveal() == secret and "SECRET" not in repr(client_secret)
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
    assert acme.wsctl("catalog", "operation", "acme.create-contact", "--json").json["opId"] == "acme.create-contact"
    r = acme.wsctl("catalog", "integration", "nope", expect=5)
    assert "wsctl catalog integrations" in r.err


def test_builtin_catalog_is_loaded_in_new_workspaces(backend):
    from workspacectl.engine.store.catalog import default_data_dir, load_builtin_records

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
    from workspacectl.engine.store.catalog import default_data_dir, load_builtin_records

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
    from workspacectl.engine.workspace import Workspace

    return Workspace.open(workspace)


def test_ensure_builtin_catalog_loads_once_per_content(workspace, tmp_path):
    from workspacectl.engine.store import catalog as store

    data = tmp_path / "data"
    data.mkdir()
    (data / "one.toml").write_text(SVC.format(service="one", name="One"))
    (data / "_generic.toml").write_text(GENERIC)
    conn = _open(workspace).conn()
    assert store.ensure_builtin_catalog(conn, data) is True
    assert store.get_integration(conn, "one")["name"] == "One"
    assert store.get_trigger(conn, "one-new-thing")["cadence_seconds"] == 300
    assert store.get_trigger(conn, "cron")["service"] is None
    # the previous built-ins are gone: this directory is now the whole built-in catalog
    assert conn.execute("SELECT count(*) FROM integrations WHERE source = 'builtin'").fetchone()[0] == 1
    assert store.ensure_builtin_catalog(conn, data) is False  # unchanged: nothing to do
    (data / "one.toml").write_text(SVC.format(service="one", name="One v2"))
    (data / "two.toml").write_text(SVC.format(service="two", name="Two"))
    assert store.ensure_builtin_catalog(conn, data) is True
    assert store.get_integration(conn, "one")["name"] == "One v2"
    assert store.get_integration(conn, "two")["operation_count"] == 1
    (data / "two.toml").unlink()
    assert store.ensure_builtin_catalog(conn, data) is True
    assert store.get_integration(conn, "two") is None
    conn.close()


def test_ensure_builtin_catalog_never_clobbers_an_import(workspace, tmp_path):
    from workspacectl.engine.catalog_import import parse_toml
    from workspacectl.engine.store import catalog as store

    conn = _open(workspace).conn()
    store.replace_service(conn, parse_toml(SVC.format(service="one", name="Admin's One"), "x.toml"), source="import")
    data = tmp_path / "data"
    data.mkdir()
    (data / "one.toml").write_text(SVC.format(service="one", name="Shipped One"))
    (data / "bad.toml").write_text("service = ")  # a broken file is skipped, the rest loads
    (data / "three.toml").write_text(SVC.format(service="three", name="Three"))
    assert store.ensure_builtin_catalog(conn, data) is True
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
    from workspacectl.engine.store import catalog as store

    ws = _open(workspace)
    conn = ws.conn()
    data = tmp_path / "data"
    data.mkdir()
    oauth = SVC.replace('credentialType = "apiKey"', 'credentialType = "oauth2"\n[oauth2]\n'
                        'authorizeUrl = "https://o.example/a"\ntokenUrl = "https://o.example/t"\nclientId = "shipped"')
    (data / "one.toml").write_text(oauth.format(service="one", name="One"))
    store.ensure_builtin_catalog(conn, data)
    store.set_oauth_client(ws, "one", "admin-client", "admin-SECRET")
    (data / "one.toml").write_text(oauth.format(service="one", name="One v2"))
    assert store.ensure_builtin_catalog(conn, data) is True
    client_id, secret = store.get_oauth_client(ws, "one")
    assert (client_id, secret.reveal()) == ("admin-client", "admin-SECRET")
    assert store.get_integration(conn, "one")["name"] == "One v2"
    conn.close()
