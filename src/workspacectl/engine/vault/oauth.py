"""Calls to an OAuth2 provider: code exchange (PKCE), refresh, revoke. httpx is imported lazily.

Endpoints come from the integration's setup (tokenUrl, revokeUrl); the client id and the
sealed client secret (AAD "oauth-client:<service>") from its row. The client authenticates as the
definition's `clientAuth` says, for the code exchange, the refresh and the revocation alike:
`client_secret_post` (id and secret in the body, the default), `client_secret_basic` (HTTP Basic,
RFC 6749 §2.3.1: each form-encoded, then base64; the body carries no id) or `none` (a public PKCE
client: the id in the body, never a secret). The body is a form, or JSON when
`tokenBodyEncoding = "json"` (Notion). A provider's answer is never echoed: errors carry only
the HTTP status and, when it is a plain word, the OAuth ``error`` code.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from workspacectl import clock
from workspacectl.engine import crypto
from workspacectl.engine.store import vault as store
from workspacectl.errors import ApiError
from workspacectl.secret import Secret

if TYPE_CHECKING:
    import httpx

    from workspacectl.engine.db.conn import Conn
    from workspacectl.engine.workspaces.folder import Workspace

TIMEOUT_SECONDS = 10.0
# A provider's expires_in beyond this is taken as this: a token that claims to outlive ten years
# is refreshed then, and no number can overflow the clock.
MAX_EXPIRES_IN = 10 * 365 * 24 * 3600
_ERROR_WORD = re.compile(r"^[a-z_]{1,40}$")


class InvalidGrant(ApiError):
    """The provider refused the grant (revoked or expired refresh token): the user must reconnect."""

    def __init__(self, service: str):
        super().__init__("upstream_failed", f"{service} refused the stored grant; reconnect with "
                         f"`wsctl vault connect {service}`.")


class OAuthNotConfigured(ApiError):
    """The catalog lacks what an OAuth call needs (the integration, its client, its token URL).

    An admin's configuration problem, not a provider failure: answered 409 before any provider
    call, and a token refresh records no back-off for it."""

    def __init__(self, message: str):
        super().__init__("conflict", message)


def missing_client(service: str) -> OAuthNotConfigured:
    return OAuthNotConfigured(
        f"The {service} integration has no OAuth client; an owner or admin sets it with `wsctl catalog "
        f"oauth-client {service} --client-id ID` (the secret is read hidden or from stdin), then try again.")


def check_client(conn: Conn, service: str) -> None:
    """Refuse up front (409) when an oauth2 integration has no client id: nothing can be exchanged."""
    client = store.get_oauth_client_sealed(conn, service)
    if client is None or not client["oauth_client_id"]:
        raise missing_client(service)


@dataclass(repr=False)
class TokenSet:
    access_token: Secret
    refresh_token: Secret | None = None
    expires_at: str | None = None
    token_type: str = "Bearer"
    scopes: list[str] | None = None
    fields: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"TokenSet(expires_at={self.expires_at!r}, token_type={self.token_type!r})"

    def secrets(self, previous_refresh: Secret | None = None) -> dict[str, str]:
        """The secrets to store: a refresh token the provider omitted keeps the old one."""
        out = {"accessToken": self.access_token.reveal()}
        rt = self.refresh_token or previous_refresh
        if rt is not None:
            out["refreshToken"] = rt.reveal()
        return out


@dataclass(repr=False)
class ProviderConfig:
    service: str
    token_url: str | None
    revoke_url: str | None
    authorize_url: str | None
    scopes: list[str]
    scope_separator: str
    client_id: str | None
    client_secret: Secret | None
    client_auth: str = "client_secret_post"
    body_encoding: str = "form"

    def __repr__(self) -> str:
        return f"ProviderConfig({self.service!r})"


def provider_config(ws: Workspace, conn: Conn, service: str) -> ProviderConfig:
    integration = store.get_integration(conn, service)
    if integration is None or integration["credential_type"] != "oauth2":
        raise OAuthNotConfigured(f"The catalog has no OAuth integration '{service}' any more; an owner or admin "
                                 "imports it again with `wsctl catalog import FILE`.")
    try:
        setup = json.loads(integration["setup_json"] or "{}")
    except ValueError:
        setup = {}
    client = store.get_oauth_client_sealed(conn, service)
    secret = None
    if client is not None and client["oauth_client_secret"] is not None:
        secret = Secret(crypto.unseal(ws, f"oauth-client:{service}", client["oauth_client_secret"]).decode())
    return ProviderConfig(
        service=service,
        token_url=setup.get("tokenUrl"),
        revoke_url=setup.get("revokeUrl"),
        authorize_url=setup.get("authorizeUrl"),
        scopes=[s for s in setup.get("scopes") or [] if isinstance(s, str)],
        scope_separator=setup.get("scopeSeparator") or " ",
        client_id=client["oauth_client_id"] if client is not None else None,
        client_secret=secret,
        client_auth=setup.get("clientAuth") or "client_secret_post",
        body_encoding=setup.get("tokenBodyEncoding") or "form",
    )


def _client_auth(cfg: ProviderConfig) -> tuple[dict, dict]:
    """(body fields, headers) that authenticate the client, as its definition's clientAuth says."""
    if not cfg.client_id:
        raise missing_client(cfg.service)
    if cfg.client_auth == "none" or (cfg.client_secret is None and cfg.client_auth == "client_secret_post"):
        return {"client_id": cfg.client_id}, {}
    if cfg.client_secret is None:
        raise OAuthNotConfigured(
            f"The {cfg.service} integration authenticates its client with HTTP Basic and needs the client secret; "
            f"an owner or admin sets it with `wsctl catalog oauth-client {cfg.service} --client-id ID` (the secret "
            "is read hidden or from stdin), then try again.")
    if cfg.client_auth == "client_secret_basic":
        import base64
        import urllib.parse

        pair = f"{urllib.parse.quote_plus(cfg.client_id)}:{urllib.parse.quote_plus(cfg.client_secret.reveal())}"
        return {}, {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
    return {"client_id": cfg.client_id, "client_secret": cfg.client_secret.reveal()}, {}


def _post_form(cfg: ProviderConfig, url: str | None, form: dict, what: str) -> httpx.Response:
    if not url:
        raise OAuthNotConfigured(f"The {cfg.service} integration has no {what} URL in the catalog; an owner or "
                                 "admin adds it with `wsctl catalog import FILE`.")
    from workspacectl.engine.catalog.urls import BlockedAddress, pin

    try:
        target = pin(url, f"{cfg.service}'s {what} endpoint")
    except BlockedAddress as e:
        raise OAuthNotConfigured(e.message) from None  # the catalog's fault: no refresh back-off
    import httpx

    from workspacectl.engine.vault import outbound

    fields, headers = _client_auth(cfg)
    body = {**form, **fields}
    sent = {"json": body} if cfg.body_encoding == "json" else {"data": body}
    try:
        return outbound.request("POST", url, target, f"{cfg.service} {what}", timeout=TIMEOUT_SECONDS,
                                headers={"Accept": "application/json", **headers}, **sent)
    except httpx.HTTPError as e:
        raise ApiError("upstream_failed", f"Could not reach {cfg.service}'s {what} endpoint "
                       f"({type(e).__name__}); try again shortly.") from None


def _error_word(resp: httpx.Response) -> str | None:
    try:
        word = resp.json().get("error")
    except (ValueError, AttributeError):
        return None
    return word if isinstance(word, str) and _ERROR_WORD.match(word) else None


def _parse_tokens(cfg: ProviderConfig, resp: httpx.Response) -> TokenSet:
    try:
        body = resp.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        # GitHub answers form-encoded bodies unless asked for JSON; accept both.
        import urllib.parse

        body = dict(urllib.parse.parse_qsl(resp.text or ""))
    if body.get("error"):
        word = body["error"] if isinstance(body["error"], str) and _ERROR_WORD.match(body["error"]) else "error"
        if word == "invalid_grant":
            raise InvalidGrant(cfg.service)
        raise ApiError("upstream_failed", f"{cfg.service}'s token endpoint refused the request ({word}).")
    access = body.get("access_token")
    if not isinstance(access, str) or not access:
        raise ApiError("upstream_failed", f"{cfg.service}'s token endpoint answered without an access token.")
    refresh = body.get("refresh_token")
    expires_at = expiry_from(body.get("expires_in"))
    scope = body.get("scope")
    scopes = None
    if isinstance(scope, str):
        scopes = [s for s in re.split(r"[\s,]+", scope) if s]
    elif isinstance(scope, list):
        scopes = [s for s in scope if isinstance(s, str)]
    fields = {}
    if isinstance(body.get("instance_url"), str):
        fields["instanceUrl"] = body["instance_url"]
    token_type = body.get("token_type")
    token_type = token_type if isinstance(token_type, str) else "Bearer"
    if token_type.lower() == "bearer":
        token_type = "Bearer"
    return TokenSet(Secret(access), Secret(refresh) if isinstance(refresh, str) and refresh else None,
                    expires_at, token_type, scopes, fields)


def expiry_from(expires_in: object) -> str | None:
    """expiresAt for a provider's expires_in (a number, or a numeric string in form-encoded answers).

    Longer than MAX_EXPIRES_IN (1e20, Infinity) -> MAX_EXPIRES_IN. Zero, negative, NaN or not a
    number (true, "abc", a list) -> no expiry, as if the provider had sent none: calling such a token
    expired would refresh it on every request and, with a provider that keeps answering 0, make the
    credential unusable. A token that stops working is renewed with `wsctl vault sync`."""
    if isinstance(expires_in, str):
        try:
            expires_in = float(expires_in.strip())
        except ValueError:
            return None
    if isinstance(expires_in, bool) or not isinstance(expires_in, (int, float)):
        return None
    if expires_in != expires_in or expires_in <= 0:  # NaN, or nothing left
        return None
    seconds = float(min(expires_in, MAX_EXPIRES_IN))  # min first: a huge int does not fit a float
    try:
        return clock.later(seconds)
    except OverflowError:  # a clock shifted (WSCTL_NOW_OFFSET_SECONDS) near year 9999
        return None


def _answer(cfg: ProviderConfig, resp: httpx.Response) -> TokenSet:
    if resp.status_code >= 500:
        raise ApiError("upstream_failed", f"{cfg.service}'s token endpoint answered HTTP {resp.status_code}; "
                       "try again shortly.")
    if resp.status_code >= 400:
        word = _error_word(resp)
        if word == "invalid_grant":
            raise InvalidGrant(cfg.service)
        detail = f" ({word})" if word else ""
        raise ApiError("upstream_failed", f"{cfg.service}'s token endpoint refused the request with HTTP "
                       f"{resp.status_code}{detail}; check the integration's OAuth client settings.")
    return _parse_tokens(cfg, resp)


def exchange_code(ws: Workspace, conn: Conn, service: str, *, code: str, redirect_uri: str, code_verifier: str | None) -> TokenSet:
    """authorization_code grant (with the PKCE verifier when one was used)."""
    cfg = provider_config(ws, conn, service)
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
    if code_verifier:
        form["code_verifier"] = code_verifier
    return _answer(cfg, _post_form(cfg, cfg.token_url, form, "token"))


def refresh(ws: Workspace, conn: Conn, service: str, refresh_token: Secret, scopes: list[str] | None = None) -> TokenSet:
    """refresh_token grant. Raises InvalidGrant when the provider refuses the grant itself."""
    cfg = provider_config(ws, conn, service)
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token.reveal()}
    return _answer(cfg, _post_form(cfg, cfg.token_url, form, "token"))


def revoke(ws: Workspace, conn: Conn, service: str, token: Secret, hint: str = "refresh_token") -> bool:
    """RFC 7009 revocation; answers False when the integration has no revoke URL."""
    cfg = provider_config(ws, conn, service)
    if not cfg.revoke_url:
        return False
    form = {"token": token.reveal(), "token_type_hint": hint}
    resp = _post_form(cfg, cfg.revoke_url, form, "revoke")
    if resp.status_code >= 400 and resp.status_code != 400:
        raise ApiError("upstream_failed", f"{service}'s revoke endpoint answered HTTP {resp.status_code}; "
                       "try again shortly.")
    return True
