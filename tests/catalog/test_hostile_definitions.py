"""The hostile corpus of issue 14 (service definitions, OpenAPI documents, JSON bodies): every case
is a clean 4xx (exit 7 on the command line) on every door, and the catalog is unchanged after it.

Doors: POST /v1/admin/catalog in-process and over HTTP (the `backend` fixture), and the CLI
(`wsctl catalog import FILE`, `wsctl api POST ... --data @FILE`) against each. The documents come
from tests/hostile_docs.py, sized just past each limit of engine/catalog/limits.py.
"""
from __future__ import annotations

import json

from tests import hostile_docs as h
from tests.conftest import ApiResult
from workspacectl.engine.catalog import limits

OAUTH = ('service = "evil"\nname = "Evil"\ncredentialType = "oauth2"\n[oauth2]\n'
         'authorizeUrl = "{authorize}"\ntokenUrl = "{token}"\n{extra}\n')
SAFE = "https://auth.example.com/x"


def oauth_toml(token=SAFE, authorize=SAFE, extra="") -> str:
    return OAUTH.format(token=token, authorize=authorize, extra=extra)


def env_toml(var: str, service: str = "envsvc") -> str:
    return f'service = "{service}"\nname = "Env"\ncredentialType = "apiKey"\nenvVars = {{ apiKey = "{var}" }}\n'


def swagger_oauth(token_url: str) -> str:
    return json.dumps({"swagger": "2.0", "info": {"title": "Sw"}, "host": "api.example.com", "paths": {},
                       "securityDefinitions": {"o": {"type": "oauth2", "flow": "accessCode",
                                                     "authorizationUrl": SAFE, "tokenUrl": token_url}}})


# name -> (file name, document text, HTTP status, words the one-line message holds)
DOCUMENTS = {
    # TOML service definitions
    "toml-syntax": ("a.toml", 'service = "x\n', 400, "not valid TOML"),
    "toml-operations-not-a-list": ("a.toml", 'service="x"\nname="X"\ncredentialType="noAuth"\noperations="all"\n',
                                   400, "'operations' must be an array"),
    "toml-wrong-types": ("a.toml", 'service=5\nname=["X"]\ncredentialType=true\n', 400, "'service' must be a string"),
    "toml-deep-arrays": ("a.toml", "service = \"x\"\nv = " + "[" * 3000 + "]" * 3000 + "\n", 400, "nested too deeply"),
    "toml-env-ld-preload": ("a.toml", env_toml("LD_PRELOAD"), 400, "LD_PRELOAD changes how programs"),
    "toml-env-path": ("a.toml", env_toml("PATH"), 400, "PATH changes how programs"),
    "toml-env-bash-env": ("a.toml", env_toml("BASH_ENV"), 400, "BASH_ENV changes how programs"),
    "toml-env-pythonpath": ("a.toml", env_toml("PYTHONPATH"), 400, "PYTHONPATH changes"),
    "toml-env-node-options": ("a.toml", env_toml("NODE_OPTIONS"), 400, "NODE_OPTIONS changes"),
    "toml-env-proxy": ("a.toml", env_toml("HTTPS_PROXY"), 400, "HTTPS_PROXY changes"),
    "toml-env-lower-case": ("a.toml", env_toml("acme_token"), 400, "[A-Z_][A-Z0-9_]*"),
    "toml-env-default-hijacks": ("a.toml", 'service = "node"\nname = "N"\ncredentialType = "apiKey"\n', 400,
                                 "the default name; set envVars explicitly"),
    "toml-token-url-metadata": ("a.toml", oauth_toml(token="http://169.254.169.254/latest/meta-data/"), 400,
                                "'tokenUrl' is refused: 169.254.169.254"),
    "toml-token-url-decimal": ("a.toml", oauth_toml(token="http://2852039166/token"), 400, "169.254.169.254"),
    "toml-token-url-hex": ("a.toml", oauth_toml(token="http://0xa9fea9fe/token"), 400, "169.254.169.254"),
    "toml-authorize-aws-ipv6": ("a.toml", oauth_toml(authorize="http://[fd00:ec2::254]/x"), 400,
                                "'authorizeUrl' is refused: fd00:ec2::254"),
    "toml-revoke-mapped-ipv6": ("a.toml", oauth_toml(extra='revokeUrl = "http://[::ffff:169.254.169.254]/r"'), 400,
                                "'revokeUrl' is refused: 169.254.169.254"),
    "toml-base-url-gcp-name": ("a.toml", 'service="x"\nname="X"\ncredentialType="noAuth"\n'
                               'baseUrl="http://metadata.google.internal/computeMetadata/v1"\n', 400,
                               "metadata.google.internal is a cloud metadata host"),
    "toml-base-url-link-local-v6": ("a.toml", 'service="x"\nname="X"\ncredentialType="noAuth"\n'
                                    'baseUrl="http://[fe80::1]/"\n', 400, "fe80::1"),
    "toml-too-many-operations": ("a.toml", h.many_operations_toml(limits.MAX_OPERATIONS + 1), 422,
                                 f"{limits.MAX_OPERATIONS + 1:,} operations"),
    "toml-too-many-params": ("a.toml", h.many_params_toml(limits.MAX_PARAMS + 1), 422,
                             f"{limits.MAX_PARAMS + 1:,} parameters"),
    "toml-too-many-values": ("a.toml", h.toml_many_values(limits.MAX_DOCUMENT_NODES + 3), 413, "values"),
    # OpenAPI documents, JSON and YAML
    "openapi-allof-explosion": ("a.json", h.allof_explosion(12, 8, 3), 422, "expands its schemas"),
    "openapi-schema-steps-per-document": ("a.json", h.allof_explosion(3, 6, 300), 422, "the document's schemas"),
    "openapi-too-many-parameters": ("a.json", h.many_parameters(limits.MAX_PARAMS + 1), 422,
                                    f"{limits.MAX_PARAMS + 1:,} parameters"),
    "openapi-too-many-operations": ("a.json", h.many_operations_openapi(limits.MAX_OPERATIONS + 1), 422,
                                    f"{limits.MAX_OPERATIONS + 1:,} operations"),
    "openapi-too-many-values": ("a.json", h.json_many_values(limits.MAX_DOCUMENT_NODES + 3), 413, "values"),
    "openapi-huge-enum": ("a.json", h.huge_enum(limits.MAX_DOCUMENT_NODES + 1), 413, "values"),
    "yaml-billion-laughs": ("a.yaml", h.yaml_bomb(), 413, "aliases expand"),
    "yaml-aliased-path-items": ("a.yaml", h.yaml_paths_bomb(fan=45), 422, "operations, over the limit"),
    "yaml-too-many-values": ("a.yaml", h.yaml_many_scalars(limits.MAX_DOCUMENT_NODES + 1), 413, "values"),
    "json-deep-nesting": ("a.json", h.deep_json(100_000), 400, "nested more than"),
    "yaml-deep-flow-nesting": ("a.yaml", h.deep_yaml(100_000), 400, "nested more than"),
    "yaml-flow-in-json-clothing": ("a.json", '{openapi: "3.0.0", paths: ' + "[" * 50_000 + "]" * 50_000 + "}", 400,
                                   "nested more than"),
    "yaml-unhashable-key": ("a.yaml", 'openapi: "3.0.0"\npaths:\n  ? [a, b]\n  : {get: {}}\n', 400,
                            "not valid JSON or YAML"),
    "yaml-paths-a-list": ("a.yaml", 'openapi: "3.0.0"\ninfo: [1, 2]\npaths: [/a, /b]\n', 400,
                          "'paths' must be an object"),
    "openapi-top-level-list": ("a.json", "[1, 2, 3]", 400, "the top level must be an object"),
    "openapi-version-4": ("a.json", '{"openapi": "4.0", "paths": {}}', 400, "not an OpenAPI 2.0 or 3.x"),
    "openapi-swagger-token-url-metadata": ("a.json", swagger_oauth("http://169.254.169.254/token"), 400,
                                           "'tokenUrl' is refused"),
    "openapi-server-link-local": ("a.json", json.dumps({"openapi": "3.0.0", "info": {"title": "S"},
                                                        "servers": [{"url": "http://169.254.1.1/api"}],
                                                        "paths": {}}), 400, "'baseUrl' is refused"),
    "openapi-lone-surrogate": ("a.json", '{"openapi": "3.0.0", "info": {"title": "A\\ud800"}, "paths": {}}', 400,
                               "lone surrogate"),
    # a NUL spelled as an escape: refused on both stores (PostgreSQL text cannot hold one)
    "openapi-nul-escape": ("a.json", '{"openapi": "3.0.0", "info": {"title": "A"}, "paths": {"/x": {"get": '
                                     '{"operationId": "getX", "summary": "Get\\u0000x"}}}}', 400, "NUL character"),
    "toml-nul-escape": ("a.toml", 'service="x"\nname="X\\u0000"\ncredentialType="noAuth"\n', 400, "NUL character"),
}

# JSON bodies to the route itself: name -> (raw body bytes, status)
BODIES = {
    "body-not-json": (b'{"content": ', 400),
    "body-deep-nesting": (b"[" * 100_000 + b"]" * 100_000, 400),
    "body-too-many-values": (b"[" + b"{}," * 2_000_001 + b"{}]", 413),
    "body-content-not-text": (b'{"content": 5}', 400),
    "body-force-not-bool": (json.dumps({"content": env_toml("ACME_KEY"), "force": "maybe"}).encode(), 400),
    "body-format-unknown": (json.dumps({"content": env_toml("ACME_KEY"), "format": "xml"}).encode(), 400),
    "body-a-list": (b'["content"]', 400),
    "body-bad-service-override": (json.dumps({"content": env_toml("ACME_KEY"), "service": "A B"}).encode(), 400),
}


def catalog_state(backend) -> tuple:
    integrations = backend.ok("GET", "/v1/integrations", query={"limit": "500"})
    changes = backend.ok("GET", "/v1/admin/catalog/history", query={"limit": "500"})
    return integrations, changes


def test_the_corpus_is_large_enough():
    assert len(DOCUMENTS) + len(BODIES) >= 30
    from workspacectl.cli.catalog.commands import MAX_IMPORT_BYTES

    assert MAX_IMPORT_BYTES == limits.MAX_DOCUMENT_BYTES  # the CLI stops reading where the engine refuses


def test_every_hostile_document_is_refused_cleanly_through_the_api(backend):
    before = catalog_state(backend)
    for name, (filename, text, status, words) in DOCUMENTS.items():
        r = backend.api("POST", "/v1/admin/catalog", {"content": text, "filename": filename})
        assert r.status == status, (name, r.status, r.body)
        message = r.body["error"]["message"]
        assert "\n" not in message and message.startswith(filename) and words in message, (name, message)
    for name, (raw, status) in BODIES.items():
        if backend.kind == "local":  # in-process the body arrives parsed, as the server's parser hands it on
            from workspacectl.engine.dispatch import parse_json_body
            from workspacectl.errors import ApiError

            try:
                r = backend.api("POST", "/v1/admin/catalog", parse_json_body(raw))
            except ApiError as e:
                r = ApiResult(e.status, e.body())
        else:
            r = backend.api("POST", "/v1/admin/catalog", raw=raw)
        assert r.status == status and r.code in ("invalid_request", "payload_too_large"), (name, r.status, r.body)
    assert catalog_state(backend) == before


def test_every_hostile_document_is_refused_cleanly_through_the_cli(backend):
    before = catalog_state(backend)
    folder = backend.workspace.parent / "hostile"
    folder.mkdir()
    for name, (filename, text, _status, words) in DOCUMENTS.items():
        f = folder / f"{name}{filename[1:]}"
        f.write_text(text, encoding="utf-8", errors="surrogatepass")
        r = backend.wsctl("catalog", "import", f, expect=7)
        assert words in r.err and r.err.count("\n") == 1 and "Traceback" not in r.err, (name, r.err)
    for name in ("body-content-not-text", "body-force-not-bool", "body-a-list"):
        f = folder / f"{name}.json"
        f.write_bytes(BODIES[name][0])
        r = backend.wsctl("api", "POST", "/v1/admin/catalog", "--data", f"@{f}", expect=7)
        assert "Traceback" not in r.err and r.err.count("\n") == 1, (name, r.err)
    assert catalog_state(backend) == before


def test_oversized_files_stop_at_the_limit_on_every_door(backend):
    """`wsctl catalog import /dev/zero` reads at most the limit and exits 7; the API answers 413."""
    before = catalog_state(backend)
    r = backend.wsctl("catalog", "import", "/dev/zero", expect=7)
    assert r.err == f"error: zero: the document is over {limits.MAX_DOCUMENT_BYTES >> 20} MiB; split the " \
                    "service or trim the document.\n"
    big = "#" + "x" * limits.MAX_DOCUMENT_BYTES + "\n"
    r = backend.api("POST", "/v1/admin/catalog", {"content": big, "filename": "big.toml"})
    assert (r.status, r.code) == (413, "payload_too_large") and "over 16 MiB" in r.body["error"]["message"]
    assert catalog_state(backend) == before


# Within the limits, these hostile shapes import, each in bounded work, with a readable result.
def test_bounded_shapes_import_with_names_not_expansions(backend):
    r = backend.api("POST", "/v1/admin/catalog", {"content": h.ref_cycles(), "filename": "cycles.json",
                                                  "service": "cycles"})
    assert r.status == 201 and r.body["operationCount"] == 2, r.body
    assert backend.ok("GET", "/v1/operations/cycles.a")["response"] in ("A", "B")
    r = backend.api("POST", "/v1/admin/catalog", {"content": h.deep_schema(200), "filename": "deep.json",
                                                  "service": "deep"})
    assert r.status == 201, r.body
    shape = backend.ok("GET", "/v1/operations/deep.deep")["response"]
    assert len(json.dumps(shape)) < 2000       # depth-limited, not 200 levels
    r = backend.api("POST", "/v1/admin/catalog", {"content": h.yaml_paths_bomb(fan=10), "filename": "p.yaml",
                                                  "service": "aliased"})
    assert r.status == 201 and r.body["operationCount"] == 100, r.body
    names = [o["name"] for o in backend.ok("GET", "/v1/integrations/aliased/operations",
                                           query={"limit": "500"})["operations"]]
    assert names[:3] == ["same", "same-2", "same-3"] and len(set(names)) == 100
