"""The authenticated proxy: `GET|POST|PUT|PATCH|DELETE /v1/credentials/:id/proxy/{path}` (issue 30).

The call is made here, with the credential presented as its service's `[auth]` says, so the
secret never leaves the server (docs/api.md "Authenticated proxy"). In order:

1. The reason (`X-Wsctl-Reason` header, else the `reason` query parameter, 1-500 characters).
2. The credential, looked up as a token issue looks it up (404 when invisible; a viewer's call is
   logged `refused` and answered 403; `needs_reconnect` is 502); an OAuth token due for refresh
   is refreshed first (token_refresh.ensure_fresh: single flight).
3. The target (proxy_target.py): base URL + path, on the base URL's host only; its address
   checked and pinned (catalog.urls.pin: no link-local or cloud metadata address). A refusal is
   logged `refused` and answered 400 or 409; nothing is sent.
4. One access-log row, written before the call (no row, no call), then set to the outcome:
   `proxied` with the upstream status, or `failed` (not reached; a redirect off the host).
5. The call (outbound.send_streamed), the request body streamed. Retried only so: an OAuth 401
   refreshes once and is sent once more; a 429 or 503 with Retry-After is sent again at most
   MAX_RETRIES times within RETRY_BUDGET_SECONDS of waiting; a redirect is followed on the same
   host (at most MAX_REDIRECTS) for GET, 303, and 307/308 with a kept body, refused off it. A body
   is kept for a replay only up to REPLAY_LIMIT; a longer one is streamed once and never replayed.
6. The answer: the upstream status, its headers (proxy_target.answer_headers), and its body
   relayed as it comes (read whole only up to EAGER_LIMIT with a Content-Length).
"""
from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol
from urllib.parse import parse_qsl, quote, urlencode

from workspacectl import clock
from workspacectl.engine.db import transaction
from workspacectl.engine.registry import Ctx, RawRequest, Response, route
from workspacectl.engine.schema_blocks import NOT_BLANK, query, text
from workspacectl.engine.store import vault as store
from workspacectl.engine.vault import proxy_target as target
from workspacectl.engine.vault.credentials import integration_setup, open_secrets, precise_iso, precise_now
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    import httpx

    from workspacectl.engine.catalog.urls import Pinned

PATH = "/v1/credentials/{id}/proxy/{path}"
REASON_HEADER = "x-wsctl-reason"
UPSTREAM_STATUS = "X-Wsctl-Upstream-Status"
PAGINATION = "X-Wsctl-Pagination"
REASON_MAX = 500
TOKEN_ATTEMPTS = 3
REPLAY_LIMIT = 256 * 1024
EAGER_LIMIT = 64 * 1024
READ_CHUNK = 64 * 1024
RETRY_STATUSES = frozenset({429, 503})
MAX_RETRIES = 2
RETRY_BUDGET_SECONDS = 5.0
MAX_REDIRECTS = 5
REDIRECTS = frozenset({301, 302, 303, 307, 308})
LOGGED_PATH_MAX = 2000


_REASON = query("reason", text(1, REASON_MAX, NOT_BLANK), "Why the call is made, written to the access log; required "
               "unless the X-Wsctl-Reason header says it, and then not forwarded.")


def _register(method: str) -> None:
    # Any body goes through and the service's answer comes back, whatever it is.
    @route(method, PATH, scope="vault:token", query=[_REASON], responses={200: None},
           summary=f"Call the service with this credential ({method}): the answer is the service's "
                   "(docs/api.md, Authenticated proxy).")
    def proxied(ctx: Ctx) -> Response:
        return proxy_call(ctx, method)

    proxied.__name__ = proxied.__qualname__ = f"proxy_{method.lower()}"


for _method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
    _register(_method)


# --- the request as it came ------------------------------------------------------------------

def _raw(ctx: Ctx) -> RawRequest:
    """The door's RawRequest; a plain in-process call (a JSON value or bytes) is made one."""
    if isinstance(ctx.body, RawRequest):
        return ctx.body
    body = ctx.body
    if body is not None and not isinstance(body, (bytes, bytearray)):
        body = json.dumps(body).encode()
    headers = [("content-type", "application/json")] if ctx.body is not None and body is not ctx.body else []
    import io

    return RawRequest(headers, urlencode(ctx.query), io.BytesIO(body) if body else None,
                      len(body) if body else None)


def _reason(raw: RawRequest) -> tuple[str, set[str]]:
    """The reason, and the query parameters not to forward (`reason` when it came that way)."""
    header = raw.header(REASON_HEADER)
    dropped: set[str] = set()
    if header is not None:
        try:
            reason: str | None = header.encode("latin-1").decode("utf-8")
        except UnicodeError:
            raise ApiError("invalid_request", "X-Wsctl-Reason must be UTF-8 text.") from None
    else:
        reason = next((v for k, v in parse_qsl(raw.query_string, keep_blank_values=True) if k == "reason"), None)
        dropped.add("reason")
    if not isinstance(reason, str) or not reason.strip() or len(reason) > REASON_MAX:
        raise ApiError("invalid_request", f"A reason is required: say why in the X-Wsctl-Reason header or the "
                       f"'reason' query parameter, 1 to {REASON_MAX} characters.")
    return reason, dropped


class Reader(Protocol):
    """A request body as RawRequest carries it: read(n) answers at most n bytes, b"" at the end."""

    def read(self, n: int) -> bytes: ...


class _Body:
    """The request body: kept whole when it ends within REPLAY_LIMIT (so it may be sent again),
    else streamed once."""

    def __init__(self, reader: Reader | None, length: int | None) -> None:
        self.reader, self.length, self.sent = reader, length, False
        self.head = _read_up_to(reader, REPLAY_LIMIT + 1) if reader is not None else b""
        self.whole: bytes | None = self.head if len(self.head) <= REPLAY_LIMIT else None

    @property
    def replayable(self) -> bool:
        return self.whole is not None

    def content(self) -> bytes | Iterator[bytes] | None:
        if self.whole is not None:
            return self.whole or None
        if self.sent:
            raise AssertionError("a streamed body is sent once")
        self.sent = True
        return self._stream()

    def _stream(self) -> Iterator[bytes]:
        assert self.reader is not None   # no reader: head is b"", so the body is whole
        yield self.head
        while chunk := self.reader.read(READ_CHUNK):
            yield chunk

    def headers(self) -> list:
        if self.whole is None and self.length is not None:
            return [("Content-Length", str(self.length).encode())]
        return []


def _read_up_to(reader: Reader, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        chunk = reader.read(n - got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


# --- the credential, as a token issue finds it -------------------------------------------------

def _log(ctx: Ctx, cred_id: str, reason: str, fields: list, outcome: str, method: str, path: str,
         status: int | None = None) -> int:
    c = ctx.caller
    return store.insert_proxy_log(ctx.db, cred_id=cred_id, at=clock.now_iso(), member_id=c.member_id,
                                  key_id=c.key_id, caller_kind=c.kind, reason=reason, fields=fields, outcome=outcome,
                                  method=method, path=path[:LOGGED_PATH_MAX], upstream_status=status)


def _usable(ctx: Ctx, cred_id: str, reason: str, method: str, path: str, since: str) -> sqlite3.Row:
    """The credential's row (with its sealed secrets) once its token is usable: 404 when the caller
    cannot see it; a viewer's call logged refused, 403; a broken grant 502."""
    from workspacectl.engine.vault import token_refresh

    conn = ctx.db
    for _ in range(TOKEN_ATTEMPTS):
        row = store.get_credential_to_issue(conn, cred_id, ctx.caller.member_id)
        if row is None or row["access"] is None:
            raise ApiError("not_found", f"No credential {cred_id} that you can see. Run `wsctl vault list`.")
        if row["access"] == "viewer":
            with transaction(conn, appends_only=True):
                _log(ctx, cred_id, reason, [], "refused", method, path)
            raise ApiError("forbidden", "This credential is shared with you as viewer only; ask its owner for user "
                           "access to make calls with it.")
        if row["status"] == "needs_reconnect":
            raise token_refresh.reconnect_error(row["service"], cred_id, row["last_error"])
        if not token_refresh.needs_refresh(row, since):
            return row
        token_refresh.ensure_fresh(ctx.ws, cred_id, since=since)
    raise ApiError("upstream_failed", "The provider keeps issuing tokens that expire at once; try again shortly.")


def _presented(ctx: Ctx, row: sqlite3.Row, auth: dict, fields: dict) -> tuple[dict, dict, list[str]]:
    """(headers, query parameters, secret values) presenting the credential."""
    from workspacectl.engine.vault.probe import presentation

    secrets = open_secrets(ctx.ws, row)
    headers, params = presentation(auth, secrets, fields)
    extra = _extra_names(auth)
    carried = [v for k, v in headers.items() if k.lower() not in extra]   # "Bearer …", "Basic …", a key
    values = [s.reveal() for s in secrets.values()] + carried + [v.partition(" ")[2] for v in carried]
    return headers, params, [v for v in values if len(v) >= 4]


def _extra_names(auth: dict) -> set[str]:
    """The definition's extra headers (`[auth] headers`): sent too, but no secret; a caller may set them."""
    return {str(k).lower() for k in auth["headers"]} if isinstance(auth.get("headers"), dict) else set()


# --- the call ----------------------------------------------------------------------------------

def proxy_call(ctx: Ctx, method: str) -> Response:
    raw = _raw(ctx)
    cred_id, tail = ctx.params["id"], ctx.params["path"]
    reason, dropped = _reason(raw)
    shown_path = "/" + tail
    since = precise_iso(ctx.received_at) if ctx.received_at is not None else precise_now()   # the arrival
    row = _usable(ctx, cred_id, reason, method, shown_path, since)
    service = row["service"]
    setup = integration_setup(store.get_integration(ctx.db, service))
    auth: dict = setup["auth"] if isinstance(setup.get("auth"), dict) else {}
    try:
        fields = json.loads(row["fields_json"] or "{}")
    except ValueError:
        fields = {}
    if str(auth.get("type") or "bearer").lower() == "query":
        dropped.add(str(auth.get("name") or "api_key"))
    from workspacectl.engine.catalog.urls import pin

    try:
        base = target.base_url(setup, fields, service)
        url = target.target_url(base, tail, target.forwarded_query(raw.query_string, dropped))
        pinned = pin(url, f"{service} (proxy)")
    except ApiError as e:
        if e.status < 500:
            with transaction(ctx.db, appends_only=True):
                _log(ctx, cred_id, reason, [], "refused", method, shown_path)
        raise
    headers, params, secret_values = _presented(ctx, row, auth, fields)
    secret_names = json.loads(row["secret_names_json"] or "[]")
    used = sorted(n for n in secret_names if n != "refreshToken") if isinstance(secret_names, list) else []
    with transaction(ctx.db, appends_only=True):
        log_id = _log(ctx, cred_id, reason, used, "failed", method, shown_path)
    call = _Call(ctx, row, method, url, pinned, base, auth, fields, headers, params, secret_values, raw, since)
    try:
        resp = call.exchange()
    except ApiError as e:
        with transaction(ctx.db):
            store.set_proxy_outcome(ctx.db, log_id, "failed", call.last_status)
        raise e from None
    with transaction(ctx.db):
        store.set_proxy_outcome(ctx.db, log_id, "proxied", resp.status_code)
    return _answer(resp, call, cred_id, setup)


class _Call:
    """One proxied call and its retries (module docstring, step 5)."""

    def __init__(self, ctx: Ctx, row: sqlite3.Row, method: str, url: str, pinned: Pinned, base: str, auth: dict, fields: dict,
                 headers: dict, params: dict, secret_values: list[str], raw: RawRequest, read_at: str) -> None:
        self.ctx, self.row, self.method, self.url, self.pinned, self.base = ctx, row, method, url, pinned, base
        self.auth, self.fields, self.presented, self.params = auth, fields, headers, params
        self.secret_values, self.raw, self.read_at = secret_values, raw, read_at
        self.body = _Body(raw.body, raw.length)
        self.last_status: int | None = None
        self.what = f"{row['service']} (proxy)"

    def _send(self) -> httpx.Response:
        import dataclasses

        import httpx

        from workspacectl.engine.vault import outbound

        url, pinned = self.url, self.pinned
        if self.params:   # the credential in the query, as [auth] says (never logged: outbound logs no query)
            query = target.auth_query(self.params)
            url += ("&" if "?" in url else "?") + query
            pinned = dataclasses.replace(pinned, url=pinned.url + ("&" if "?" in pinned.url else "?") + query)
        sent = target.request_headers(self.raw.headers, self.presented, _extra_names(self.auth)) + self.body.headers()
        try:
            return outbound.send_streamed(self.method, url, pinned, self.what, headers=sent,
                                          content=self.body.content())
        except httpx.HTTPError as e:
            raise ApiError("upstream_failed", f"Could not reach {self.row['service']} through the proxy "
                           f"({type(e).__name__}); try again shortly.") from None

    def exchange(self) -> httpx.Response:
        refreshed, retries, waited, redirects = False, 0, 0.0, 0
        while True:
            resp = self._send()
            status = self.last_status = resp.status_code
            if (status == 401 and not refreshed and self.row["credential_type"] == "oauth2"
                    and self.body.replayable):
                resp.close()
                refreshed = True
                self._refresh()
                continue
            if status in RETRY_STATUSES and retries < MAX_RETRIES and self.body.replayable:
                wait = target.retry_after(resp.headers.get("retry-after"))
                if wait is not None and waited + wait <= RETRY_BUDGET_SECONDS:
                    resp.close()
                    time.sleep(wait)
                    waited += wait
                    retries += 1
                    continue
            if status in REDIRECTS and resp.headers.get("location"):
                if self._follow(resp, redirects):
                    redirects += 1
                    continue
            return resp

    def _refresh(self) -> None:
        """An upstream 401 on an OAuth credential: refresh once (single flight, as for tokens; a
        refresh completed since our secrets were read counts) and present the new token."""
        from workspacectl.engine.vault import token_refresh

        token_refresh.ensure_fresh(self.ctx.ws, self.row["id"], force=True, since=self.read_at)
        self.read_at = precise_now()
        row = store.get_credential_sealed(self.ctx.db, self.row["id"])
        if row is None:
            raise ApiError("not_found", "That credential no longer exists. Run `wsctl vault list`.")
        self.row = row
        self.presented, self.params, self.secret_values = _presented(self.ctx, row, self.auth, self.fields)

    def _follow(self, resp: httpx.Response, redirects: int) -> bool:
        """Follow an on-host redirect when it may be (answers True), refuse an off-host one."""
        from urllib.parse import urljoin

        from workspacectl.engine.catalog.urls import pin

        location = urljoin(self.url, resp.headers["location"])
        if target.origin(location) != target.origin(self.base):
            resp.close()
            raise ApiError("conflict", f"{self.row['service']} answered {resp.status_code} with a redirect to another "
                           f"host ({target.origin(location)[1][:100]}); the proxy never follows one there. Nothing "
                           "was sent to it.")
        status = resp.status_code
        to_get = status == 303
        if redirects >= MAX_REDIRECTS or not (to_get or (status in (301, 302) and self.method == "GET")
                                              or (status in (307, 308) and self.body.replayable)):
            return False   # the caller gets the redirect (its Location rewritten to this proxy's path)
        resp.close()
        if to_get:
            self.method, self.body = "GET", _Body(None, None)
        self.url = location
        self.pinned = pin(location, self.what)
        return True


def _answer(resp: httpx.Response, call: _Call, cred_id: str, setup: dict) -> Response:
    prefix = f"/v1/credentials/{quote(cred_id, safe='')}/proxy/"
    raw = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.headers.raw]   # exactly as sent
    headers = target.answer_headers(raw, call.secret_values,
                                    lambda u: target.proxy_path_of(u, call.url, call.base, prefix))
    headers.append((UPSTREAM_STATUS, str(resp.status_code)))
    pages = setup.get("pagination")
    if isinstance(pages, dict) and pages.get("cursorPath") and pages.get("cursorParam"):
        headers.append((PAGINATION, f"cursor; path={pages['cursorPath']}; param={pages['cursorParam']}"))
    length = resp.headers.get("content-length", "")
    if call.method == "HEAD" or resp.status_code in (204, 304) or (length.isdigit() and int(length) <= EAGER_LIMIT):
        try:
            data = b"".join(resp.iter_raw())
        except Exception as e:
            raise ApiError("upstream_failed", f"The answer from {call.row['service']} broke off "
                           f"({type(e).__name__}); try again.") from None
        finally:
            resp.close()
        return Response(resp.status_code, stream=[data] if data else [], header_list=headers)
    return Response(resp.status_code, stream=Relay(resp, call.row["service"]), header_list=headers)


class Relay:
    """The upstream body, chunk by chunk as it arrives; close() ends it early."""

    def __init__(self, resp: httpx.Response, service: str) -> None:
        self.resp, self.service = resp, service

    def __iter__(self) -> Iterator[bytes]:
        import httpx

        try:
            yield from self.resp.iter_raw(READ_CHUNK)
        except httpx.HTTPError as e:
            raise ApiError("upstream_failed", f"The answer from {self.service} broke off ({type(e).__name__}); "
                           "try again.") from None
        finally:
            self.resp.close()

    def close(self) -> None:
        self.resp.close()
