"""Issue 26's audit items on every door: the 405 answer, the file-removal message, the catalog
import's content sniffing (docs/api.md §1 Errors, §7.4, §4.4)."""
from __future__ import annotations

import json

from tests.api_helpers import assert_error


def test_wrong_method_is_405_with_allow_and_its_own_code(backend):
    """A path that exists with another method: 405 method_not_allowed, the methods it takes in the
    message and in `Allow` (on every door: the local backend's Response carries the header too)."""
    cases = {("PUT", "/v1/members"): "GET, POST", ("PATCH", "/v1/keys"): "GET, POST",
             ("POST", "/v1/projects/proj_x"): "GET, PATCH", ("DELETE", "/v1/triggers"): "GET",
             ("POST", "/v1/projects/proj_x/files"): "DELETE, GET"}
    for (method, path), allowed in cases.items():
        r = backend.api(method, path, body={})
        assert_error(r, 405, "method_not_allowed")
        assert r.headers.get("allow") == allowed, (method, path, r.headers)
        assert r.body["error"]["message"] == f"{method} is not supported on {path}; it takes {allowed}."
    # an unknown path stays 404 (no Allow), and the scope check comes after the route is matched
    r = backend.api("PUT", "/v1/nothing-here", body={})
    assert_error(r, 404, "not_found")
    assert "allow" not in r.headers
    r = backend.api("PUT", "/v1/members", body={}, secret="")
    assert_error(r, 405, "method_not_allowed")
    # the CLI exits 5 with the one line, on every door
    out = backend.wsctl("api", "PUT", "/members", expect=5)
    assert out.err.strip() == "error: PUT is not supported on /v1/members; it takes GET, POST.", out.err


def test_wrong_method_on_the_http_layer(backend):
    """Methods the engine never sees (HEAD, OPTIONS) and pages outside /v1: the same code and Allow."""
    if backend.kind != "remote":
        return
    http = backend._http
    auth = {"Authorization": f"Bearer {backend.owner_token}"}
    r = http.request("OPTIONS", "/v1/members", headers=auth)
    assert_error(r, 405, "method_not_allowed")
    assert r.headers["allow"] == "GET, POST"
    r = http.request("OPTIONS", "/v1/nothing-here", headers=auth)
    assert_error(r, 404, "not_found")
    r = http.request("HEAD", "/v1/members", headers=auth)
    assert r.status_code == 405 and r.headers["allow"] == "GET, POST" and not r.content
    for method, path in (("POST", "/healthz"), ("DELETE", "/"), ("PUT", "/signin/x")):
        r = http.request(method, path)
        assert_error(r, 405, "method_not_allowed")
        assert "GET" in r.headers["allow"].split(", "), (path, r.headers)
        assert r.json()["error"]["message"].startswith(f"{method} is not supported on {path}; it takes ")


def test_removing_a_file_without_path_says_what_to_send(backend):
    pid = backend.ok("POST", "/v1/projects", {"name": "Paths"})["project"]["id"]
    for query in (None, {"path": ""}):
        r = backend.api("DELETE", f"/v1/projects/{pid}/files", query=query)
        assert_error(r, 400, "invalid_request", "Say which file to remove: query parameter 'path' is required, "
                                                "a path as the file list shows it (?path=docs/readme.md).")
    r = backend.api("DELETE", f"/v1/projects/{pid}/files", query={"path": "../x"})
    assert_error(r, 400, "invalid_request")
    assert "None" not in r.body["error"]["message"]


OPENAPI = {"info": {"title": "Sniffed Shop", "version": "1", "description": "d" * 5000},
           "servers": [{"url": "https://api.sniffed.example/v1"}],
           "paths": {"/orders": {"get": {"operationId": "listOrders", "summary": "List orders", "responses": {}}}},
           "openapi": "3.0.3"}   # the version key last, past the first 4,000 characters


def test_catalog_import_sniffs_json_and_yaml_openapi(backend):
    """No `format` and no `filename`: a JSON document (minified or not, keys in any order) and a
    YAML one whose `openapi:` key is not near the top are read as OpenAPI, not as TOML."""
    import yaml

    for i, text in enumerate((json.dumps(OPENAPI, separators=(",", ":")), json.dumps(OPENAPI, indent=2),
                              yaml.safe_dump(OPENAPI, sort_keys=False))):
        doc = text.replace("api.sniffed.example", f"api.shop{i}.example")
        r = backend.api("POST", "/v1/admin/catalog", {"content": doc})
        assert r.status == 201, (i, r.body)
        assert r.body["service"] == f"shop{i}" and r.body["operationCount"] == 1, r.body
    # a service definition is still read as TOML, and a TOML error still reads as one
    toml = 'service = "sniff-toml"\nname = "T"\ncredentialType = "noAuth"\n'
    assert backend.api("POST", "/v1/admin/catalog", {"content": toml}).status == 201
    r = backend.api("POST", "/v1/admin/catalog", {"content": "service = \n"})
    assert_error(r, 400, "invalid_request")
    assert "TOML" in r.body["error"]["message"] or "toml" in r.body["error"]["message"], r.body
