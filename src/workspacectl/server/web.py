"""Hosted web pages: the sign-in link landing, and (vault) the connect pages.

Pages are plain server-rendered HTML. The sign-in link sets an HttpOnly, SameSite=Lax cookie.
"""
from __future__ import annotations

import html

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from workspacectl.engine.identity.auth import authenticate_web, consume_web_link
from workspacectl.errors import ApiError

COOKIE = "wsctl_web"


def page(title: str, body_html: str, status: int = 200) -> HTMLResponse:
    doc = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} · wsctl</title>
<style>body{{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}}
h1{{font-size:1.4rem}} label{{display:block;margin:1rem 0 .3rem}} input{{width:100%;padding:.5rem;font-size:1rem}}
button{{margin-top:1rem;padding:.5rem 1rem;font-size:1rem}} .err{{color:#a00}}</style></head>
<body><h1>{html.escape(title)}</h1>{body_html}</body></html>"""
    return HTMLResponse(doc, status_code=status, headers={"Cache-Control": "no-store",
                                                          "X-Frame-Options": "DENY",
                                                          "Referrer-Policy": "no-referrer"})


def error_page(exc: ApiError) -> HTMLResponse:
    return page("Cannot continue", f'<p class="err">{html.escape(exc.message)}</p>', exc.status)


def web_caller(engine, request: Request):
    return authenticate_web(engine.ws.conn(), request.cookies.get(COOKIE))


def mount(app: FastAPI, engine) -> None:
    @app.get("/signin/{token}")
    async def signin(token: str, request: Request):
        try:
            # the connection is taken in the worker thread: each thread has its own, and two
            # sign-ins at once on the event loop's one connection collided (a 500)
            cookie, next_path = await run_in_threadpool(lambda: consume_web_link(engine.ws.conn(), token))
        except ApiError as e:
            return error_page(e)
        resp = RedirectResponse(next_path, status_code=303)
        resp.set_cookie(COOKIE, cookie, httponly=True, samesite="lax", path="/",
                        secure=request.url.scheme == "https", max_age=12 * 3600)
        return resp

    @app.get("/")
    async def home(request: Request):
        caller = await run_in_threadpool(web_caller, engine, request)
        who = "signed in" if caller else "not signed in"
        return page("wsctl", f"<p>This is a wsctl workspace server. You are {who}.</p>")

    try:
        from workspacectl.server import connect_pages
    except ImportError:
        return
    connect_pages.mount(app, engine)
