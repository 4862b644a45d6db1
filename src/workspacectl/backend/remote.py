"""Remote backend: the same API over HTTP with httpx (imported only here)."""
from __future__ import annotations

from typing import Any

import httpx

from workspacectl import __version__
from workspacectl.errors import ApiError


def _unreachable(url: str, exc: Exception) -> ApiError:
    return ApiError("unreachable", f"Cannot reach the server at {url} ({type(exc).__name__}). "
                    "Check --server / WSCTL_SERVER, or start it with `wsctl serve`.")


class RemoteBackend:
    kind = "remote"

    def __init__(self, url: str, secret: str | None, timeout: float = 60.0):
        self.location = url.rstrip("/")
        headers = {"User-Agent": f"wsctl/{__version__}"}
        if secret:
            headers["Authorization"] = f"Bearer {secret}"
        self.http = httpx.Client(base_url=self.location, headers=headers, timeout=timeout)

    def _send(self, method: str, path: str, **kw) -> httpx.Response:
        try:
            return self.http.request(method, path, **kw)
        except httpx.TransportError as e:
            raise _unreachable(self.location, e) from None

    @staticmethod
    def _answer(resp: httpx.Response) -> Any:
        if resp.status_code >= 400:
            try:
                body = resp.json()
            except ValueError:
                body = None
            raise ApiError.from_body(resp.status_code, body)
        if resp.status_code == 204 or not resp.content:
            return None
        if "json" in resp.headers.get("content-type", ""):
            return resp.json()
        return resp.content

    def request(self, method: str, path: str, query: dict | None = None, body: Any = None) -> Any:
        kw: dict = {"params": query or None}
        if isinstance(body, (bytes, bytearray)):
            kw["content"] = bytes(body)
            kw["headers"] = {"Content-Type": "application/octet-stream"}
        elif body is not None:
            kw["json"] = body
        return self._answer(self._send(method, path, **kw))

    def exchange(self, method: str, path: str, query: dict | None = None, body: Any = None,
                 headers: dict | None = None) -> tuple[int, list[tuple[str, str]], Any]:
        """One call as `wsctl api` shows it: (status, response headers, body), never raising on an
        HTTP error status (the error body is the body)."""
        kw: dict = {"params": query or None, "headers": dict(headers or {})}
        if body is not None:
            kw["json"] = body
        resp = self._send(method, path, **kw)
        if not resp.content:
            answer = None
        elif "json" in resp.headers.get("content-type", ""):
            try:
                answer = resp.json()
            except ValueError:
                answer = resp.content
        else:
            answer = resp.content
        return resp.status_code, list(resp.headers.items()), answer

    def download(self, path, out, progress=None) -> int:
        total = 0
        try:
            with self.http.stream("GET", path) as resp:
                if resp.status_code >= 400:
                    resp.read()
                    self._answer(resp)
                for chunk in resp.iter_bytes():
                    out.write(chunk)
                    total += len(chunk)
                    if progress:
                        progress(len(chunk))
        except httpx.TransportError as e:
            raise _unreachable(self.location, e) from None
        return total

    def upload(self, method, path, data, size, content_type, progress=None) -> Any:
        def chunks():
            while chunk := data.read(1 << 20):
                if progress:
                    progress(len(chunk))
                yield chunk

        headers = {"Content-Type": content_type}
        if size is not None:  # None: a stream made on the fly (a packed folder), sent chunked
            headers["Content-Length"] = str(size)
        return self._answer(self._send(method, path, content=chunks(), headers=headers))
