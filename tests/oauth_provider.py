"""A real OAuth2 provider on loopback, for tests (no mocks: our code talks HTTP to it).

    with OAuthProvider() as p:
        p.url                       # http://127.0.0.1:PORT
        p.service_toml("loopcrm")   # a CONTRACT §5 service definition pointing at it
        p.refreshes, p.exchanges    # counters
        p.refresh_times             # time.time() of each refresh grant, in order
        p.revoked                   # tokens revoked at /revoke
        p.mode = "invalid_grant"    # or "ok", "error5xx", "slow"
        p.refresh_delay = 0.3       # seconds the refresh grant sleeps (widens races)
        p.refresh_gate = threading.Event()  # the refresh grant waits until the test sets it
        p.abandon = 1               # ... and then the next 1 held grant is dropped unanswered, nothing rotated
        p.answer_gate = threading.Event()   # a refresh grant rotates the tokens, then waits until the
                                            # test sets it before answering; p.answer_held is set meanwhile
        p.rotate_refresh = True     # a refresh answers a new refresh token (False: omits it)
        p.expires_in_answer = 1e20  # the expires_in its answers carry, any JSON value (None: null);
                                    # unset: the real lifetime, expires_in
        p.client_auth = "basic"     # the only client authentication /token and /revoke accept:
                                    # "basic", "post", "none" (client_id alone); "any" (default): basic or post
        p.body_encoding = "json"    # the only body /token and /revoke accept ("form" or "json"; None: either)
        p.token_calls               # [(path, "basic"|"post"|"none", "form"|"json")] of each /token or /revoke call

Endpoints:
- GET  /authorize: checks client_id, redirect_uri and response_type=code, records the PKCE
  challenge, then auto-consents: 302 to redirect_uri with code and state. A missing PKCE
  challenge is accepted only when `require_pkce` is False.
- POST /token: `authorization_code` (code single use, redirect_uri equal, verifier checked against
  the S256 challenge) and `refresh_token` (token must be current: a rotated-away or revoked one
  is `invalid_grant`). Client authentication by form fields or HTTP Basic (`client_auth`).
- POST /revoke: records the token (RFC 7009; 200). With `client_auth` set (not "any") it checks the
  client as /token does. Both take a form or a JSON body (`body_encoding` restricts it).
- GET  /probe…: 200 for a live access token (or one of `api_keys`) in `Authorization: Bearer`, or
  an `api_keys` password in HTTP Basic; else 401. `outer.requests` records every path called.
Every secret it hands out contains "CANARY" so scans can find leaks.
"""
from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UNSET = object()


class OAuthProvider:
    def __init__(self, client_id: str = "loop-client", client_secret: str | None = None, expires_in: int = 3600,
                 scope: str = "contacts.read contacts.write"):
        self.client_id = client_id
        self.client_secret = client_secret or "cs-CANARY-" + secrets.token_hex(8)
        self.expires_in = expires_in
        self.scope = scope
        self.mode = "ok"
        self.refresh_delay = 0.0
        self.refresh_gate: threading.Event | None = None
        self.abandon = 0
        self.answer_gate: threading.Event | None = None
        self.answer_held = threading.Event()
        self.rotate_refresh = True
        self.require_pkce = True
        self.expires_in_answer = UNSET
        self.client_auth = "any"
        self.body_encoding: str | None = None
        self.token_calls: list[tuple[str, str, str]] = []
        self.refreshes = 0
        self.refresh_times: list[float] = []
        self.exchanges = 0
        self.revoked: list[str] = []
        self.api_keys: set[str] = set()  # keys /probe also accepts (for apiKey services)
        self.issued: list[dict] = []
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self._codes: dict[str, dict] = {}
        self._refresh_tokens: set[str] = set()
        self._access_tokens: dict[str, float] = {}
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    # -- lifecycle
    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- helpers for tests
    def all_secrets(self) -> list[str]:
        """Every secret value this provider knows: client secret, codes, access and refresh tokens."""
        with self.lock:
            out = [self.client_secret, *self._codes, *self._refresh_tokens, *self._access_tokens]
            for body in self.issued:
                out += [body.get("access_token", ""), body.get("refresh_token", "")]
        return sorted({s for s in out if s})

    def grant(self) -> dict:
        """Issue a token pair directly (as if a connection had completed); answers the token body."""
        return self._issue(refresh=None)

    def service_toml(self, service: str = "loopcrm", name: str = "Loop CRM", *, revoke: bool = True,
                     probe: bool = True, client_secret: bool = True, fields: list[str] | None = None,
                     client_auth: str | None = None, token_body: str | None = None) -> str:
        lines = [
            f'service = "{service}"',
            f'name = "{name}"',
            'description = "An OAuth2 CRM served on loopback for tests."',
            'credentialType = "oauth2"',
            'envVars = { accessToken = "LOOPCRM_TOKEN", instanceUrl = "LOOPCRM_URL" }',
            f"fields = {json.dumps(fields or [])}",
            f'baseUrl = "{self.url}"',
        ]
        if probe:
            lines.append('probe = "whoami"')
        lines += [
            "[oauth2]",
            f'authorizeUrl = "{self.url}/authorize"',
            f'tokenUrl = "{self.url}/token"',
            'scopes = ["contacts.read", "contacts.write"]',
            f'clientId = "{self.client_id}"',
        ]
        if client_secret:
            lines.append(f'clientSecret = "{self.client_secret}"')
        if client_auth:
            lines.append(f'clientAuth = "{client_auth}"')
        if token_body:
            lines.append(f'tokenBodyEncoding = "{token_body}"')
        if revoke:
            lines.append(f'revokeUrl = "{self.url}/revoke"')
        lines += [
            "[[operations]]",
            'name = "whoami"',
            'summary = "Who the token belongs to"',
            'method = "GET"',
            'path = "/probe"',
        ]
        return "\n".join(lines) + "\n"

    # -- internals
    def _issue(self, refresh: str | None) -> dict:
        with self.lock:
            at = "oat-CANARY-" + secrets.token_urlsafe(18)
            self._access_tokens[at] = time.time() + self.expires_in
            expires_in = self.expires_in if self.expires_in_answer is UNSET else self.expires_in_answer
            body = {"access_token": at, "token_type": "Bearer", "expires_in": expires_in, "scope": self.scope}
            if refresh is None or self.rotate_refresh:
                rt = "ort-CANARY-" + secrets.token_urlsafe(18)
                self._refresh_tokens.add(rt)
                if refresh is not None:
                    self._refresh_tokens.discard(refresh)
                body["refresh_token"] = rt
            self.issued.append(body)
            return dict(body)

    def _client_ok(self, headers, form: dict) -> tuple[bool, str]:
        """(authenticated, how): HTTP Basic, form/JSON fields, or a public client's id alone."""
        cid, csec = form.get("client_id"), form.get("client_secret")
        auth = headers.get("Authorization") or ""
        how = "post" if csec is not None else "none"
        if auth.startswith("Basic "):
            if cid is not None or csec is not None:
                return False, "basic"   # RFC 6749 2.3: one method per request
            try:
                raw = base64.b64decode(auth[6:]).decode()
                u, _, p = raw.partition(":")
                cid, csec = urllib.parse.unquote_plus(u), urllib.parse.unquote_plus(p)
            except Exception:
                return False, "basic"
            how = "basic"
        allowed = {"any": ("basic", "post")}.get(self.client_auth, (self.client_auth,))
        if how not in allowed or cid != self.client_id:
            return False, how
        return (how == "none" or csec == self.client_secret), how

    def _handler(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, body=None, headers: dict | None = None):
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                u = urllib.parse.urlparse(self.path)
                q = dict(urllib.parse.parse_qsl(u.query))
                outer.requests.append(("GET", u.path))
                if u.path == "/authorize":
                    return self._authorize(q)
                if u.path.startswith("/probe"):
                    auth = self.headers.get("Authorization") or ""
                    token = auth[7:] if auth.startswith("Bearer ") else ""
                    if auth.startswith("Basic "):  # user:password, the password one of api_keys
                        token = base64.b64decode(auth[6:]).decode(errors="replace").partition(":")[2]
                    with outer.lock:
                        exp = outer._access_tokens.get(token)
                    if (exp and exp > time.time() and token not in outer.revoked) or token in outer.api_keys:
                        return self._send(200, {"ok": True, "user": "loop-user"})
                    return self._send(401, {"error": "invalid_token"})
                self._send(404, {"error": "not_found"})

            def _authorize(self, q):
                redirect = q.get("redirect_uri") or ""
                if q.get("client_id") != outer.client_id or not redirect or q.get("response_type") != "code":
                    return self._send(400, {"error": "invalid_request"})
                challenge = q.get("code_challenge")
                if outer.require_pkce and (not challenge or q.get("code_challenge_method") != "S256"):
                    return self._send(400, {"error": "invalid_request", "error_description": "PKCE S256 required"})
                code = "code-CANARY-" + secrets.token_urlsafe(12)
                with outer.lock:
                    outer._codes[code] = {"redirect_uri": redirect, "challenge": challenge, "used": False,
                                          "scope": q.get("scope", "")}
                sep = "&" if "?" in redirect else "?"
                target = redirect + sep + urllib.parse.urlencode({"code": code, "state": q.get("state", "")})
                self._send(302, None, {"Location": target})

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n).decode()
                encoding = "json" if (self.headers.get("Content-Type") or "").startswith("application/json") else "form"
                try:
                    form = json.loads(raw) if encoding == "json" else dict(urllib.parse.parse_qsl(raw))
                except ValueError:
                    form = {}
                form = {str(k): str(v) for k, v in form.items()} if isinstance(form, dict) else {}
                path = urllib.parse.urlparse(self.path).path
                outer.requests.append(("POST", path))
                if path in ("/token", "/revoke"):
                    ok, how = outer._client_ok(self.headers, form)
                    outer.token_calls.append((path, how, encoding))
                    if outer.body_encoding is not None and encoding != outer.body_encoding:
                        return self._send(400, {"error": "invalid_request"})
                    if not ok and (path == "/token" or outer.client_auth != "any"):   # "any": /revoke asks nothing
                        return self._send(401, {"error": "invalid_client"})
                if path == "/revoke":
                    with outer.lock:
                        tok = form.get("token", "")
                        outer.revoked.append(tok)
                        outer._refresh_tokens.discard(tok)
                        outer._access_tokens.pop(tok, None)
                    return self._send(200, {})
                if path != "/token":
                    return self._send(404, {"error": "not_found"})
                grant = form.get("grant_type")
                if grant == "authorization_code":
                    return self._code_grant(form)
                if grant == "refresh_token":
                    return self._refresh_grant(form)
                self._send(400, {"error": "unsupported_grant_type"})

            def _code_grant(self, form):
                with outer.lock:
                    rec = outer._codes.get(form.get("code", ""))
                    if rec is None or rec["used"] or rec["redirect_uri"] != form.get("redirect_uri"):
                        return self._send(400, {"error": "invalid_grant"})
                    rec["used"] = True
                    outer.exchanges += 1
                if rec["challenge"]:
                    verifier = form.get("code_verifier", "")
                    digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
                    if digest != rec["challenge"]:
                        return self._send(400, {"error": "invalid_grant", "error_description": "PKCE verifier mismatch"})
                self._send(200, outer._issue(refresh=None))

            def _refresh_grant(self, form):
                with outer.lock:
                    outer.refreshes += 1
                    outer.refresh_times.append(time.time())
                if outer.refresh_delay:
                    time.sleep(outer.refresh_delay)
                if outer.refresh_gate is not None:
                    outer.refresh_gate.wait(120)
                    with outer.lock:
                        dropped, outer.abandon = outer.abandon > 0, max(0, outer.abandon - 1)
                    if dropped:
                        self.close_connection = True
                        return
                if outer.mode == "error5xx":
                    return self._send(503, {"error": "temporarily_unavailable"})
                rt = form.get("refresh_token", "")
                with outer.lock:
                    valid = rt in outer._refresh_tokens
                if outer.mode == "invalid_grant" or not valid:
                    return self._send(400, {"error": "invalid_grant"})
                answer = outer._issue(refresh=rt)
                if outer.answer_gate is not None:
                    outer.answer_held.set()
                    outer.answer_gate.wait(120)
                try:
                    self._send(200, answer)
                except OSError:   # the caller is gone (a drill killed it): the rotation stands
                    self.close_connection = True

        return Handler
