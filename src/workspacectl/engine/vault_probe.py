"""Probe a credential: call its integration's probe operation with it and read the answer.

The probe is the operation named by the integration's `probe` (setup), a call on `baseUrl` +
the operation's path. How the secret is presented comes from the integration's `[auth]` table:

    (none)                              Authorization: Bearer <accessToken or the first secret>
    { type = "header", name = "X-Api-Key", prefix = "" , field = "apiKey" }
    { type = "query", name = "api_key", field = "apiKey" }
    { type = "basic", username = "accountSid", password = "authToken" }   (field names)

2xx -> "ok"; 401/403 -> "invalid"; anything else, or no answer -> 502 upstream_failed.
"""
from __future__ import annotations

import base64
import json

from workspacectl.engine.store import vault as store
from workspacectl.errors import ApiError
from workspacectl.secret import Secret

TIMEOUT_SECONDS = 10.0


def probe_target(conn, integration) -> tuple[str, str] | None:
    """(method, url) of the integration's probe, or None when it has none we can call."""
    try:
        setup = json.loads(integration["setup_json"] or "{}")
    except ValueError:
        return None
    name, base = setup.get("probe"), setup.get("baseUrl")
    if not isinstance(name, str) or not isinstance(base, str) or not base:
        return None
    op = store.get_operation(conn, integration["service"], name)
    if op is None or "{" in (op["path"] or ""):
        return None
    return (op["method"] or "GET").upper(), base.rstrip("/") + "/" + (op["path"] or "").lstrip("/")


def _presentation(setup: dict, secrets: dict[str, Secret]) -> tuple[dict, dict]:
    auth = setup.get("auth") if isinstance(setup.get("auth"), dict) else {}
    kind = str(auth.get("type") or "bearer").lower()

    def pick(field: str | None) -> str:
        if field and field in secrets:
            return secrets[field].reveal()
        for name in ("accessToken", "apiKey"):
            if name in secrets:
                return secrets[name].reveal()
        for name in sorted(secrets):
            if name != "refreshToken":
                return secrets[name].reveal()
        return ""

    if kind == "header":
        prefix = auth.get("prefix") if isinstance(auth.get("prefix"), str) else ""
        return {str(auth.get("name") or "Authorization"): prefix + pick(auth.get("field"))}, {}
    if kind == "query":
        return {}, {str(auth.get("name") or "api_key"): pick(auth.get("field"))}
    if kind == "basic":
        user = pick(auth.get("username")) if auth.get("username") in secrets else str(auth.get("username") or "")
        pw = pick(auth.get("password"))
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()}, {}
    return {"Authorization": "Bearer " + pick(None)}, {}


def run_probe(conn, integration, secrets: dict[str, Secret]) -> str | None:
    """'ok' or 'invalid' from the provider's answer; None when the integration has no probe."""
    target = probe_target(conn, integration)
    if target is None:
        return None
    method, url = target
    try:
        setup = json.loads(integration["setup_json"] or "{}")
    except ValueError:
        setup = {}
    headers, params = _presentation(setup, secrets)
    import httpx

    try:
        with httpx.Client(timeout=TIMEOUT_SECONDS, follow_redirects=False) as client:
            resp = client.request(method, url, headers={"Accept": "application/json", **headers}, params=params)
    except httpx.HTTPError as e:
        raise ApiError("upstream_failed", f"Could not reach {integration['service']} to probe the credential "
                       f"({type(e).__name__}); try again shortly.") from None
    if 200 <= resp.status_code < 300:
        return "ok"
    if resp.status_code in (401, 403):
        return "invalid"
    raise ApiError("upstream_failed", f"{integration['service']} answered the probe with HTTP {resp.status_code}; "
                   "try again shortly.")
