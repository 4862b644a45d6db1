"""Probe a credential: call its integration's probe operation with it and read the answer.

The probe is the operation named by the integration's `probe`, a call on `baseUrl` + the
operation's path; `{field}` placeholders in either are filled from the credential's non-secret
fields (matched case-insensitively: `{AccountSid}` takes `accountSid`). How the secret is
presented comes from the integration's `[auth]` table:

    type = "bearer"   (default)  Authorization: Bearer <accessToken | apiKey | the first secret>
    type = "header",  name = "x-api-key", prefix = "", field = "apiKey"
    type = "query",   name = "api_key", field = "apiKey"
    type = "basic",   username = "accountSid", password = "authToken"   (field or secret names)
    headers = { "anthropic-version" = "2023-06-01" }                     (sent as well)

2xx -> "ok". 401/403 -> "invalid" when the presentation is known (an OAuth token, or an
`[auth]` table); for an apiKey service without `[auth]` the Bearer form is a guess, so a refusal
proves nothing and the probe is inconclusive (None), as is any other 4xx. A 5xx or no answer
-> 502 upstream_failed.
"""
from __future__ import annotations

import base64
import json
import re
import sqlite3
from typing import TYPE_CHECKING

from workspacectl.engine.store import vault as store
from workspacectl.errors import ApiError
from workspacectl.secret import Secret

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

TIMEOUT_SECONDS = 10.0
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_]+)\}")


def _fill(template: str, fields: dict) -> str | None:
    lower = {k.lower(): v for k, v in fields.items() if isinstance(v, str) and v}
    missing = False

    def sub(m: re.Match) -> str:
        nonlocal missing
        value = lower.get(m.group(1).lower())
        if value is None:
            missing = True
            return ""
        return value

    out = _PLACEHOLDER.sub(sub, template)
    return None if missing else out


def probe_target(conn: Conn, integration: sqlite3.Row, fields: dict) -> tuple[str, str] | None:
    """(method, url) of the integration's probe, or None when it has none we can call."""
    try:
        setup = json.loads(integration["setup_json"] or "{}")
    except ValueError:
        return None
    name, base = setup.get("probe"), setup.get("baseUrl")
    if not isinstance(name, str) or not isinstance(base, str) or not base:
        return None
    op = store.get_operation(conn, integration["service"], name)
    if op is None:
        return None
    url = _fill(base.rstrip("/") + "/" + (op["path"] or "").lstrip("/"), fields)
    if url is None or not url.startswith(("http://", "https://")):
        return None
    return (op["method"] or "GET").upper(), url


def presentation(auth: dict, secrets: dict[str, Secret], fields: dict) -> tuple[dict, dict]:
    """(headers, query parameters) that present the credential as `auth` (the [auth] table) says:
    the probe's and the proxy's one way."""
    kind = str(auth.get("type") or "bearer").lower()

    def value(name: object) -> str:
        if isinstance(name, str) and name in secrets:
            return secrets[name].reveal()
        if isinstance(name, str) and isinstance(fields.get(name), str):
            return fields[name]
        for n in ("accessToken", "apiKey"):
            if n in secrets:
                return secrets[n].reveal()
        return next((secrets[n].reveal() for n in sorted(secrets) if n != "refreshToken"), "")

    extra = {str(k): str(v) for k, v in (auth.get("headers") or {}).items()} \
        if isinstance(auth.get("headers"), dict) else {}
    if kind == "header":
        prefix = auth.get("prefix")
        prefix = prefix if isinstance(prefix, str) else ""
        return {**extra, str(auth.get("name") or "Authorization"): prefix + value(auth.get("field"))}, {}
    if kind == "query":
        return extra, {str(auth.get("name") or "api_key"): value(auth.get("field"))}
    if kind == "basic":
        pair = f"{value(auth.get('username'))}:{value(auth.get('password'))}"
        return {**extra, "Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}, {}
    return {**extra, "Authorization": "Bearer " + value(None)}, {}


def run_probe(conn: Conn, integration: sqlite3.Row, secrets: dict[str, Secret], fields: dict, credential_type: str) -> str | None:
    """'ok' or 'invalid' from the provider's answer; None when there is no probe or it proves nothing."""
    target = probe_target(conn, integration, fields)
    if target is None:
        return None
    method, url = target
    try:
        setup = json.loads(integration["setup_json"] or "{}")
    except ValueError:
        setup = {}
    auth = setup.get("auth") if isinstance(setup.get("auth"), dict) else {}
    known = credential_type == "oauth2" or bool(auth)
    from workspacectl.engine.catalog.urls import pin

    pinned = pin(url, f"{integration['service']}'s probe")  # before any secret is read into a header
    headers, params = presentation(auth, secrets, fields)
    import httpx

    from workspacectl.engine.vault import outbound

    try:
        resp = outbound.request(method, url, pinned, f"{integration['service']} probe", timeout=TIMEOUT_SECONDS,
                                headers={"Accept": "application/json", **headers}, params=params)
    except httpx.HTTPError as e:
        raise ApiError("upstream_failed", f"Could not reach {integration['service']} to probe the credential "
                       f"({type(e).__name__}); try again shortly.") from None
    if 200 <= resp.status_code < 300:
        return "ok"
    if resp.status_code in (401, 403):
        return "invalid" if known else None
    if resp.status_code >= 500:
        raise ApiError("upstream_failed", f"{integration['service']} answered the probe with HTTP "
                       f"{resp.status_code}; try again shortly.")
    return None
