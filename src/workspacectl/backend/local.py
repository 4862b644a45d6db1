"""Local backend: the engine in-process, acting as the profile's member (or an API key)."""
from __future__ import annotations

import json
from typing import Any

from workspacectl.engine.dispatch import Engine
from workspacectl.engine.registry import Caller
from workspacectl.engine.workspace import Workspace


class LocalBackend:
    kind = "local"

    def __init__(self, ws: Workspace, caller: Caller, base_url: str | None = None):
        self.ws = ws
        self.engine = Engine(ws)
        self.caller = caller
        self.location = ws.shown
        self.base_url = base_url

    def request(self, method: str, path: str, query: dict | None = None, body: Any = None) -> Any:
        resp = self.engine.call(self.caller, method, path, query, body, self.base_url)
        if resp.stream is not None:
            return b"".join(resp.stream)
        if resp.status == 204 or resp.body is None:
            return None
        # The same bytes the server would send: JSON types only, in the same key order.
        return json.loads(json.dumps(resp.body))

    def exchange(self, method: str, path: str, query: dict | None = None, body: Any = None,
                 headers: dict | None = None) -> tuple[int, list[tuple[str, str]], Any]:
        """One call as `wsctl api` shows it: (status, response headers, body); an error is its body.
        The engine reads no request header, so `headers` change nothing here."""
        from workspacectl.errors import ApiError

        try:
            resp = self.engine.call(self.caller, method, path, query, body, self.base_url)
        except ApiError as e:
            return e.status, [("content-type", "application/json")], e.body()
        out = [("content-type", resp.content_type), *((k.lower(), str(v)) for k, v in resp.headers.items())]
        if resp.stream is not None:
            return resp.status, out, b"".join(resp.stream)
        answer = None if resp.status == 204 or resp.body is None else json.loads(json.dumps(resp.body))
        return resp.status, out, answer

    def download(self, path, out, progress=None) -> int:
        resp = self.engine.call(self.caller, "GET", path, None, None, self.base_url)
        total = 0
        for chunk in resp.stream or [resp.body or b""]:
            out.write(chunk)
            total += len(chunk)
            if progress:
                progress(len(chunk))
        return total

    def upload(self, method, path, data, size, content_type, progress=None) -> Any:
        if content_type in ("application/gzip", "application/x-gzip"):
            # As the server does: the engine reads a bundle as a stream, never whole in memory.
            return self.request(method, path, None, _ProgressReader(data, progress))
        raw = data.read()
        if progress:
            progress(len(raw))
        return self.request(method, path, None, raw)


class _ProgressReader:
    """A binary file whose reads are reported to progress(n)."""

    def __init__(self, data, progress=None):
        self.data, self.progress = data, progress

    def read(self, n: int = -1) -> bytes:
        chunk = self.data.read(n)
        if self.progress and chunk:
            self.progress(len(chunk))
        return chunk
