"""The credential proxy's requests over HTTP (engine/vault/proxy.py does the forwarding): the
request body handed to the engine as a stream read from the connection as the engine sends it on,
and the answer sent as the engine relays it, so neither body is ever held whole here.

The engine runs on an engine thread (server/engine_pool.py), as every other call; its reads of
the body ask the event loop for the next piece (`receive`), and the answer's chunks are taken on a
worker thread one at a time and sent from the loop.
"""
from __future__ import annotations

import asyncio
import functools
import urllib.parse
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, cast

from workspacectl.engine.doors import RawRequest, Response
from workspacectl.errors import ApiError
from workspacectl.server.api_path import base_url, bearer_of, header, headers_for, json_bytes, raw_path

if TYPE_CHECKING:
    from starlette.types import Message, Receive, Scope, Send

    from workspacectl.server.api_path import LeanApi


class BodyReader:
    """The request body as read(n) for an engine thread; each read waits for the loop's `receive`."""

    def __init__(self, receive: Receive, loop: asyncio.AbstractEventLoop) -> None:
        self.receive, self.loop = receive, loop
        self.pending = b""
        self.done = False

    def read(self, n: int = -1) -> bytes:
        while not self.pending and not self.done:
            # an ASGI server's receive is a coroutine function
            message = asyncio.run_coroutine_threadsafe(cast("Coroutine[Any, Any, Message]", self.receive()),
                                                       self.loop).result()
            if message["type"] == "http.disconnect":
                raise ApiError("invalid_request", "The request body ended early.")
            self.pending = message.get("body", b"")
            self.done = not message.get("more_body", False)
        if n < 0 or n >= len(self.pending):
            out, self.pending = self.pending, b""
        else:
            out, self.pending = self.pending[:n], self.pending[n:]
        return out


def raw_request(scope: Scope, reader: BodyReader) -> RawRequest:
    declared = header(scope, b"content-length")
    length = int(declared) if declared.isdigit() else None
    has_body = length != 0 and (length is not None or header(scope, b"transfer-encoding"))
    return RawRequest([(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]],
                      scope["query_string"].decode("latin-1"), reader if has_body else None, length)


async def answer(lean: LeanApi, scope: Scope, receive: Receive, send: Send) -> None:
    loop = asyncio.get_running_loop()
    reader = BodyReader(receive, loop)
    query = dict(urllib.parse.parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True))
    call = functools.partial(lean.engine.handle, scope["method"], raw_path(scope), query, raw_request(scope, reader),
                             bearer_of(header(scope, b"authorization")), base_url(scope, lean.public_url))
    resp: Response = await lean.pool.run(call)
    if resp.header_list is None:   # our own answer (an error): the body may be unread
        data = b"" if resp.status == 204 or resp.body is None else json_bytes(resp.body)
        extra = {} if reader.done else {"connection": "close"}
        await send({"type": "http.response.start", "status": resp.status,
                    "headers": headers_for(resp.status, "application/json" if data else None, data, extra)})
        await send({"type": "http.response.body", "body": data})
        return
    await send({"type": "http.response.start", "status": resp.status,
                "headers": [(k.lower().encode("latin-1"), v.encode("latin-1", "replace"))
                            for k, v in resp.header_list]})
    stream = resp.stream or []
    if isinstance(stream, list):   # read whole already (a small answer)
        await send({"type": "http.response.body", "body": b"".join(stream)})
        return
    chunks = iter(stream)
    try:
        while True:
            try:
                chunk = await loop.run_in_executor(None, next, chunks, None)
            except ApiError:   # the service's answer broke off: so does ours (the client sees it cut)
                return
            if chunk is None:
                break
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
