"""GET /docs: an interactive API reference, its HTML, CSS and JS shipped in this package; and
GET /favicon.ico, /favicon.svg: the icon of every page.

The page reads /v1/openapi.json in the browser and renders it with DOM nodes (docs_assets/docs.js,
textContent only). No outside asset: the CSP allows this server's own scripts, styles and fetches
and nothing else.
"""
from __future__ import annotations

from importlib import resources

from fastapi import FastAPI, Request
from fastapi.responses import Response

from workspacectl.server.page_headers import strict_headers

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
       "form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
ASSETS = {"docs.js": "text/javascript; charset=utf-8", "docs.css": "text/css; charset=utf-8"}
ICONS = {"favicon.ico": "image/x-icon", "favicon.svg": "image/svg+xml"}


def _asset(name: str) -> bytes:
    return resources.files("workspacectl.server").joinpath("docs_assets", name).read_bytes()


def _answer(body: bytes, media_type: str) -> Response:
    return Response(body, media_type=media_type, headers={**strict_headers(CSP), "Cache-Control": "no-cache"})


def mount(app: FastAPI) -> None:
    @app.get("/docs")
    async def docs() -> Response:
        return _answer(_asset("docs.html"), "text/html; charset=utf-8")

    @app.get("/favicon.ico")
    @app.get("/favicon.svg")
    async def favicon(request: Request) -> Response:
        """The pages' icon (they link the SVG; browsers ask for /favicon.ico on their own)."""
        name = request.url.path.lstrip("/")
        return Response(_asset(name), media_type=ICONS[name], headers={"Cache-Control": "public, max-age=86400"})

    @app.get("/docs/{name}")
    async def docs_asset(name: str) -> Response:
        if name not in ASSETS:
            return Response(status_code=404)
        return _answer(_asset(name), ASSETS[name])
