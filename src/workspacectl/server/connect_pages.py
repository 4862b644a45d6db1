"""The hosted connect pages behind a connection's `connectUrl` (CONTRACT §4).

    GET  /connect/{token}    apiKey: a form named after the secret and plain fields, with a CSRF
                             token; oauth2: 303 to the provider's authorize URL (state + PKCE)
    POST /connect/{token}    checks the web session, the CSRF token and the Origin, then stores
    GET  /connect/callback   the provider's redirect back: checks state, exchanges the code

Every page needs the `wsctl_web` cookie of the member who created the connection (set by a
web sign-in link). Handlers only parse, call engine/doors.py (engine/vault/connections.py holds the rules) and render; a refusal is a
page with the reason and nothing changes. No page or log line carries a secret: the access
log redacts /connect/... paths and never logs query strings.
"""
from __future__ import annotations

import html
import re
import urllib.parse
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from workspacectl.engine import doors
from workspacectl.errors import ApiError
from workspacectl.server.page_calls import run_engine
from workspacectl.server.pages import COOKIE, PAGE_HEADERS, error_page, page, web_caller, who_header

if TYPE_CHECKING:
    from workspacectl.engine.doors import Engine

MAX_FORM_BYTES = 64 * 1024
CSRF_FIELD = "csrf"


R = TypeVar("R", bound="Response")


def _secure(resp: R) -> R:
    """The pages' strict headers (pages.PAGE_HEADERS) on an answer that is not page() (a redirect)."""
    for name, value in PAGE_HEADERS.items():
        resp.headers[name] = value
    resp.headers.setdefault("Cache-Control", "no-store")
    return resp


def _error(exc: ApiError) -> HTMLResponse:
    return _secure(error_page(exc))


def _label(name: str) -> str:
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").split()
    text = " ".join(w if w.isupper() else w.lower() for w in words)
    text = re.sub(r"\b(api|url|id|sid)\b", lambda m: m.group(1).upper(), text)
    return text[:1].upper() + text[1:]


def _hint(name: str, secret: bool) -> str:
    if secret:
        return "Stored encrypted in the vault; never shown again."
    if name.lower().endswith("url"):
        return "The address of your account, e.g. https://yourcompany.example."
    return "Shown in the credential's details; not secret."


def form_page(token: str, form: doors.LinkForm, csrf: str, error: str | None = None,
              values: dict | None = None, status: int = 200, header: str = "") -> HTMLResponse:
    values = values or {}
    rows = []
    first = True
    for name, secret in [(n, True) for n in form.secret_fields] + [(n, False) for n in form.fields]:
        fid = f"f-{html.escape(name)}"
        value = "" if secret or not isinstance(values.get(name), str) else values[name]
        kind = "password" if secret else "text"
        rows.append(f'<label for="{fid}">{html.escape(_label(name))}</label>'
                    f'<input id="{fid}" name="{html.escape(name)}" type="{kind}" autocomplete="off" '
                    f'aria-describedby="{fid}-hint" value="{html.escape(value)}" required'
                    f'{" autofocus" if first else ""}>'
                    f'<p class="hint" id="{fid}-hint">{html.escape(_hint(name, secret))}</p>')
        first = False
    err = f'<p class="err" role="alert">{html.escape(error)}</p>' if error else ""
    action = f"/connect/{urllib.parse.quote(token, safe='')}"
    desc = f'<p class="desc">{html.escape(form.description)}</p>' if form.description else ""
    help_link = (f'<p class="help">Where to find the key: <a href="{html.escape(form.docs_url)}" target="_blank" '
                 f'rel="noopener noreferrer">{html.escape(form.service_name)} documentation</a></p>'
                 if form.docs_url else "")
    body = (f'{desc}{help_link}<p>Enter the credentials for <strong class="service">'
            f'{html.escape(form.service_name)}</strong>. '
            "They are stored encrypted in the workspace vault and never shown again.</p>"
            f'{err}<form method="post" action="{html.escape(action)}" autocomplete="off">'
            f'<input type="hidden" name="{CSRF_FIELD}" value="{html.escape(csrf)}">'
            f'{"".join(rows)}<button type="submit">Connect</button></form>')
    resp = _secure(page(f"Connect {form.service_name}", body, status, header))
    # Not no-referrer here: under no-referrer a browser posts this very form with `Origin: null`,
    # which _same_origin must refuse. same-origin still sends no Referer (the link) off-site.
    resp.headers["Referrer-Policy"] = "same-origin"
    return resp


def connected_page(view: dict, header: str = "", service_name: str | None = None,
                   credential: str | None = None) -> HTMLResponse:
    """credential: its name, which the commands shown take (else its id)."""
    name = service_name or view["service"]
    cid = view.get("credentialId") or ""
    ref = html.escape(credential or cid)
    named = (f"<code>{html.escape(credential)}</code> (<code>{html.escape(cid)}</code>)" if credential
             else f"<code>{html.escape(cid)}</code>")
    return _secure(page(f"{name} is connected",
                        f'<p class="ok" role="status">Connected. You can close this tab.</p>'
                        f"<p>Credential {named} for {html.escape(name)} is in your vault. Use it by name, with a "
                        f"reason for the audit log: <code>wsctl vault env {ref} --reason \"first use\"</code> "
                        f"prints its variables, <code>wsctl vault token {ref} --reason \"first use\"</code> a "
                        "token.</p>",
                        header_html=header))


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if not origin or origin == "null":
        return origin is None
    here = f"{request.url.scheme}://{request.headers.get('host', '')}"
    return origin.rstrip("/").lower() == here.lower()


async def _read_form(request: Request) -> dict:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_FORM_BYTES:
        raise ApiError("payload_too_large", "The form is too large.")
    raw, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            raise ApiError("payload_too_large", "The form is too large.")
        raw.append(chunk)
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        raise ApiError("invalid_request", "Submit the form from its page.")
    try:
        text = b"".join(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError("invalid_request", "The form is not valid UTF-8.") from None
    return dict(urllib.parse.parse_qsl(text, keep_blank_values=True, max_num_fields=100))


def mount(app: FastAPI, engine: Engine) -> None:
    ws = engine.ws

    def base_url(request: Request) -> str:
        public = getattr(app.state, "public_url", None)
        return (public or str(request.base_url)).rstrip("/")

    # Registered before /connect/{token} so "callback" is never taken for a link token.
    @app.get(doors.CALLBACK_PATH)
    async def connect_callback(request: Request) -> HTMLResponse:
        q = request.query_params
        try:
            caller = await run_engine(web_caller, engine, request)
            view, name, cred = await run_engine(
                lambda: doors.finish_oauth_page(ws, caller, q.get("state"), q.get("code"), q.get("error")))
            header = await run_engine(who_header, engine, caller)
        except ApiError as e:
            return _error(e)
        except ValueError:
            return _error(ApiError("invalid_request", "This sign-in response is malformed."))
        return connected_page(view, header, name, cred)

    @app.get("/connect/{token}")
    async def connect_link(token: str, request: Request) -> Response:   # a page or a redirect
        cookie = request.cookies.get(COOKIE)

        def work() -> tuple[str, Any]:
            caller = web_caller(engine, request)
            kind, data = doors.open_connect_link(ws, token, caller, cookie, base_url(request))
            return kind, (data if kind == "redirect" else (*data, who_header(engine, caller)))

        try:
            kind, data = await run_engine(work)
        except ApiError as e:
            return _error(e)
        if kind == "redirect":
            return _secure(RedirectResponse(data, status_code=303))
        form, csrf, header = data
        return form_page(token, form, csrf, header=header)

    @app.post("/connect/{token}")
    async def connect_submit(token: str, request: Request) -> HTMLResponse:
        cookie = request.cookies.get(COOKIE)
        try:
            if not _same_origin(request):
                raise ApiError("forbidden", "This form was sent from another site; nothing was changed.")
            values = await _read_form(request)
        except ApiError as e:
            return _error(e)

        def work() -> tuple[str, Any]:
            caller = web_caller(engine, request)
            kind, data = doors.submit_connect_link(ws, token, caller, cookie, values, values.get(CSRF_FIELD))
            header = who_header(engine, caller)
            if kind == "done":
                view, service_name, cred = data
                return "done", (view, header, service_name, cred)
            return "retry", (*data, header)

        try:
            kind, data = await run_engine(work)
        except ApiError as e:
            return _error(e)
        if kind == "done":
            return connected_page(*data)
        form, csrf, err, header = data
        plain = {k: val for k, val in values.items() if k in form.fields}
        return form_page(token, form, csrf, error=err.message, values=plain, status=400, header=header)
