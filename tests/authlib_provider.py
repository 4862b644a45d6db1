"""A real OAuth 2 authorization server for the vault tests: Authlib's Flask integration, configured
as Authlib documents it, served by werkzeug on 127.0.0.1 in a thread (started once per session:
tests/conftest.py `authlib_server`). Not a fake: Authlib decides every grant, client
authentication, PKCE check, rotation and revocation.

    server = AuthlibServer()            # .url, .close()
    c = server.register_client("client_secret_basic", lifetime=3600)   # or client_secret_post, none
    c.client_id, c.client_secret        # None for a public (none) client
    server.service_toml("svc", c)       # a service definition pointing at it (clientAuth = c's method)
    c.refresh_attempts                  # refresh_token grants this client sent (answered or not)
    c.grants                            # [(grant_type, auth_method)] of each token issued
    c.revocations                       # [auth_method] of each RFC 7009 revocation it sent
    server.revoke_grant(c)              # the user revokes the app at the provider: every token dies
    server.token_state(access_token)    # "active" | "revoked" | "expired" | "unknown"

Endpoints: GET /.well-known/oauth-authorization-server (RFC 8414 metadata; its
token_endpoint_auth_methods_supported is `server.metadata_methods`), GET /oauth/authorize (the user "alice" consents at once), POST /oauth/token
(authorization_code with PKCE, refresh_token with rotation: each refresh answers a new refresh
token and revokes the old one, RFC 6749 §6 / RFC 9700 §4.14.2), POST /oauth/revoke (RFC 7009),
GET /api/me (a protected resource: 200 for a live access token, 401 otherwise). Each client is
registered with one `token_endpoint_auth_method` (RFC 7591) and authenticates with it alone at
every endpoint. Every secret it hands out contains "CANARY" (tests/vault_helpers.py scans).
"""
from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field

SCOPES = "profile contacts"


@dataclass
class User:
    id: int = 1
    name: str = "alice"

    def get_user_id(self):
        return self.id


@dataclass
class Client:
    client_id: str
    client_secret: str | None
    token_endpoint_auth_method: str
    lifetime: int
    refresh_attempts: int = 0
    grants: list = field(default_factory=list)
    revocations: list = field(default_factory=list)

    # ClientMixin (authlib.oauth2.rfc6749.models), implemented as its docstrings describe
    def get_client_id(self):
        return self.client_id

    def get_default_redirect_uri(self):
        return None

    def get_allowed_scope(self, scope):
        allowed = set(SCOPES.split())
        return " ".join(s for s in (scope or "").split() if s in allowed)

    def check_redirect_uri(self, redirect_uri):
        return isinstance(redirect_uri, str) and redirect_uri.startswith("http://127.0.0.1:") \
            and redirect_uri.endswith("/connect/callback")

    def check_client_secret(self, client_secret):
        return self.client_secret is not None and secrets.compare_digest(self.client_secret, client_secret)

    def check_endpoint_auth_method(self, method, endpoint):
        return method == self.token_endpoint_auth_method   # one method, at the token and revocation endpoints

    def check_response_type(self, response_type):
        return response_type == "code"

    def check_grant_type(self, grant_type):
        return grant_type in ("authorization_code", "refresh_token")


@dataclass
class AuthorizationCode:
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    code_challenge: str | None
    code_challenge_method: str | None
    user: User
    auth_time: float = field(default_factory=time.time)

    def get_redirect_uri(self):
        return self.redirect_uri

    def get_scope(self):
        return self.scope

    def get_auth_time(self):
        return self.auth_time

    def get_nonce(self):
        return None


@dataclass
class Token:
    client_id: str
    access_token: str
    refresh_token: str | None
    scope: str
    expires_in: int
    user: User
    issued_at: float = field(default_factory=time.time)
    access_revoked: bool = False
    refresh_revoked: bool = False

    # TokenMixin
    def check_client(self, client):
        return client.get_client_id() == self.client_id

    def get_scope(self):
        return self.scope

    def get_expires_in(self):
        return self.expires_in

    def is_expired(self):
        return time.time() >= self.issued_at + self.expires_in

    def is_revoked(self):
        return self.access_revoked

    def get_user(self):
        return self.user

    def get_client(self):
        return None


class AuthlibServer:
    def __init__(self):
        from authlib.integrations.flask_oauth2 import AuthorizationServer, ResourceProtector, current_token
        from authlib.oauth2 import OAuth2Error
        from authlib.oauth2.rfc6749 import grants
        from authlib.oauth2.rfc6750 import BearerTokenGenerator, BearerTokenValidator
        from authlib.oauth2.rfc7009 import RevocationEndpoint
        from authlib.oauth2.rfc7636 import CodeChallenge
        from flask import Flask, jsonify, request
        from werkzeug.serving import make_server

        self.lock = threading.Lock()
        self.user = User()
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.by_access: dict[str, Token] = {}
        self.by_refresh: dict[str, Token] = {}
        self.metadata_methods = ["client_secret_basic"]   # what its RFC 8414 metadata says the token endpoint takes
        outer = self
        methods = ["client_secret_basic", "client_secret_post", "none"]

        class CodeGrant(grants.AuthorizationCodeGrant):
            TOKEN_ENDPOINT_AUTH_METHODS = methods

            def save_authorization_code(self, code, request):
                data = request.payload.data
                with outer.lock:
                    outer.codes[code] = AuthorizationCode(
                        code, request.client.client_id, request.payload.redirect_uri, request.payload.scope or "",
                        data.get("code_challenge"), data.get("code_challenge_method"), request.user)

            def query_authorization_code(self, code, client):
                item = outer.codes.get(code)
                return item if item is not None and item.client_id == client.client_id else None

            def delete_authorization_code(self, authorization_code):
                with outer.lock:
                    outer.codes.pop(authorization_code.code, None)

            def authenticate_user(self, authorization_code):
                return authorization_code.user

        class RotatingRefreshGrant(grants.RefreshTokenGrant):
            TOKEN_ENDPOINT_AUTH_METHODS = methods
            INCLUDE_NEW_REFRESH_TOKEN = True    # rotation: each refresh answers a new refresh token

            def authenticate_refresh_token(self, refresh_token):
                token = outer.by_refresh.get(refresh_token)
                return token if token is not None and not token.refresh_revoked else None

            def authenticate_user(self, refresh_token):
                return refresh_token.user

            def revoke_old_credential(self, refresh_token):
                with outer.lock:
                    refresh_token.refresh_revoked = True

        class Revocation(RevocationEndpoint):
            CLIENT_AUTH_METHODS = methods

            def query_token(self, token_string, token_type_hint):
                if token_type_hint == "access_token":
                    return outer.by_access.get(token_string)
                return outer.by_refresh.get(token_string) or outer.by_access.get(token_string)

            def revoke_token(self, token, request):
                with outer.lock:
                    token.access_revoked = token.refresh_revoked = True   # the grant goes with either token
                    outer.clients[token.client_id].revocations.append(request.auth_method)

        def save_token(token, request):
            client = request.client
            with outer.lock:
                item = Token(client.client_id, token["access_token"], token.get("refresh_token"),
                             token.get("scope", ""), token["expires_in"], request.user or outer.user)
                outer.by_access[item.access_token] = item
                if item.refresh_token:
                    outer.by_refresh[item.refresh_token] = item
                client.grants.append((request.payload.grant_type, request.auth_method))

        def query_client(client_id):
            return outer.clients.get(client_id)

        app = Flask("authlib-test-provider")
        server = AuthorizationServer(app, query_client=query_client, save_token=save_token)
        server.register_token_generator("default", BearerTokenGenerator(
            lambda **kw: "aat-CANARY-" + secrets.token_urlsafe(24),
            lambda **kw: "art-CANARY-" + secrets.token_urlsafe(24),
            lambda client, grant_type: client.lifetime))
        server.register_grant(CodeGrant, [CodeChallenge(required=True)])
        server.register_grant(RotatingRefreshGrant)
        server.register_endpoint(Revocation)
        protect = ResourceProtector()

        class Validator(BearerTokenValidator):
            def authenticate_token(self, token_string):
                return outer.by_access.get(token_string)

        protect.register_token_validator(Validator())

        @app.get("/oauth/authorize")
        def authorize():   # the consent page's two steps, the user consenting at once
            try:
                grant = server.get_consent_grant(end_user=outer.user)
            except OAuth2Error as error:
                return server.handle_error_response(None, error)
            return server.create_authorization_response(grant=grant, grant_user=outer.user)

        @app.post("/oauth/token")
        def issue():
            if request.form.get("grant_type") == "refresh_token":
                auth = request.authorization
                client = outer.clients.get(auth.username if auth is not None and auth.username
                                           else request.form.get("client_id", ""))
                if client is not None:
                    with outer.lock:
                        client.refresh_attempts += 1
            return server.create_token_response()

        @app.post("/oauth/revoke")
        def revoke():
            return server.create_endpoint_response(Revocation.ENDPOINT_NAME)

        @app.get("/.well-known/oauth-authorization-server")
        def metadata():   # RFC 8414, checked by Authlib's own model of it
            from authlib.oauth2.rfc8414 import AuthorizationServerMetadata

            meta = AuthorizationServerMetadata({
                "issuer": outer.url, "authorization_endpoint": f"{outer.url}/oauth/authorize",
                "token_endpoint": f"{outer.url}/oauth/token", "revocation_endpoint": f"{outer.url}/oauth/revoke",
                "response_types_supported": ["code"], "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": outer.metadata_methods,
            })
            meta.validate()
            return jsonify(dict(meta))

        @app.get("/api/me")
        @protect("profile")
        def me():
            return jsonify(user=outer.user.name, client=current_token.client_id)

        self._httpd = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self._httpd.server_port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True, name="authlib-server")
        self._thread.start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def register_client(self, method: str, lifetime: int = 3600) -> Client:
        cid = "client-" + secrets.token_hex(6)
        secret = None if method == "none" else "acs-CANARY-" + secrets.token_urlsafe(18)
        client = Client(cid, secret, method, lifetime)
        with self.lock:
            self.clients[cid] = client
        return client

    def service_toml(self, service: str, client: Client, *, client_auth: bool = True, issuer: bool = False) -> str:
        lines = [
            f'service = "{service}"', 'name = "Authlib Provider"',
            'description = "A real Authlib authorization server on loopback, for tests."',
            'credentialType = "oauth2"', f'envVars = {{ accessToken = "{service.upper().replace("-", "_")}_TOKEN" }}',
            f'baseUrl = "{self.url}/api"', 'probe = "me"',
            "[oauth2]",
            f'authorizeUrl = "{self.url}/oauth/authorize"', f'tokenUrl = "{self.url}/oauth/token"',
            f'revokeUrl = "{self.url}/oauth/revoke"', f'scopes = {SCOPES.split()!r}'.replace("'", '"'),
            f'clientId = "{client.client_id}"',
        ]
        if client_auth:
            lines.append(f'clientAuth = "{client.token_endpoint_auth_method}"')
        if issuer:
            lines.append(f'issuer = "{self.url}"')
        if client.client_secret is not None:
            lines.append(f'clientSecret = "{client.client_secret}"')
        lines += ["[[operations]]", 'name = "me"', 'summary = "Who the token belongs to"', 'method = "GET"',
                  'path = "/me"']
        return "\n".join(lines) + "\n"

    def revoke_grant(self, client: Client) -> None:
        """The user revokes the app's access at the provider: every token of the client dies."""
        with self.lock:
            for token in self.by_access.values():
                if token.client_id == client.client_id:
                    token.access_revoked = token.refresh_revoked = True

    def token_state(self, access_token: str) -> str:
        token = self.by_access.get(access_token)
        if token is None:
            return "unknown"
        return "revoked" if token.access_revoked else "expired" if token.is_expired() else "active"

    def refresh_state(self, refresh_token: str) -> str:
        token = self.by_refresh.get(refresh_token)
        return "unknown" if token is None else "revoked" if token.refresh_revoked else "active"

    def all_secrets(self) -> list[str]:
        with self.lock:
            out = [c.client_secret for c in self.clients.values() if c.client_secret]
            out += list(self.codes) + list(self.by_access) + list(self.by_refresh)
        return out
