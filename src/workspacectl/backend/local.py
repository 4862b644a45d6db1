"""Local backend: the engine in-process, acting as the profile's member (or an API key).

Besides the Backend protocol it holds what only an in-process door can do, so the CLI never
reaches into the engine: make a workspace (`create_workspace`), open one as a member or with a
key (`LocalBackend.open`), housekeeping after a command, the connect pages on a loopback server,
and an apiKey connect with the key read in this process (`connect_form`, `connect_key`).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from workspacectl.backend.base import note_call
from workspacectl.engine import doors
from workspacectl.engine.doors import Caller, Engine, Workspace, refusals_answered, workspace_type
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.backend.base import Progress, ProxyAnswer
    from workspacectl.engine.doors import Response

# Making and copying a workspace: the engine's own (engine/doors.py), named here for the CLI.
workspace_exists = doors.workspace_exists
create_workspace = doors.create_workspace


class LocalBackend:
    kind = "local"

    def __init__(self, ws: Workspace, caller: Caller, base_url: str | None = None):
        self.ws = ws
        self.engine = Engine(ws)
        self.caller = caller
        self.location = ws.shown
        self.base_url = base_url

    def long_running(self) -> None:
        """No server, no deadline: nothing to lift (RemoteBackend.long_running)."""

    @property
    def stored_location(self) -> str:
        """What a profile keeps to name this workspace (a URL without its password)."""
        return self.ws.location

    @classmethod
    def open(cls, path: Path | str, secret: str | None = None, member: str | None = None,
             exact: bool = False) -> LocalBackend:
        """The workspace at `path` (migrated on open), acting with `secret` (a token or key, with
        its scopes) or as `member` in a command-line session. `member` is an id; when it is gone
        the first owner acts (a profile outliving its member). With exact=True `member` may be an
        id or an email and must exist (404 otherwise)."""
        with refusals_answered():   # a store that refuses a read: 503, as for any command
            ws = workspace_type(path).open(path)
            if secret:
                return cls(ws, doors.caller_for_secret(ws, secret))
            return cls(ws, doors.caller_for_member(ws, member, exact))

    def housekeeping(self) -> None:
        """At most once an hour per workspace (engine/doors.housekeeping)."""
        doors.housekeeping(self.ws)

    def close(self) -> None:
        """Done with the workspace on this thread: its connection (a PostgreSQL session) closes."""
        self.ws.close()

    @contextmanager
    def loopback_pages(self) -> Iterator[str]:
        """The server's pages (and API) on 127.0.0.1:<free port> while the block runs; answers
        their base URL, which the routes called meanwhile use for the links they make."""
        from workspacectl.server.loopback import LoopbackServer

        with LoopbackServer(self.engine) as server:
            assert server.url is not None
            self.base_url = server.url
            try:
                yield server.url
            finally:
                self.base_url = None

    def in_process_connect(self) -> LocalBackend:
        """This backend connects credentials itself (base.InProcessConnect): a key read in this
        process, the connect pages served on a loopback port while the command waits."""
        return self

    def connect_form(self, service: str) -> dict[str, Any]:
        """What connecting `service` asks for (404 for an unknown service):
        {service, name, credentialType ("apiKey", "oauth2", ...), secretFields, fields}."""
        return doors.connect_form(self.ws, service)

    def check_reconnect(self, service: str, credential_id: str) -> None:
        """Refuse a reconnect of a credential the caller may not refill, before a key is asked for."""
        doors.check_reconnect(self.ws, self.caller, service, credential_id)

    def check_credential_name(self, name: str | None, reconnect: str | None = None) -> None:
        """Refuse a malformed or taken name for the new credential before a key is asked for."""
        doors.check_credential_name(self.ws, name, reconnect)

    def connect_key(self, service: str, values: dict[str, str], reconnect: str | None = None,
                    name: str | None = None) -> dict[str, Any]:
        """An apiKey connection made and completed in one step with the values read here (no link,
        no server): the final connection body (the new credential named `name`, or after the service)."""
        return doors.connect_key(self.ws, self.caller, service, values, reconnect, name)

    def request(self, method: str, path: str, query: dict | None = None, body: Any = None,
                progress: Progress | None = None) -> Any:
        note_call(method)
        resp = self._traced(method, path, query, lambda: self.engine.call(
            self.caller, method, path, query, body, self.base_url, progress))
        if resp.stream is not None:
            return b"".join(resp.stream)
        if resp.status == 204 or resp.body is None:
            return None
        # The same bytes the server would send: JSON types only, in the same key order.
        return json.loads(json.dumps(resp.body))

    def _traced(self, method: str, path: str, query: dict | None, call: Callable[[], Response]) -> Response:
        """--debug: the in-process call as one line, like the remote backend's HTTP requests."""
        from workspacectl.backend import http_trace

        if not http_trace.enabled:
            return call()
        import time
        import urllib.parse

        url = f"local:{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        started = time.monotonic()
        try:
            resp = call()
        except ApiError as e:
            http_trace.trace(method.upper(), url, f"{e.status} {e.code}", time.monotonic() - started)
            raise
        http_trace.trace(method.upper(), url, str(resp.status), time.monotonic() - started)
        return resp

    def exchange(self, method: str, path: str, query: dict | None = None, body: Any = None,
                 headers: dict | None = None) -> tuple[int, list[tuple[str, str]], Any]:
        """One call as `wsctl api` shows it: (status, response headers, body); an error is its body.
        The engine reads no request header, so `headers` change nothing here."""
        note_call(method)
        try:
            resp = self.engine.call(self.caller, method, path, query, body, self.base_url)
        except ApiError as e:
            return e.status, [("content-type", "application/json")], e.body()
        if resp.header_list is not None:   # a service's answer through the proxy: as a server would send it
            out = [(k.lower(), v) for k, v in resp.header_list]
            raw = b"".join(resp.stream or [])
            kind = next((v for k, v in out if k == "content-type"), "")
            try:
                return resp.status, out, (json.loads(raw) if raw and "json" in kind else (raw or None))
            except ValueError:
                return resp.status, out, raw
        out = [("content-type", resp.content_type), *((k.lower(), str(v)) for k, v in resp.headers.items())]
        if resp.stream is not None:
            return resp.status, out, b"".join(resp.stream)
        answer = None if resp.status == 204 or resp.body is None else json.loads(json.dumps(resp.body))
        return resp.status, out, answer

    def proxy(self, method: str, path: str, query: list[tuple[str, str]], headers: dict[str, str],
              body: BinaryIO | None, length: int | None) -> ProxyAnswer:
        """The engine forwards the call in-process (engine/vault/proxy.py), as a server would."""
        import urllib.parse

        from workspacectl.backend.base import ProxyAnswer
        from workspacectl.engine.doors import RawRequest

        sent = [(k.lower(), v.encode("utf-8").decode("latin-1")) for k, v in headers.items()]
        if length is not None:
            sent.append(("content-length", str(length)))
        raw = RawRequest(sent, urllib.parse.urlencode(query), body, length)
        resp = self._traced(method, path, None, lambda: self.engine.call(
            self.caller, method, path, None, raw, self.base_url))
        stream = resp.stream if resp.stream is not None else []
        return ProxyAnswer(resp.status, list(resp.header_list or []), stream,
                           getattr(stream, "close", None) or (lambda: None))

    def download(self, path: str, out: BinaryIO, progress: Callable[[int], None] | None = None,
                 total: Callable[[int | None], None] | None = None) -> int:
        from workspacectl.formats import transfer_size

        resp = self.engine.call(self.caller, "GET", path, None, None, self.base_url)
        headers = {k.lower(): str(v) for k, v in resp.headers.items()}
        advance = transfer_size.counter(lambda name: headers.get(name.lower()), progress, total)
        written = 0
        for chunk in resp.stream or [resp.body or b""]:
            out.write(chunk)
            written += len(chunk)
            advance(chunk)
        return written

    def upload(self, method: str, path: str, data: BinaryIO, size: int | None, content_type: str,
               progress: Callable[[int], None] | None = None) -> Any:
        note_call(method)
        if content_type in ("application/gzip", "application/x-gzip"):
            # As the server does: the engine reads a bundle as a stream, never whole in memory.
            return self.request(method, path, None, _ProgressReader(data, progress))
        raw = data.read()
        if progress:
            progress(len(raw))
        return self.request(method, path, None, raw)


class _ProgressReader:
    """A binary file whose reads are reported to progress(n)."""

    def __init__(self, data: BinaryIO, progress: Callable[[int], None] | None = None) -> None:
        self.data, self.progress = data, progress

    def read(self, n: int = -1) -> bytes:
        chunk = self.data.read(n)
        if self.progress and chunk:
            self.progress(len(chunk))
        return chunk


copy_workspace = doors.copy_workspace   # `wsctl admin copy-workspace`: verified before it answers
