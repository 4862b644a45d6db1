"""No secret in any log line, outbound calls included (issue: secrets through side doors).

The HTTP library logged every outbound URL whole at INFO, so a service taking its key in the query
string left the key in the server log after `vault sync`. Every outbound path (code exchange,
refresh, revoke, probe) is driven here with a canary secret in every placement (header, query,
body, basic, bearer); the canary scan then reads every server log, workspace file and command
output. Our own outbound log line is checked to name host and path, never the query."""
from __future__ import annotations

import re

import pytest

from tests.connect_helpers import path_of
from tests.vault_helpers import (
    APIKEY_TOML,
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
    make_credential,
    oauth_credential,
)

pytestmark = pytest.mark.usefixtures("canary_scan")

PLACEMENTS = {
    "bearer": 'auth = { type = "bearer" }',
    "header": 'auth = { type = "header", name = "x-api-key", field = "apiKey" }',
    "query": 'auth = { type = "query", name = "api_key", field = "apiKey" }',
    "basic": 'auth = { type = "basic", username = "apiKey", password = "apiKey" }',
}


def server_log(backend) -> str:
    return backend.server.log_text() if backend.server else ""


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_a_probe_logs_host_and_path_and_never_the_key(backend, provider, placement):
    toml = APIKEY_TOML.format(base=provider.url).replace('auth = { type = "bearer" }', PLACEMENTS[placement])
    install_service(backend.workspace, toml)
    key = f"sk-CANARY-{placement}"
    cred = make_credential(backend.workspace, backend.owner["id"], "keysvc", {"apiKey": key})
    r = backend.api("POST", f"/v1/vault/credentials/{cred['id']}/sync")
    assert r.status == 200, r.body
    assert any(p.startswith("/probe") for _, p in provider.requests)
    if backend.kind == "remote":
        log = server_log(backend)
        assert re.search(r"outbound GET 127\.0\.0\.1:\d+ /probe for keysvc probe -> \d{3}", log), log[-2000:]
        assert "api_key=" not in log and "HTTP Request" not in log


def test_refresh_and_revoke_log_no_token_or_client_secret(backend, provider):
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    cred, _grant = oauth_credential(backend, provider, expires_in=10)     # inside the refresh margin
    got = backend.api("POST", f"/v1/credentials/{cred['id']}/token", {"reason": "canary"})
    assert got.status == 200 and provider.refreshes == 1
    assert backend.api("POST", f"/v1/vault/credentials/{cred['id']}/sync").status == 200
    assert backend.api("DELETE", f"/v1/vault/credentials/{cred['id']}").status == 204
    assert provider.revoked, "the revoke call went out"
    if backend.kind == "remote":
        log = server_log(backend)
        for what in ("POST .* /token for loopcrm token", "POST .* /revoke for loopcrm revoke",
                     "GET .* /probe for loopcrm probe"):
            assert re.search("outbound " + what, log), (what, log[-2000:])


def test_the_code_exchange_logs_no_code_or_secret(door, provider):
    install_service(door.backend.workspace, provider.service_toml("loopcrm"))
    c = door.connect("loopcrm")
    _b, page = door.browser(path_of(c["connectUrl"]))
    assert page.status_code == 200 and provider.exchanges == 1
    assert door.status(c["id"])["status"] == "connected"
    if door.backend.kind == "remote":
        log = server_log(door.backend)
        assert re.search(r"outbound POST 127\.0\.0\.1:\d+ /token for loopcrm token", log), log[-2000:]
        assert "code=" not in log and "client_secret" not in log
