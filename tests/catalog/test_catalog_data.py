"""The built-in catalog shipped in src/workspacectl/catalog_data/: a pure-data check of every file.

Conventions the files follow (beyond CONTRACT §5):
- a param is {name, in: path|query|body|header, type, required, description};
- `response` is the response body's shape: a table of field -> type, where a type is a type name,
  a nested table, or a one-element array meaning "array of that"; a top-level one-element array
  means the body is an array, a bare type name a scalar body; `{}` means no body (204/202);
- `example` holds one value per param the example call sends, keyed by param name (path params
  included, header params left out), and names every required path/query/body param.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import workspacectl

DATA = Path(workspacectl.__file__).parent / "catalog_data"
SERVICE_FILES = sorted(p for p in DATA.glob("*.toml") if not p.name.startswith("_"))
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
UPPER_SNAKE = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$")
CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")
TYPES = {"string", "integer", "number", "boolean", "object", "array", "file", "binary", "null"}
METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE"}
PARAM_IN = {"path", "query", "body", "header"}
TOP_KEYS = {"service", "name", "description", "credentialType", "envVars", "fields", "secretFields",
            "baseUrl", "docsUrl", "probe", "auth", "pagination", "bodyEncoding", "oauth2", "operations", "triggers"}
OAUTH_KEYS = {"authorizeUrl", "tokenUrl", "scopes", "revokeUrl", "pkce", "scopeSeparator",
              "extraAuthorizeParams", "clientAuth", "tokenBodyEncoding"}
OP_KEYS = {"name", "summary", "description", "method", "path", "tags", "params", "response", "example",
           "markdown"}
TRIGGER_KEYS = {"type", "event", "name", "description", "cadenceSeconds", "requiresCredential", "config"}
CREDENTIAL_FIELDS = {"accessToken", "apiKey", "instanceUrl"}


def load(path: Path) -> dict:
    with path.open("rb") as f:
        return tomllib.load(f)


SERVICES = {p.stem: load(p) for p in SERVICE_FILES}
GENERIC = load(DATA / "_generic.toml")


def walk_shape(shape, where: str):
    """Every leaf of a response shape is a known type name."""
    if isinstance(shape, dict):
        for key, value in shape.items():
            walk_shape(value, f"{where}.{key}")
    elif isinstance(shape, list):
        assert len(shape) == 1, f"{where}: an array shape has exactly one element type"
        walk_shape(shape[0], f"{where}[]")
    else:
        assert shape in TYPES, f"{where}: unknown type {shape!r}"


def test_catalog_size_and_credential_types():
    assert len(SERVICES) >= 17
    types = {s["credentialType"] for s in SERVICES.values()}
    assert types == {"oauth2", "apiKey", "platform", "noAuth"}
    counts = {t: sum(s["credentialType"] == t for s in SERVICES.values()) for t in types}
    assert counts["oauth2"] >= 8 and counts["apiKey"] >= 5


@pytest.mark.parametrize("stem", sorted(SERVICES))
def test_service_header(stem):
    s = SERVICES[stem]
    assert set(s) <= TOP_KEYS, f"unknown keys {set(s) - TOP_KEYS}"
    assert s["service"] == stem, "the file is named after its service"
    assert KEBAB.match(s["service"])
    assert s["name"].strip() and len(s["description"]) >= 30
    assert s["credentialType"] in {"oauth2", "apiKey", "platform", "noAuth"}
    env = s["envVars"]
    for field, var in env.items():
        assert CAMEL.match(field), f"envVars key {field!r} is a camelCase field name"
        assert UPPER_SNAKE.match(var), f"env var {var!r} is UPPER_SNAKE_CASE"
    assert len(set(env.values())) == len(env), "env var names are distinct"
    fields = s.get("fields", [])
    assert all(CAMEL.match(f) for f in fields)
    ctype = s["credentialType"]
    if ctype == "oauth2":
        assert "accessToken" in env
        assert "secretFields" not in s
        o = s["oauth2"]
        assert set(o) <= OAUTH_KEYS, f"unknown oauth2 keys {set(o) - OAUTH_KEYS}"
        assert "clientId" not in o and "clientSecret" not in o  # admins set those
        # issue 25: each names how its client authenticates, citing where its provider says so
        assert o["clientAuth"] in {"client_secret_post", "client_secret_basic", "none"}
        assert o.get("tokenBodyEncoding", "form") in {"form", "json"}
        text = (DATA / f"{stem}.toml").read_text()
        before = text.split('\nclientAuth = ', 1)[0].rsplit("\n", 3)
        assert any(line.startswith("# ") and "'s " in line for line in before[1:]), "a comment cites the provider"
        for key in ("authorizeUrl", "tokenUrl"):
            assert o[key].startswith("https://"), key
        if "revokeUrl" in o:
            assert o["revokeUrl"].startswith("https://")
        assert isinstance(o["scopes"], list) and all(isinstance(x, str) and x for x in o["scopes"])
        assert o.get("scopeSeparator", " ") in {" ", ","}
        assert isinstance(o.get("pkce", True), bool)
        assert all(isinstance(v, str) for v in o.get("extraAuthorizeParams", {}).values())
    else:
        assert "oauth2" not in s
    if ctype == "apiKey":
        secret = s.get("secretFields", ["apiKey"])
        assert secret and all(CAMEL.match(f) for f in secret)
        assert not set(secret) & set(fields), "a field is either secret or not"
        assert set(env) <= set(secret) | set(fields), "env vars name the credential's fields"
        assert set(secret) <= set(env), "every secret field is injected under some env var"
    if ctype in {"platform", "noAuth"}:
        assert env == {} and not fields and "secretFields" not in s
    if ctype == "oauth2":
        assert set(env) <= {"accessToken"} | set(fields)
    if ctype in {"oauth2", "apiKey", "noAuth"}:
        base = s["baseUrl"]
        # a per-account host comes from a field of the credential: {instanceUrl}/..., .../{cloudId}/...
        assert base.startswith("https://") or base.startswith("{instanceUrl}/"), base
        assert set(re.findall(r"\{([^}]+)\}", base)) <= set(fields), "baseUrl placeholders are fields"
        assert s["docsUrl"].startswith("https://")
    if "probe" in s:
        assert s["probe"] in {op["name"] for op in s["operations"]}
        assert ctype in {"oauth2", "apiKey"}, "only a credential can be probed"
    if ctype == "apiKey":
        assert "probe" in s, "apiKey services name a probe so vault sync can check a pasted key"
    if "probe" in s:
        probe = next(op for op in s["operations"] if op["name"] == s["probe"])
        # the vault calls a probe with the credential alone: no path parameter, no body
        assert "{" not in probe["path"] and not any(p["in"] == "body" for p in probe["params"]), stem
    auth = s.get("auth", {"type": "bearer"})
    assert auth["type"] in {"bearer", "header", "query", "basic"}
    assert set(auth) <= {"type", "name", "field", "prefix", "username", "password", "headers"}
    if auth["type"] == "basic":
        assert {auth["username"], auth["password"]} <= set(fields) | set(s.get("secretFields", []))
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in auth.get("headers", {}).items())
    assert s.get("bodyEncoding", "json") in {"json", "form"}


@pytest.mark.parametrize("stem", sorted(SERVICES))
def test_operations(stem):
    s = SERVICES[stem]
    ops = s["operations"]
    assert len(ops) >= 5
    names = [op["name"] for op in ops]
    assert len(names) == len(set(names)), "operation names are unique within a service"
    for op in ops:
        where = f"{stem}.{op['name']}"
        assert set(op) <= OP_KEYS, f"{where}: unknown keys {set(op) - OP_KEYS}"
        assert KEBAB.match(op["name"]), where
        assert op["summary"].strip() and len(op["summary"]) <= 80, where
        assert len(op["description"]) >= 40, f"{where}: write a real description"
        assert op["method"] in METHODS, where
        assert op["path"].startswith("/") and " " not in op["path"], where
        assert op["tags"] and all(isinstance(t, str) for t in op["tags"]), where
        params = op["params"]
        pnames = [p["name"] for p in params]
        assert len(pnames) == len(set(pnames)), f"{where}: duplicate param"
        for p in params:
            assert set(p) == {"name", "in", "type", "required", "description"}, f"{where}: {p}"
            assert p["in"] in PARAM_IN and p["type"] in TYPES, f"{where}: {p}"
            assert isinstance(p["required"], bool) and p["description"].strip(), f"{where}: {p}"
            if p["in"] == "path":
                assert p["required"], f"{where}: path params are required"
            if p["in"] == "body":
                assert op["method"] in {"POST", "PUT", "PATCH", "DELETE"}, f"{where}: body on {op['method']}"
        in_path = set(re.findall(r"\{([^}]+)\}", op["path"]))
        assert in_path == {p["name"] for p in params if p["in"] == "path"}, \
            f"{where}: path placeholders and path params differ"
        walk_shape(op["response"], f"{where}.response")
        assert isinstance(op["response"], (dict, list, str))
        example = op["example"]
        assert isinstance(example, dict), where
        assert set(example) <= set(pnames) - {p["name"] for p in params if p["in"] == "header"}, \
            f"{where}: example keys {set(example) - set(pnames)} are not params"
        required = {p["name"] for p in params if p["required"] and p["in"] != "header"}
        assert required <= set(example), f"{where}: example lacks required {required - set(example)}"


def test_op_ids_globally_unique_and_kebab():
    op_ids = [f"{s['service']}.{op['name']}" for s in SERVICES.values() for op in s["operations"]]
    assert len(op_ids) == len(set(op_ids))
    assert all(re.match(r"^[a-z0-9-]+\.[a-z0-9]+(-[a-z0-9]+)*$", o) for o in op_ids)
    assert len(op_ids) >= 17 * 5


def all_triggers():
    out = []
    for s in SERVICES.values():
        for t in s.get("triggers", []):
            out.append((f"{s['service']}-{t['event']}", s["service"], t))
    for t in GENERIC["triggers"]:
        out.append((t["id"], None, t))
    return out


def test_trigger_ids_unique():
    ids = [tid for tid, _, _ in all_triggers()]
    assert len(ids) == len(set(ids))
    assert {"webhook", "cron"} <= set(ids)
    assert len([1 for _, svc, _ in all_triggers() if svc]) >= 15


@pytest.mark.parametrize("stem", sorted(s for s in SERVICES if SERVICES[s].get("triggers")))
def test_poll_triggers(stem):
    s = SERVICES[stem]
    op_names = {op["name"] for op in s["operations"]}
    for t in s["triggers"]:
        where = f"{stem}-{t['event']}"
        assert set(t) <= TRIGGER_KEYS, f"{where}: unknown keys {set(t) - TRIGGER_KEYS}"
        assert t["type"] == "poll", where
        assert KEBAB.match(t["event"]) and KEBAB.match(where), where
        assert t["name"].strip() and len(t["description"]) >= 20, where
        assert isinstance(t["cadenceSeconds"], int) and 30 <= t["cadenceSeconds"] <= 86400, where
        assert isinstance(t["requiresCredential"], bool), where
        assert t["requiresCredential"] == (s["credentialType"] in {"oauth2", "apiKey"}), where
        config = t.get("config", {})
        if "operation" in config:
            assert config["operation"] in op_names, f"{where}: polls an operation of its service"
        for i in config.get("inputs", []):
            assert set(i) == {"name", "type", "required", "description"} and i["type"] in TYPES, where


def test_generic_providers():
    assert set(GENERIC) == {"triggers"}
    by_id = {t["id"]: t for t in GENERIC["triggers"]}
    assert set(by_id) == {"webhook", "cron"}
    for tid, t in by_id.items():
        assert t["type"] == tid and "service" not in t and "event" not in t
        assert t["name"].strip() and len(t["description"]) >= 20
        assert t.get("requiresCredential", False) is False
    schedule = by_id["cron"]["config"]["schedule"]
    assert len(schedule.split()) == 5, "a five-field cron expression"


def test_secrets_never_shipped():
    """No client secrets or tokens in the package's data."""
    for p in DATA.glob("*.toml"):
        text = p.read_text()
        assert "clientSecret" not in text and "clientId" not in text, p.name
        for pattern in (r"sk_live_[0-9A-Za-z]{10}", r"sk-[A-Za-z0-9]{20}", r"xox[bp]-\d", r"ghp_[A-Za-z0-9]{20}",
                        r"SG\.[A-Za-z0-9_-]{16}"):
            assert not re.search(pattern, text), f"{p.name} holds something that looks like a secret"


# --- the shipped catalog as a workspace serves it (both backends) ----------------------------

def test_builtin_services_served_as_written(backend):
    body = backend.ok("GET", "/v1/integrations", query={"limit": "500"})
    listed = {i["service"]: i for i in body["integrations"]}
    for stem, s in SERVICES.items():
        got = listed[stem]
        assert got["credentialType"] == s["credentialType"], stem
        assert got["envVars"] == s["envVars"], stem
        assert got["operationCount"] == len(s["operations"]), stem
    assert backend.wsctl("catalog", "integrations", "--json").json["integrations"] == body["integrations"][:100]

    sf = backend.ok("GET", "/v1/integrations/salesforce")
    assert sf["fields"] == ["instanceUrl"] and sf["envVars"]["instanceUrl"] == "SALESFORCE_INSTANCE_URL"
    assert sf["authorizeUrl"] == "https://login.salesforce.com/services/oauth2/authorize"
    assert sf["tokenUrl"] == "https://login.salesforce.com/services/oauth2/token" and "api" in sf["scopes"]
    assert "clientSecret" not in sf and sf["oauthClientConfigured"] is False
    tw = backend.ok("GET", "/v1/integrations/twilio")
    assert tw["secretFields"] == ["authToken"] and tw["fields"] == ["accountSid"]

    op = backend.ok("GET", "/v1/operations/slack.chat-post-message")
    assert (op["method"], op["path"]) == ("POST", "/chat.postMessage")
    assert "SLACK_BOT_TOKEN" in op["markdown"] and "channel" in op["markdown"]
    assert backend.ok("GET", "/v1/integrations/stripe/operations/stripe.create-refund")["path"] == "/refunds"


def test_builtin_triggers_served(backend):
    got = {t["triggerId"]: t for t in backend.ok("GET", "/v1/triggers", query={"limit": "500"})["triggers"]}
    for tid, service, t in all_triggers():
        assert got[tid]["type"] == t["type"] and got[tid]["service"] == (service or tid), tid   # generic: its own id
        if t["type"] == "poll":
            assert got[tid]["cadenceSeconds"] == t["cadenceSeconds"], tid
    hits = backend.ok("GET", "/v1/triggers", query={"q": "github"})["triggers"]
    assert "github-new-issue" in {t["triggerId"] for t in hits}
    assert all("github" in (t["service"] or "") + t["name"].lower() + t["description"].lower() for t in hits)


@pytest.mark.parametrize("phrase, op_id", [
    ("send a message to a slack channel", "slack.chat-post-message"),
    ("refund a payment", "stripe.create-refund"),
    ("send a text message to a phone", "twilio.send-message"),
    ("open an issue on github", "github.create-issue"),
    ("weather forecast for a city", "open-meteo.get-forecast"),
])
def test_builtin_operations_found_by_search(backend, phrase, op_id):
    hits = backend.ok("GET", "/v1/operations", query={"q": phrase, "limit": "5"})
    ids = [h["opId"] for h in hits["operations"]]
    assert op_id in ids, (phrase, ids)
