"""What every hosted page shares: the HTML frame (one inline style, light or dark, fits a phone),
the error page, the signed-in header, and the web session cookie with the caller it names.

The sign-in landing (web.py) and the connect pages (connect_pages.py) are built from these.
"""
from __future__ import annotations

import html
from typing import TYPE_CHECKING

from fastapi import Request
from fastapi.responses import HTMLResponse

from workspacectl.engine import doors
from workspacectl.errors import ApiError
from workspacectl.server.page_headers import page_csp, strict_headers

if TYPE_CHECKING:
    from workspacectl.engine.doors import Caller, Engine

COOKIE = "wsctl_web"


STYLE = """:root{color-scheme:light dark;--fg:#1d1d1f;--bg:#fff;--muted:#5c5c66;--line:#d0d0d8;--card:#f6f6f8;
--accent:#0b57d0;--err:#b3261e;--ok:#1a7f37}
@media (prefers-color-scheme:dark){:root{--fg:#ececf1;--bg:#16161a;--muted:#a3a3ad;--line:#3a3a44;--card:#1f1f25;
--accent:#8ab4f8;--err:#ff8a80;--ok:#56d364}}
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;color:var(--fg);background:var(--bg);max-width:36rem;margin:2rem auto;
padding:0 1rem;line-height:1.45;overflow-wrap:anywhere}
h1{font-size:1.4rem} a{color:var(--accent)} .muted,.hint{color:var(--muted);font-size:.9rem}
.who{border:1px solid var(--line);background:var(--card);border-radius:6px;padding:.5rem .8rem;font-size:.9rem}
label{display:block;margin:1rem 0 .2rem;font-weight:600} .hint{margin:.2rem 0 0}
input{width:100%;padding:.55rem;font-size:1rem;color:var(--fg);background:var(--bg);border:1px solid var(--line);
border-radius:4px}
button{margin-top:1.2rem;padding:.6rem 1.2rem;font-size:1rem;border-radius:4px;border:1px solid var(--accent);
background:var(--accent);color:var(--bg);cursor:pointer}
.err{color:var(--err)} .ok{color:var(--ok);font-size:1.1rem;font-weight:600}
code{font-family:ui-monospace,monospace}"""


# Every hosted page's headers (server/page_headers.py): its CSP allows this one style by its hash.
PAGE_HEADERS = strict_headers(page_csp(STYLE))


def page(title: str, body_html: str, status: int = 200, header_html: str = "") -> HTMLResponse:
    """A hosted page: no outside asset (one inline style), light or dark as the system is, fits a phone."""
    doc = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>{html.escape(title)} · wsctl</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<style>{STYLE}</style></head>
<body>{header_html}<main><h1>{html.escape(title)}</h1>{body_html}</main></body></html>"""
    return HTMLResponse(doc, status_code=status, headers={"Cache-Control": "no-store", **PAGE_HEADERS})


_TITLES = {410: "This link can no longer be used", 401: "Sign in first", 403: "Not your link",
           404: "Link not found", 400: "Cannot continue", 413: "Cannot continue"}


def error_page(exc: ApiError, title: str | None = None) -> HTMLResponse:
    title = title or _TITLES.get(exc.status, "Cannot continue")
    return page(title, f'<p class="err" role="alert">{html.escape(exc.message)}</p>'
                '<p class="muted">You can close this tab.</p>', exc.status)


def who_header(engine: Engine, caller: Caller | None) -> str:
    """The workspace's name and the signed-in member, escaped, for the top of a page."""
    ws_name = engine.ws.setting("name") or "wsctl workspace"
    member = doors.signed_in_member(engine.ws, caller)
    who = (f'Signed in as <strong class="member">{html.escape(member["name"])}</strong> '
           f'<span class="muted">({html.escape(member["email"])})</span>') if member else "Not signed in"
    return (f'<header class="who"><span class="workspace">Workspace <strong>{html.escape(ws_name)}</strong></span>'
            f'<br>{who}</header>')


def web_caller(engine: Engine, request: Request) -> Caller | None:
    return doors.authenticate_web(engine.ws, request.cookies.get(COOKIE))
