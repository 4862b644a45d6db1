"""`wsctl catalog oauth-client SERVICE --client-id ID`: the secret from stdin (never argv), on both
backends; the client then works for a connection; refusals change nothing."""
from __future__ import annotations

from tests.conftest import ApiResult  # noqa: F401
from tests.vault_helpers import install_service, member_with_session

SECRET = "cs-CANARY-from-stdin"


def test_oauth_client_sets_the_client_from_stdin(backend, provider, local_ws):
    install_service(backend.workspace, provider.service_toml("loopcrm", client_secret=False)
                    .replace(f'clientId = "{provider.client_id}"', ""))
    assert backend.ok("GET", "/v1/integrations/loopcrm").get("oauthClientConfigured") is False
    r = backend.wsctl("vault", "connect", "loopcrm", "--no-open", expect=None)
    assert r.code != 0 and "wsctl catalog oauth-client loopcrm --client-id" in r.err

    r = backend.wsctl("catalog", "oauth-client", "loopcrm", "--client-id", provider.client_id, "--json",
                      input=SECRET + "\n")
    assert SECRET not in r.out + r.err
    detail = backend.ok("GET", "/v1/integrations/loopcrm")
    assert detail["oauthClientConfigured"] is True
    from workspacectl.engine.vault.oauth import provider_config

    ws = local_ws(backend.workspace)
    cfg = provider_config(ws, ws.conn(), "loopcrm")
    assert cfg.client_id == provider.client_id and cfg.client_secret.reveal() == SECRET
    history = backend.ok("GET", "/v1/admin/catalog/history")["changes"]
    assert history[0]["action"] == "oauth-client" and SECRET not in str(history)

    # Refusals: no secret, an apiKey or unknown service, a plain member. Nothing changes.
    r = backend.wsctl("catalog", "oauth-client", "loopcrm", "--client-id", "other", input="\n", expect=7)
    assert "No client secret" in r.err
    backend.wsctl("catalog", "oauth-client", "nope", "--client-id", "x", input="s\n", expect=5)
    _, member = member_with_session(backend, "m@example.com")
    backend.wsctl("catalog", "oauth-client", "loopcrm", "--client-id", "evil", input="s\n", expect=4,
                  env=backend.env_for(member))
    assert provider_config(ws, ws.conn(), "loopcrm").client_id == provider.client_id
    # The id is an option, the secret never is: no --client-secret flag exists.
    backend.wsctl("catalog", "oauth-client", "loopcrm", "--client-id", "x", "--client-secret", "s", expect=2)
