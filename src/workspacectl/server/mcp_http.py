"""`/mcp` on `wsctl serve`: the agent door (mcp_door/) over MCP's streamable HTTP, behind the same
authentication as /v1 (`Authorization: Bearer <session token or API key>`).

Stateless: every POST is authenticated and answered on its own (no MCP session to pin to a
replica), and each API request a tool makes goes through `Engine.handle` with the presented
secret, exactly as the same request to /v1 would: the same scopes, grants, credential limits,
audit rows and errors. The MCP SDK is imported at the first /mcp request, not before.
"""
from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from workspacectl.errors import ApiError
from workspacectl.server.api_path import base_url, bearer_of, header, send_json

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from workspacectl.engine.doors import Engine

# (engine, secret, base URL) of the /mcp request being answered: read by the tools' client
_request: contextvars.ContextVar[tuple[Engine, str, str]] = contextvars.ContextVar("wsctl_mcp_request")


class EngineClient:
    """mcp_door.Client over the engine, as the bearer of one /mcp request."""

    def __init__(self, engine: Engine, secret: str, base: str) -> None:
        self.engine, self.secret, self.base = engine, secret, base

    def exchange(self, method: str, path: str, query: dict | None = None, body: Any = None,
                 headers: dict | None = None) -> tuple[int, list[tuple[str, str]], Any]:
        resp = self.engine.handle(method, path, query, body, self.secret, self.base)
        out = [("content-type", resp.content_type), *((k.lower(), str(v)) for k, v in resp.headers.items())]
        if resp.stream is not None:
            return resp.status, out, b"".join(resp.stream)
        if resp.content_type != "application/json":
            return resp.status, out, resp.body
        return resp.status, out, None if resp.status == 204 or resp.body is None else json.loads(json.dumps(resp.body))

    def proxy(self, method: str, path: str, query: list[tuple[str, str]], headers: dict[str, str],
              body: BinaryIO | None, length: int | None) -> Proxied:
        """As LocalBackend.proxy, as the bearer: the engine forwards the call (engine/vault/proxy.py)."""
        import urllib.parse

        from workspacectl.engine.doors import RawRequest

        sent = [(k.lower(), v.encode("utf-8").decode("latin-1")) for k, v in headers.items()]
        if length is not None:
            sent.append(("content-length", str(length)))
        caller = self.engine.authenticate(self.secret)
        resp = self.engine.call(caller, method, path, None, RawRequest(sent, urllib.parse.urlencode(query), body, length),
                                self.base)
        stream = resp.stream if resp.stream is not None else []
        return Proxied(resp.status, list(resp.header_list or []), stream, getattr(stream, "close", None) or (lambda: None))

    def request(self, method: str, path: str, query: dict | None = None, body: Any = None) -> Any:
        status, _, answer = self.exchange(method, path, query, body)
        if status >= 400:
            raise ApiError.from_body(status, answer)
        return answer


@dataclass
class Proxied:
    status: int
    headers: list[tuple[str, str]]
    chunks: Iterable[bytes]
    close: Callable[[], None]


def _client() -> EngineClient:
    return EngineClient(*_request.get())


class McpHttp:
    """The ASGI app at /mcp. `run` runs a tool's engine work off the event loop (the API's engine
    pool, set by create_app once it exists)."""

    def __init__(self, engine: Engine, public_url: str | None = None) -> None:
        self.engine, self.public_url = engine, public_url
        self.run: Callable[[Callable[[], Any]], Awaitable[Any]] | None = None
        self._app: Any = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._lock = asyncio.Lock()

    async def _started(self) -> ASGIApp:
        async with self._lock:
            if self._app is None:
                from workspacectl.mcp_door.protocol import http_handler

                # the SDK logs each stateless request's session at INFO; the access log has the request
                logging.getLogger("mcp").setLevel(logging.WARNING)

                async def run(work: Callable[[], Any]) -> Any:
                    return await self.run(work) if self.run is not None else work()

                app, manager = http_handler(_client, run)
                started, stop = asyncio.Event(), asyncio.Event()
                self._stop = stop

                async def keep_running() -> None:
                    async with manager.run():
                        started.set()
                        await stop.wait()

                self._task = asyncio.create_task(keep_running())
                await started.wait()
                self._app = app
        return self._app

    async def close(self) -> None:
        if self._stop is not None and self._task is not None:
            self._stop.set()
            await self._task

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        secret = bearer_of(header(scope, b"authorization"))
        if not secret:
            return await self._refuse(send, ApiError(
                "unauthenticated", "MCP over HTTP needs `Authorization: Bearer <API key or session token>`, as /v1 does."))
        try:
            caller = await (self.run or _inline)(lambda: self.engine.authenticate(secret))
        except ApiError as e:
            return await self._refuse(send, e)
        if caller is None:
            return await self._refuse(send, ApiError("unauthenticated", "Unknown or revoked key or token."))
        app = await self._started()
        token = _request.set((self.engine, secret, base_url(scope, self.public_url)))
        try:
            await app(scope, receive, send)
        finally:
            _request.reset(token)

    @staticmethod
    async def _refuse(send: Send, e: ApiError) -> None:
        await send_json(send, e.status, e.body())


async def _inline(work: Callable[[], Any]) -> Any:
    return work()
