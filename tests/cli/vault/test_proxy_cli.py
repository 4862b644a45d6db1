"""`wsctl vault proxy` through the real CLI on every door, against a real loopback service."""
from __future__ import annotations

import hashlib
import json

import pytest

from tests.proxy_upstream import Upstream
from tests.vault.test_proxy import HEADER_TOML, KEY
from tests.vault_helpers import install_service, make_credential


@pytest.fixture
def upstream():
    with Upstream() as up:
        yield up


def test_vault_proxy_cli(backend, upstream, tmp_path):
    service = install_service(backend.workspace, HEADER_TOML.format(base=upstream.url + "/api"))
    cred = make_credential(backend.workspace, backend.owner["id"], service, {"apiKey": KEY})
    name = cred["name"]
    upstream.accept = lambda r: r.headers.get("x-api-key") == KEY

    # -i: the service's status and headers, then its body; what must not cross is gone
    r = backend.wsctl("vault", "proxy", name, "get", "/echo/x?a=1", "-f", "b=2", "-H", "X-Custom: kept",
                      "--reason", "cli test", "-i")
    head, _, body = r.out.partition("\n\n")
    assert head.splitlines()[0] == "HTTP/1.1 200 OK" and "X-Kept: yes" in head and "Set-Cookie" not in head
    assert json.loads(body)["query"] == "a=1&b=2" and upstream.requests[-1].headers["x-custom"] == "kept"

    # --input: a file's bytes streamed as the body, whole
    data = bytes(range(256)) * 4096
    (tmp_path / "body.bin").write_bytes(data)
    r = backend.wsctl("vault", "proxy", cred["id"], "POST", "echo", "--input", tmp_path / "body.bin", "--reason", "envoi é")
    assert json.loads(r.out)["sha256"] == hashlib.sha256(data).hexdigest()
    assert upstream.requests[-1].headers.get("content-length") == str(len(data))
    r = backend.wsctl("vault", "proxy", name, "PUT", "echo", "--input", "-", "--reason", "stdin", input="hello")
    assert json.loads(r.out)["length"] == 5 and upstream.requests[-1].method == "PUT"   # stdin: sent chunked

    # --paginate: the cursor the definition names, each page filtered by --jq; Link headers
    r = backend.wsctl("vault", "proxy", name, "GET", "cursor", "--paginate", "--jq", ".items[]", "--reason", "pages")
    assert r.out.split() == ["c1", "c2", "c3"]
    r = backend.wsctl("vault", "proxy", name, "GET", "pages", "--paginate", "--reason", "pages")
    assert [json.loads(line) for line in r.out.split("\n") if line.strip()] == [[{"page": 1}], [{"page": 2}],
                                                                                [{"page": 3}]]
    before = len(upstream.requests)
    # the service's error: its body printed as sent (--jq or not), exit 1; a path leaving the base URL:
    # refused here, exit 7
    r = backend.wsctl("vault", "proxy", name, "GET", "missing", "--reason", "x", "--jq", ".path", expect=1)
    assert json.loads(r.out)["error"] == "no such path" and "HTTP 404" in r.err
    r = backend.wsctl("vault", "proxy", name, "GET", "a/../../x", "--reason", "x", expect=7)
    assert "Nothing was sent" in r.err and len(r.err.strip().splitlines()) == 1
    assert len(upstream.requests) == before + 1
    log = backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"]
    assert [(e["method"], e["path"], e["upstreamStatus"], e["reason"]) for e in log[:3]] == [
        ("GET", "/missing", 404, "x"), ("GET", "/pages", 200, "pages"), ("GET", "/pages", 200, "pages")]
    assert len(log) == 10   # -i, POST, PUT, 3 cursor pages, 3 Link pages, the 404; nothing for the refusal
    assert [e["reason"] for e in log if e["method"] == "POST"] == ["envoi é"]   # UTF-8 in the header
    r = backend.wsctl("vault", "log", name)
    assert "GET /missing -> 404" in r.out and "POST /echo -> 200" in r.out and "proxied" in r.out
