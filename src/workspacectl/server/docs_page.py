"""GET /docs: an interactive API reference, its HTML, CSS and JS shipped in this package.

The page reads /v1/openapi.json in the browser and renders it with DOM nodes (docs_assets/docs.js,
textContent only). No outside asset: the CSP allows this server's own scripts, styles and fetches
and nothing else.
"""
from __future__ import annotations

from importlib import resources

from fastapi import FastAPI
from fastapi.responses import Response

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
       "form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
ASSETS = {"docs.js": "text/javascript; charset=utf-8", "docs.css": "text/css; charset=utf-8"}


def _asset(name: str) -> bytes:
    return resources.files("workspacectl.server").joinpath("docs_assets", name).read_bytes()


def _answer(body: bytes, media_type: str) -> Response:
    return Response(body, media_type=media_type, headers={
        "Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"})


def mount(app: FastAPI) -> None:
    @app.get("/docs")
    async def docs():
        return _answer(_asset("docs.html"), "text/html; charset=utf-8")

    @app.get("/docs/{name}")
    async def docs_asset(name: str):
        if name not in ASSETS:
            return Response(status_code=404)
        return _answer(_asset(name), ASSETS[name])
