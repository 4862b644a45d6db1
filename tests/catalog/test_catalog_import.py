"""`wsctl catalog import` and POST /v1/admin/catalog: definition files and OpenAPI documents."""
from __future__ import annotations

import contextlib
import json
import re
import socket
import sqlite3
import textwrap
import threading
from pathlib import Path

import pytest

from tests.conftest import workspace_at_rest
from tests.search_labels import OPENAPI_DIR  # the one place that finds ../shared/data/openapi

# Operation counts from SOURCES.md (methods under paths).
OPENAPI_COUNTS = {"github.json": 623, "stripe.yaml": 436, "sendgrid.json": 334, "square.json": 316,
                  "box.json": 296, "openai.json": 288, "asana.yaml": 247, "discord.json": 242,
                  "intercom.yaml": 231, "twilio.json": 197, "slack.json": 174, "spotify.yaml": 97}
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")

# The acceptance harness's two definitions (with its loopback OAuth URL filled in).
TESTKEY = textwrap.dedent("""
    service = "testkey"
    name = "Test Key Service"
    description = "An API-key service used by the conformance suite."
    credentialType = "apiKey"
    envVars = { apiKey = "TESTKEY_API_KEY" }
    secretFields = ["apiKey"]
    [[operations]]
    name = "list-widgets"
    summary = "List widgets in the account"
    method = "GET"
    path = "/v1/widgets"
    [[operations]]
    name = "create-widget"
    summary = "Create a new widget"
    method = "POST"
    path = "/v1/widgets"
    [[triggers]]
    type = "poll"
    event = "new-widget"
    name = "New widget"
    description = "Fires when a widget appears"
    cadenceSeconds = 120
    requiresCredential = true
""")
FAKEOAUTH = textwrap.dedent("""
    service = "fakeoauth"
    name = "Fake OAuth CRM"
    description = "An OAuth2 service on loopback."
    credentialType = "oauth2"
    envVars = { accessToken = "FAKEOAUTH_TOKEN" }
    [oauth2]
    authorizeUrl = "http://127.0.0.1:5999/authorize"
    tokenUrl = "http://127.0.0.1:5999/token"
    scopes = ["contacts.read"]
    clientId = "client-1"
    clientSecret = "client-SECRET-1"
    [[operations]]
    name = "list-contacts"
    summary = "List contacts in the CRM"
    method = "GET"
    path = "/contacts"
""")


def write(backend, name: str, text: str) -> Path:
    f = backend.workspace.parent / name
    f.write_text(text)
    return f


def db_dump(workspace: Path) -> bytes:
    """Everything the workspace keeps at rest (an SQL dump: sqlite3's, or pg_dump's on PostgreSQL)."""
    return b"\n".join(workspace_at_rest(workspace).values())


def test_acceptance_definitions_import(backend):
    r = backend.wsctl("catalog", "import", write(backend, "svc0.toml", TESTKEY))
    assert r.out.strip() == "testkey" and "Imported testkey: 2 operations, 1 trigger providers." in r.err
    body = backend.wsctl("catalog", "import", write(backend, "svc1.toml", FAKEOAUTH), "--json").json
    assert body["service"] == "fakeoauth" and body["created"] is True and body["operationCount"] == 1
    assert body["integration"]["oauthClientConfigured"] is True
    assert "SECRET" not in json.dumps(body)
    assert b"client-SECRET-1" not in db_dump(backend.workspace)
    detail = backend.ok("GET", "/v1/integrations/fakeoauth")
    assert detail["authorizeUrl"] == "http://127.0.0.1:5999/authorize" and detail["scopes"] == ["contacts.read"]
    assert backend.ok("GET", "/v1/integrations/testkey")["secretFields"] == ["apiKey"]
    trig = backend.ok("GET", "/v1/triggers", query={"q": "widget"})["triggers"]
    assert [t["triggerId"] for t in trig] == ["testkey-new-widget"] and trig[0]["cadenceSeconds"] == 120


def test_reimport_replaces_the_service(backend):
    backend.wsctl("catalog", "import", write(backend, "a.toml", TESTKEY))
    changed = TESTKEY.replace('name = "list-widgets"', 'name = "list-all-widgets"').replace(
        "cadenceSeconds = 120", "cadenceSeconds = 60")
    r = backend.wsctl("catalog", "import", write(backend, "a.toml", changed), "--json")
    assert r.json["created"] is False
    names = [o["name"] for o in backend.ok("GET", "/v1/integrations/testkey/operations")["operations"]]
    assert names == ["list-all-widgets", "create-widget"]
    assert backend.api("GET", "/v1/operations/testkey.list-widgets").status == 404
    assert backend.ok("GET", "/v1/triggers/testkey-new-widget")["cadenceSeconds"] == 60
    assert "Replaced testkey" in backend.wsctl("catalog", "import", write(backend, "a.toml", changed)).err


def test_service_override(backend):
    r = backend.wsctl("catalog", "import", write(backend, "a.toml", TESTKEY), "--service", "widgets-eu", "--json")
    assert r.json["service"] == "widgets-eu"
    assert backend.ok("GET", "/v1/operations/widgets-eu.create-widget")["service"] == "widgets-eu"
    assert backend.ok("GET", "/v1/triggers/widgets-eu-new-widget")["service"] == "widgets-eu"
    assert backend.api("GET", "/v1/integrations/testkey").status == 404
    r = backend.wsctl("catalog", "import", write(backend, "a.toml", TESTKEY), "--service", "Bad Name", expect=7)
    assert "lower kebab case" in r.err


BAD_FILES = {
    "syntax.toml": ("service = \n", "not valid TOML"),
    "nocred.toml": ('service = "x"\nname = "X"\n', "'credentialType' is required"),
    "badcred.toml": ('service = "x"\nname = "X"\ncredentialType = "password"\n', "'credentialType' must be one of"),
    "badname.toml": ('service = "Not OK"\nname = "X"\ncredentialType = "noAuth"\n', "lower kebab case"),
    "nooauth.toml": ('service = "x"\nname = "X"\ncredentialType = "oauth2"\n', "[oauth2]"),
    "dupops.toml": ('service = "x"\nname = "X"\ncredentialType = "noAuth"\n'
                    '[[operations]]\nname = "a"\nmethod = "GET"\npath = "/a"\n'
                    '[[operations]]\nname = "A"\nmethod = "GET"\npath = "/b"\n', "two operations are named 'a'"),
    "method.toml": ('service = "x"\nname = "X"\ncredentialType = "noAuth"\n'
                    '[[operations]]\nname = "a"\nmethod = "FETCH"\npath = "/a"\n', "'method' must be one of"),
    "secret.toml": ('service = "x"\nname = "X"\ncredentialType = "oauth2"\n[oauth2]\nauthorizeUrl = "nope"\n'
                    'tokenUrl = "https://t.example/token"\nclientSecret = "hush-SECRET-9"\n', "must be an http(s) URL"),
    "notapi.json": ('{"hello": "world"}', "not an OpenAPI 2.0 or 3.x document"),
    "garbage.yaml": ("openapi: [unclosed\n  - : :", "not valid JSON or YAML"),
    "empty.toml": ("", "the file is empty"),
    "trigger.toml": ('service = "x"\nname = "X"\ncredentialType = "noAuth"\n'
                     '[[triggers]]\ntype = "poll"\nname = "T"\n', "'event' is required"),
    # CONTRACT §5: secretFields is for apiKey services only, as [oauth2] is for oauth2 only
    "secretnoauth.toml": ('service = "x"\nname = "X"\ncredentialType = "noAuth"\nsecretFields = ["token"]\n',
                          "'secretFields' is only allowed when credentialType is apiKey"),
    "secretoauth.toml": ('service = "x"\nname = "X"\ncredentialType = "oauth2"\nsecretFields = ["apiKey"]\n'
                         '[oauth2]\nauthorizeUrl = "https://a.example/auth"\ntokenUrl = "https://a.example/token"\n',
                         "'secretFields' is only allowed when credentialType is apiKey"),
    # issue 25: a key no table knows is refused with its line and the table's keys, never ignored
    "oauthkey.toml": ('service = "x"\nname = "X"\ncredentialType = "oauth2"\n[oauth2]\n'
                      'authorizeUrl = "https://a.example/auth"\ntokenUrl = "https://a.example/token"\n'
                      'clientAuthMethod = "client_secret_basic"\n',
                      "oauthkey.toml line 7: unknown key 'clientAuthMethod' in [oauth2]; the known keys are "
                      "authorizeUrl, clientAuth, clientId, clientSecret, extraAuthorizeParams, issuer, pkce, revokeUrl, "
                      "scopeSeparator, scopes, tokenBodyEncoding, tokenUrl."),
    "topkey.toml": ('service = "x"\nname = "X"\ndescripton = "typo"\ncredentialType = "noAuth"\n',
                    "topkey.toml line 3: unknown key 'descripton' at the top level; the known keys are auth, "),
    "opkey.toml": ('service = "x"\nname = "X"\ncredentialType = "noAuth"\n[[operations]]\nname = "a"\n'
                   'method = "GET"\npath = "/a"\n[[operations]]\nname = "b"\nmethod = "GET"\npath = "/b"\n'
                   'sumary = "typo"\n', "opkey.toml line 12: unknown key 'sumary' in [[operations]] entry 2"),
    "paramkey.toml": ('service = "x"\nname = "X"\ncredentialType = "noAuth"\n[[operations]]\nname = "a"\n'
                      'method = "GET"\npath = "/a"\nparams = [{ name = "q", where = "query" }]\n',
                      "paramkey.toml line 8: unknown key 'where' in a param of [[operations]] entry 1"),
    "clientauth.toml": ('service = "x"\nname = "X"\ncredentialType = "oauth2"\n[oauth2]\n'
                        'authorizeUrl = "https://a.example/auth"\ntokenUrl = "https://a.example/token"\n'
                        'clientAuth = "basic"\n', "'clientAuth' must be one of client_secret_post, "
                        "client_secret_basic, none"),
    "tokenbody.toml": ('service = "x"\nname = "X"\ncredentialType = "oauth2"\n[oauth2]\n'
                       'authorizeUrl = "https://a.example/auth"\ntokenUrl = "https://a.example/token"\n'
                       'tokenBodyEncoding = "xml"\n', "'tokenBodyEncoding' must be form"),
    "publicsecret.toml": ('service = "x"\nname = "X"\ncredentialType = "oauth2"\n[oauth2]\n'
                          'authorizeUrl = "https://a.example/auth"\ntokenUrl = "https://a.example/token"\n'
                          'clientAuth = "none"\nclientSecret = "hush-SECRET-9"\n',
                          "is a public client, which has no secret"),
    "publicnopkce.toml": ('service = "x"\nname = "X"\ncredentialType = "oauth2"\n[oauth2]\n'
                          'authorizeUrl = "https://a.example/auth"\ntokenUrl = "https://a.example/token"\n'
                          'clientAuth = "none"\npkce = false\n', "(a public client) needs PKCE"),
}


def test_bad_files_are_refused_and_change_nothing(backend):
    """Every case through the API (the engine decides); a few through the CLI, whose one-line
    error and exit code are the same code path for all of them (a subprocess costs ~0.6 s)."""
    before = backend.ok("GET", "/v1/integrations", query={"limit": "500"})
    for name, (text, message) in sorted(BAD_FILES.items()):
        r = backend.api("POST", "/v1/admin/catalog", {"content": text, "filename": name})
        assert (r.status, r.code) == (400, "invalid_request"), (name, r.body)
        line = r.body["error"]["message"]
        assert "\n" not in line and line.startswith(name) and message in line, line
        assert "SECRET" not in line
    for name in ("secret.toml", "garbage.yaml", "empty.toml", "oauthkey.toml"):
        r = backend.wsctl("catalog", "import", write(backend, name, BAD_FILES[name][0]), expect=7)
        line = r.err.strip()
        assert "\n" not in line and line.startswith(f"error: {name}") and BAD_FILES[name][1] in line, line
        assert "SECRET" not in r.err and "Traceback" not in r.err
    missing = backend.workspace.parent / "no-such-file.toml"
    r = backend.wsctl("catalog", "import", missing, expect=7)
    assert r.err.startswith(f"error: Cannot read {missing}: No such file or directory; give the path of an OpenAPI")
    assert backend.ok("GET", "/v1/integrations", query={"limit": "500"}) == before


@contextlib.contextmanager
def connection_recorder():
    """A loopback listener that records every connection made to it."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    srv.settimeout(0.1)
    hits: list = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, addr = srv.accept()
            except OSError:
                continue
            hits.append(addr)
            conn.close()

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield srv.getsockname()[1], hits
    finally:
        stop.set()
        t.join()
        srv.close()


def remote_ref_document(port: int) -> dict:
    """OpenAPI 3.1 whose schema, parameter, body, response and path item point at a URL (and a
    file next to it); only `#/...` refs are local."""
    url = f"http://127.0.0.1:{port}"
    return {
        "openapi": "3.1.0", "info": {"title": "Remote Refs"},
        "components": {"schemas": {"Pet": {"$ref": f"{url}/schemas.json#/Pet"}}},
        "paths": {
            "/pets": {
                "get": {"parameters": [{"$ref": f"{url}/params.yaml#/limit"}],
                        "responses": {"200": {"description": "ok", "content": {"application/json": {
                            "schema": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}}}}}},
                "post": {"requestBody": {"$ref": f"{url}/bodies.json#/NewPet"},
                         "responses": {"201": {"$ref": f"{url}/responses.json#/Created"}}},
            },
            "/owners/{id}": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"$ref": "common.yaml#/components/schemas/Owner"}}}}}}},
            "/elsewhere": {"$ref": f"{url}/paths.json#/elsewhere"},
        },
    }


def post_escaped(backend, body: dict) -> tuple[int, dict]:
    """POST /v1/admin/catalog with a body holding lone surrogates, which a JSON body carries
    as \\ud800 escapes (httpx will not encode them, so the remote request is made by hand)."""
    if backend.kind == "local":
        r = backend.api("POST", "/v1/admin/catalog", body)
        return r.status, r.body
    r = backend._http.post("/v1/admin/catalog", content=json.dumps(body).encode(), headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {backend.owner_token}"})
    return r.status_code, r.json()


def test_admin_route_body_rules(backend):
    for body in (None, {"content": 5}, {"content": "x", "format": "xml"}, ["content"], {"format": "toml"}):
        r = backend.api("POST", "/v1/admin/catalog", body)
        assert (r.status, r.code) == (400, "invalid_request"), body
    r = backend.api("POST", "/v1/admin/catalog", {"format": "openapi", "content": "[" * 100000})
    assert r.status == 400
    # text that is not Unicode (lone surrogates: in the body, or as escapes inside the document)
    # (a lone surrogate anywhere in a JSON body is refused by the engine before the route runs)
    body_level = "The request body holds text that is not valid Unicode"
    for body, message in (({"content": TESTKEY.replace("Test Key", "Test \ud800Key")}, body_level),
                          ({"content": TESTKEY, "filename": "t\udcff.toml"}, body_level),
                          ({"content": '{"openapi": "3.0.0", "info": {"title": "A\\ud800"}, "paths": {}}',
                            "filename": "s.json"}, "s.json: the document holds a lone surrogate")):
        status, answer = post_escaped(backend, body)
        assert status == 400 and answer["error"]["message"].startswith(message), answer
    r = backend.api("POST", "/v1/admin/catalog", {"format": "toml", "content": TESTKEY, "filename": "t.toml"})
    assert r.status == 201 and r.body["service"] == "testkey"
    # remote $refs stay names and are never fetched (the server imports: its connections count)
    with connection_recorder() as (port, hits):
        r = backend.api("POST", "/v1/admin/catalog", {"content": json.dumps(remote_ref_document(port)),
                                                      "filename": "remote.json", "service": "remote"})
        assert r.status == 201, r.body
        assert hits == []
    ops = {o["name"]: o for o in backend.ok("GET", "/v1/integrations/remote/operations")["operations"]}
    assert set(ops) == {"get-pets", "post-pets", "get-owners-id"}   # the remote path item is left out
    listing = backend.ok("GET", "/v1/operations/remote.get-pets")
    assert listing["response"] == ["Pet"] and listing["params"] == []
    post = backend.ok("GET", "/v1/operations/remote.post-pets")
    assert post["params"] == [{"name": "body", "in": "body", "type": "NewPet", "required": False, "description": ""}]
    assert post["response"] == "Created" and "NewPet" in post["markdown"]
    assert backend.ok("GET", "/v1/operations/remote.get-owners-id")["response"] == "Owner"


def test_a_failed_replace_keeps_the_old_version(backend):
    """A trigger id clash refuses the whole import: a new service is not made, and a re-import of
    an existing one leaves the previous version exactly as it was."""
    first = 'service = "ab"\nname = "AB"\ncredentialType = "noAuth"\n' \
            '[[operations]]\nname = "keep-me"\nmethod = "GET"\npath = "/k"\n' \
            '[[triggers]]\ntype = "poll"\nevent = "c-d"\nname = "T"\n'
    assert backend.api("POST", "/v1/admin/catalog", {"content": first, "format": "toml"}).status == 201
    clash = 'service = "ab-c"\nname = "ABC"\ncredentialType = "noAuth"\n' \
            '[[operations]]\nname = "op"\nmethod = "GET"\npath = "/x"\n' \
            '[[triggers]]\ntype = "poll"\nevent = "d"\nname = "T2"\n'
    r = backend.wsctl("catalog", "import", write(backend, "abc.toml", clash), expect=7)
    assert "ab-c-d" in r.err
    assert backend.api("GET", "/v1/integrations/ab-c").status == 404
    assert backend.api("GET", "/v1/operations/ab-c.op").status == 404
    assert backend.ok("GET", "/v1/triggers/ab-c-d")["service"] == "ab"
    before = [backend.ok("GET", p) for p in ("/v1/integrations/ab", "/v1/integrations/ab/operations",
                                              "/v1/triggers/ab-c-d")]
    again = first.replace("AB", "AB v2").replace("keep-me", "new-op") + \
        '[[triggers]]\ntype = "webhook"\nid = "webhook"\nname = "Mine"\n'   # the generic provider's id
    r = backend.api("POST", "/v1/admin/catalog", {"content": again, "format": "toml"})
    assert (r.status, r.code) == (400, "invalid_request") and "'webhook'" in r.body["error"]["message"]
    assert [backend.ok("GET", p) for p in ("/v1/integrations/ab", "/v1/integrations/ab/operations",
                                           "/v1/triggers/ab-c-d")] == before
    assert backend.ok("GET", "/v1/triggers/webhook")["service"] == "webhook"   # the generic provider, unchanged


def test_a_reimport_failing_mid_transaction_leaves_the_old_service(workspace):
    """A fault after the old rows are deleted (here a real SQLite abort on one new operation's
    insert) rolls the whole replace back: integration, operations, triggers and search index."""
    from workspacectl.engine.catalog import search as catalog_search
    from workspacectl.engine.catalog import services
    from workspacectl.engine.catalog.importer import parse_toml
    from workspacectl.engine.store import catalog as store
    from workspacectl.engine.workspaces import open_workspace

    ws = open_workspace(str(workspace))
    conn = ws.conn()

    def snapshot():
        return (dict(store.get_integration(conn, "testkey")),
                [dict(r) for r in conn.execute("SELECT * FROM operations WHERE service = 'testkey' ORDER BY op_id")],
                [dict(r) for r in conn.execute("SELECT * FROM trigger_providers WHERE service = 'testkey'")],
                catalog_search.search(conn, "create a widget", service="testkey"))

    services.replace_service(conn, parse_toml(TESTKEY, "t.toml"), source="import")
    before = snapshot()
    assert before[3][0][0] == "testkey.create-widget"
    changed = TESTKEY.replace("Test Key Service", "Changed").replace("cadenceSeconds = 120", "cadenceSeconds = 60") + \
        '[[operations]]\nname = "explode"\nmethod = "GET"\npath = "/boom"\n'
    conn.execute("CREATE TEMP TRIGGER fail_insert BEFORE INSERT ON operations WHEN NEW.name = 'explode' "
                 "BEGIN SELECT RAISE(ABORT, 'simulated disk fault'); END")
    try:
        with pytest.raises(sqlite3.IntegrityError, match="simulated disk fault"):
            services.replace_service(conn, parse_toml(changed, "t.toml"), source="import")
    finally:
        conn.execute("DROP TRIGGER fail_insert")
    assert not conn.in_transaction
    assert snapshot() == before
    conn.close()


def test_openapi_import_through_the_cli(backend):
    """One real document on both backends, end to end."""
    r = backend.wsctl("catalog", "import", str(OPENAPI_DIR / "slack.json"), "--json")
    assert r.json["service"] == "slack" and r.json["operationCount"] == OPENAPI_COUNTS["slack.json"]
    op = backend.ok("GET", "/v1/operations/slack.chat-post-message")
    assert (op["method"], op["path"]) == ("POST", "/chat.postMessage")
    assert op["summary"] == "Sends a message to a channel."
    channel = next(p for p in op["params"] if p["name"] == "channel")
    assert channel == {"name": "channel", "in": "body", "type": "string", "required": True,
                       "description": "Channel, private group, or IM channel to send message to."}
    md = backend.wsctl("catalog", "operation", "slack.chat-post-message").out
    assert "`POST /chat.postMessage`" in md and "https://slack.com/api/chat.postMessage" in md
    assert "$SLACK_TOKEN" in md
    detail = backend.ok("GET", "/v1/integrations/slack")
    assert detail["credentialType"] == "oauth2" and detail["tokenUrl"] == "https://slack.com/api/oauth.access"
    assert "chat:write" in detail["scopes"]


def test_non_ascii_names_fold_to_ascii_kebab(backend):
    """Accented and compatibility letters fold to their ASCII base instead of being dropped
    ('über' was 'ber'), in OpenAPI operationIds, TOML operation names and trigger events."""
    doc = {"openapi": "3.0.0", "info": {"title": "Tienda", "version": "1"},
           "servers": [{"url": "https://api.tienda.co.uk/v1"}],
           "paths": {"/a": {"get": {"operationId": "créerContact", "responses": {}}},
                     "/b": {"get": {"operationId": "überStraße", "responses": {}}},
                     "/c": {"get": {"operationId": "İstanbul", "responses": {}}}}}
    r = backend.api("POST", "/v1/admin/catalog", {"content": json.dumps(doc), "format": "openapi"})
    assert r.status == 201, r.body
    assert r.body["service"] == "tienda"            # not "co", the label before "uk"
    ops = backend.ok("GET", "/v1/integrations/tienda/operations")["operations"]
    assert [o["opId"] for o in ops] == ["tienda.creer-contact", "tienda.uber-strasse", "tienda.istanbul"]
    ip = {**doc, "info": {"title": "Local Thing", "version": "1"}, "servers": [{"url": "http://127.0.0.1:9/x"}]}
    r = backend.api("POST", "/v1/admin/catalog", {"content": json.dumps(ip), "format": "openapi"})
    assert r.body["service"] == "local-thing"       # an IP address names nothing
    toml = ('service = "uni"\nname = "U"\ncredentialType = "noAuth"\n[[operations]]\nname = "Ⅻ ﬁle"\n'
            'method = "GET"\npath = "/a"\n[[triggers]]\ntype = "poll"\nevent = "neuer Eintrag für Größe"\nname = "T"\n')
    path = write(backend, "uni.toml", toml)
    backend.wsctl("catalog", "import", path)
    assert backend.ok("GET", "/v1/operations/uni.xii-file")["name"] == "xii-file"
    assert backend.ok("GET", "/v1/triggers/uni-neuer-eintrag-fur-grosse")["type"] == "poll"


@pytest.fixture(scope="module")
def corpus_engine(shared_corpus):
    """An engine over the session's shared corpus (conftest: every document imported once
    through POST /v1/admin/catalog); this module only reads it."""
    from workspacectl.engine.dispatch import Engine
    from workspacectl.engine.registry import Caller
    from workspacectl.engine.store import identity
    from workspacectl.engine.workspaces import open_workspace

    path, answers = shared_corpus
    ws = open_workspace(str(path))
    owner = identity.first_owner(ws.conn())
    yield Engine(ws), Caller(owner["id"], "owner", "session", "local"), answers
    ws.conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    ws.conn().close()


def test_the_shared_documents_add_up_to_3481_operations(corpus_engine):
    engine, owner, answers = corpus_engine
    assert sorted(answers) == sorted(OPENAPI_COUNTS) and sum(OPENAPI_COUNTS.values()) == 3481
    assert sum(body["operationCount"] for _, body in answers.values()) == 3481
    listed = engine.call(owner, "GET", "/v1/integrations", query={"limit": "500"}).body["integrations"]
    assert sum(i["operationCount"] for i in listed) == 3481 and len(listed) == 12


@pytest.mark.parametrize("filename", sorted(OPENAPI_COUNTS))
def test_every_shared_openapi_document_imports(corpus_engine, filename):
    engine, owner, answers = corpus_engine
    service = filename.split(".")[0]
    status, body = answers[filename]
    assert status in (200, 201), body       # 200: it replaced the built-in service of that name
    assert body["service"] == service and body["operationCount"] == OPENAPI_COUNTS[filename]
    ops = engine.call(owner, "GET", f"/v1/integrations/{service}/operations", query={"limit": "500"}).body
    names = [o["name"] for o in ops["operations"]]
    while ops["nextCursor"]:
        ops = engine.call(owner, "GET", f"/v1/integrations/{service}/operations",
                          query={"limit": "500", "cursor": ops["nextCursor"]}).body
        names += [o["name"] for o in ops["operations"]]
    assert len(names) == len(set(names)) == OPENAPI_COUNTS[filename]
    assert all(KEBAB.match(n) for n in names)
    first = engine.call(owner, "GET", f"/v1/operations/{service}.{names[0]}").body
    assert first["markdown"].startswith(f"# {service}.{names[0]}") and "## Parameters" in first["markdown"]


# --- the OpenAPI reader on small documents -------------------------------------------------

def parse(doc, service=None, filename="doc.json"):
    from workspacectl.engine.catalog.importer import parse_document

    text = doc if isinstance(doc, str) else json.dumps(doc)
    return parse_document(text, None, service, filename)


PETS3 = {
    "openapi": "3.0.3",
    "info": {"title": "Pet Store API", "description": "Pets. And more."},
    "servers": [{"url": "https://{region}.pets.example/v1", "variables": {"region": {"default": "eu"}}}],
    "components": {
        "securitySchemes": {"oauth": {"type": "oauth2", "flows": {"authorizationCode": {
            "authorizationUrl": "https://auth.pets.example/authorize", "tokenUrl": "/oauth/token",
            "scopes": {"pets.read": "Read", "pets.write": "Write"}}}}},
        "parameters": {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer", "default": 20}}},
        "schemas": {
            "Pet": {"type": "object", "required": ["name"], "properties": {
                "id": {"type": "string"}, "name": {"type": "string", "example": "Rex"},
                "owner": {"$ref": "#/components/schemas/Person"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "color": {"$ref": "https://schemas.example/common.json#/Color"}}},
            "Person": {"type": "object", "properties": {
                "name": {"type": "string"}, "pets": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}},
                "nickname": {"type": ["string", "null"]}}},
            "Loop": {"$ref": "#/components/schemas/Loop"},
        },
    },
    "paths": {
        "/pets": {
            "get": {"operationId": "listPets", "summary": "List pets",
                    "parameters": [{"$ref": "#/components/parameters/Limit"}],
                    "responses": {"200": {"description": "ok", "content": {"application/json": {
                        "schema": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}}}}}},
            "post": {"description": "Adds a pet. It must have a name.",
                     "requestBody": {"required": True, "content": {"application/json": {
                         "schema": {"$ref": "#/components/schemas/Pet"}}}},
                     "responses": {"201": {"description": "made", "content": {"application/json": {
                         "schema": {"$ref": "#/components/schemas/Pet"}}}}}},
        },
        "/pets/{petId}/loop": {
            "parameters": [{"name": "petId", "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {"operationId": "list_pets",
                    "responses": {"2XX": {"description": "ok", "content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/Loop"}}}}}},
        },
    },
}


def test_openapi3_names_params_refs_and_security():
    rec = parse(PETS3)
    # the title's first word wins when the host name starts with it (Square at squareup.com)
    assert rec["service"] == "pet" and rec["name"] == "Pet Store API"
    assert rec["credentialType"] == "oauth2"
    assert rec["setup"]["authorizeUrl"] == "https://auth.pets.example/authorize"
    assert rec["setup"]["tokenUrl"] == "https://eu.pets.example/oauth/token"  # relative to the server
    assert rec["setup"]["scopes"] == ["pets.read", "pets.write"]
    assert rec["setup"]["baseUrl"] == "https://eu.pets.example/v1"
    assert rec["envVars"] == {"accessToken": "PET_TOKEN"}
    ops = {o["name"]: o for o in rec["operations"]}
    # no operationId: named from method and path; duplicate kebab names get a suffix
    assert set(ops) == {"list-pets", "post-pets", "list-pets-2"}
    assert ops["list-pets"]["params"] == [{"name": "limit", "in": "query", "type": "integer", "required": False,
                                           "description": ""}]
    shape = ops["list-pets"]["response"]
    assert isinstance(shape, list) and shape[0]["name"] == "string"
    assert shape[0]["color"] == "Color"  # a remote $ref stays a name, never fetched
    assert shape[0]["owner"]["pets"] == "array of Pet"  # depth-limited: the cycle Pet -> Person -> Pet ends in a name
    assert ops["list-pets"]["example"] == {"limit": 20}
    post = ops["post-pets"]
    assert post["summary"] == "Adds a pet."
    body = {p["name"]: p for p in post["params"]}
    assert body["name"]["required"] is True and body["name"]["in"] == "body" and body["owner"]["type"] == "Person"
    assert body["tags"]["type"] == "array of string"
    assert post["example"] == {"name": "Rex"}
    loop = ops["list-pets-2"]
    assert loop["params"][0] == {"name": "petId", "in": "path", "type": "string", "required": True, "description": ""}
    assert loop["response"] == "Loop"  # a $ref to itself resolves to its name, no hang


SWAGGER = {
    "swagger": "2.0",
    "info": {"title": "Widgets", "version": ""},
    "host": "api.widgets.example", "basePath": "/v2", "schemes": ["https"],
    "securityDefinitions": {"key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}},
    "definitions": {"Widget": {"type": "object", "properties": {"id": {"type": "integer"}, "size": {"type": "number"}}}},
    "paths": {
        "/widgets/{id}": {
            "get": {"parameters": [{"name": "id", "in": "path", "required": True, "type": "integer"},
                                   {"name": "fields", "in": "query", "type": "array", "items": {"type": "string"}}],
                    "responses": {"200": {"description": "ok", "schema": {"$ref": "#/definitions/Widget"}}}},
            "put": {"operationId": "widgets.update",
                    "parameters": [{"name": "body", "in": "body", "required": True,
                                    "schema": {"type": "object", "required": ["size"],
                                               "properties": {"size": {"type": "number"}}}},
                                   {"name": "note", "in": "formData", "type": "string"}],
                    "responses": {"default": {"description": "x"}}},
        },
    },
}


def test_swagger2_parameters_and_api_key_header():
    rec = parse(SWAGGER, filename="widgets.json")
    assert rec["service"] == "widgets" and rec["credentialType"] == "apiKey"
    assert rec["envVars"] == {"apiKey": "WIDGETS_API_KEY"} and rec["secretFields"] == ["apiKey"]
    assert rec["setup"]["baseUrl"] == "https://api.widgets.example/v2"
    ops = {o["name"]: o for o in rec["operations"]}
    get = ops["get-widgets-id"]
    assert [(p["name"], p["in"], p["type"], p["required"]) for p in get["params"]] == [
        ("id", "path", "integer", True), ("fields", "query", "array of string", False)]
    assert get["response"] == {"id": "integer", "size": "number"}
    put = ops["widgets-update"]
    assert [(p["name"], p["in"], p["required"]) for p in put["params"]] == [("size", "body", True), ("note", "body", False)]
    assert put["response"] is None and "Not documented." in put["markdown"]
    assert '-H "X-Api-Key: $WIDGETS_API_KEY"' in put["markdown"]


@pytest.mark.parametrize("schemes,expected", [
    ({}, "noAuth"),
    ({"b": {"type": "http", "scheme": "bearer"}}, "apiKey"),
    ({"b": {"type": "http", "scheme": "basic"}}, "apiKey"),
    ({"o": {"type": "oauth2", "flows": {"implicit": {"authorizationUrl": "https://a.example/x", "scopes": {}}}}}, "apiKey"),
])
def test_credential_type_from_security_schemes(schemes, expected):
    doc = {"openapi": "3.1.0", "info": {"title": "Thing"}, "paths": {},
           "components": {"securitySchemes": schemes}}
    rec = parse(doc, service="thing")
    assert rec["credentialType"] == expected
    if expected == "apiKey":
        assert rec["envVars"] == {"apiKey": "THING_API_KEY"}
    else:
        assert rec["envVars"] == {}


def test_yaml_documents_are_read():
    text = textwrap.dedent("""
        openapi: 3.1.0
        info: {title: Tiny}
        paths:
          /ping:
            get:
              operationId: Ping
              responses:
                '200':
                  description: ok
                  content:
                    application/json:
                      schema: {type: object, properties: {ok: {type: boolean}}}
    """)
    rec = parse(text, filename="tiny.yaml")
    assert rec["service"] == "tiny" and rec["operations"][0]["opId"] == "tiny.ping"
    assert rec["operations"][0]["response"] == {"ok": "boolean"}
    # Swagger 2.0 in YAML, with a local $ref into definitions and no operationId
    swagger = textwrap.dedent("""
        swagger: "2.0"
        info: {title: Tiny Two}
        host: tiny.example
        paths:
          /things/{id}:
            delete:
              parameters: [{name: id, in: path, required: true, type: string}]
              responses:
                "200": {description: ok, schema: {$ref: "#/definitions/Gone"}}
        definitions:
          Gone: {type: object, properties: {deleted: {type: boolean}}}
    """)
    rec = parse(swagger, filename="two.yml")
    assert rec["service"] == "tiny" and rec["setup"]["baseUrl"] == "https://tiny.example"
    op = rec["operations"][0]
    assert (op["opId"], op["method"], op["response"]) == ("tiny.delete-things-id", "DELETE", {"deleted": "boolean"})
    assert "| id | path | string | yes |" in op["markdown"]
