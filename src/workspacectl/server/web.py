"""Hosted web pages: the sign-in link landing, and (vault) the connect pages (connect_pages.py).

Pages are plain server-rendered HTML (server/pages.py). The sign-in link sets an HttpOnly, SameSite=Lax cookie.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response

from workspacectl.engine.doors import consume_web_link
from workspacectl.errors import ApiError
from workspacectl.server import connect_pages
from workspacectl.server.page_calls import run_engine
from workspacectl.server.pages import COOKIE, error_page, page, web_caller

if TYPE_CHECKING:
    from workspacectl.engine.doors import Engine


def mount(app: FastAPI, engine: Engine) -> None:
    @app.get("/signin/{token}")
    async def signin(token: str, request: Request) -> Response:
        try:
            # the connection is taken in the worker thread: each thread has its own, and two
            # sign-ins at once on the event loop's one connection collided (a 500)
            cookie, next_path = await run_engine(lambda: consume_web_link(engine.ws, token))
        except ApiError as e:   # not "Sign in first": this was the sign-in, and its message says what to do
            return error_page(e, "This sign-in link cannot be used")
        resp = RedirectResponse(next_path, status_code=303)
        resp.set_cookie(COOKIE, cookie, httponly=True, samesite="lax", path="/",
                        secure=request.url.scheme == "https", max_age=12 * 3600)
        return resp

    @app.get("/")
    async def home(request: Request) -> Response:
        caller = await run_engine(web_caller, engine, request)
        who = "signed in" if caller else "not signed in"
        return page("wsctl", f"<p>This is a wsctl workspace server. You are {who}.</p>")

    connect_pages.mount(app, engine)
