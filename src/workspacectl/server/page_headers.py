"""The strict headers every answer outside the lean /v1 path carries: the hosted pages, their
error pages, /docs, the favicon, /healthz and the HTTP layer's own 404 and 405 answers.

    Content-Security-Policy   nothing but this server's own images, the pages' one inline style
                              (allowed by its hash, not by 'unsafe-inline'), forms posted back to
                              this server; never framed (frame-ancestors 'none'), no <base>
    X-Content-Type-Options    nosniff
    X-Frame-Options           DENY (frame-ancestors for browsers that predate it)
    Referrer-Policy           no-referrer (a link token in a path never leaves in a Referer)

A page that sets its own policy keeps it (/docs allows its own script and stylesheet); the rest
are added to whatever a route answers (StrictHeaders), so a page added later cannot forget them.
"""
from __future__ import annotations

import base64
import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send


def style_hash(style: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(style.encode()).digest()).decode() + "'"


def page_csp(style: str) -> str:
    return (f"default-src 'none'; style-src {style_hash(style)}; img-src 'self'; form-action 'self'; "
            "frame-ancestors 'none'; base-uri 'none'")


def strict_headers(csp: str) -> dict[str, str]:
    return {"Content-Security-Policy": csp, "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
            "Referrer-Policy": "no-referrer"}


# For answers that are no page (JSON errors, the favicon, /healthz): nothing may load or frame them.
NO_CONTENT_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"


class StrictHeaders:
    """ASGI: adds each strict header a response does not set itself to its start message."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.defaults = [(k.lower().encode("latin-1"), v.encode("latin-1"))
                         for k, v in strict_headers(NO_CONTENT_CSP).items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_strict(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                have = {k.lower() for k, _ in headers}
                missing = [(k, v) for k, v in self.defaults if k not in have]
                if missing:
                    message = {**message, "headers": headers + missing}
            await send(message)

        await self.app(scope, receive, send_strict)
