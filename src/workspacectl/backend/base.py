"""The Backend protocol: what every CLI command calls. The JSON answered is the API body."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol

Progress = Callable[[str, "int | None", "int | None"], None]   # progress(phase, done, total)


# Called (no arguments) before any call that may change the workspace (a method other than GET)
# through a CLI backend: the CLI drops its completion cache then (cli/common/completion_cache.py).
ON_WRITE: list[Callable[[], None]] = []


def note_call(method: str) -> None:
    if method.upper() != "GET":
        for hook in ON_WRITE:
            hook()


@dataclass
class ProxyAnswer:
    """A service's answer through the credential proxy: its status and headers (as the proxy
    passes them), and its body as chunks that arrive as they are read; close() when done."""

    status: int
    headers: list[tuple[str, str]]
    chunks: Iterable[bytes]
    close: Callable[[], None] = field(default=lambda: None)

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


class InProcessConnect(Protocol):
    """What a backend that connects credentials itself can do (the local one: no server between
    the command and the vault). A backend answers it from Backend.in_process_connect()."""

    def connect_form(self, service: str) -> dict[str, Any]:
        """What connecting `service` asks for: {service, name, credentialType, secretFields, fields}."""

    def check_reconnect(self, service: str, credential_id: str) -> None:
        """Refuse a reconnect the caller may not make, before a key is asked for."""

    def check_credential_name(self, name: str | None, reconnect: str | None = None) -> None:
        """Refuse a malformed or taken name, before a key is asked for."""

    def connect_key(self, service: str, values: dict[str, str], reconnect: str | None = None,
                    name: str | None = None) -> dict[str, Any]:
        """An apiKey connection made and completed at once with the values read here."""

    def loopback_pages(self) -> AbstractContextManager[str]:
        """The connect pages on 127.0.0.1 while the block runs (their base URL)."""

    def request(self, method: str, path: str, query: dict | None = None, body: Any = None,
                progress: Progress | None = None) -> Any:
        """As Backend.request."""


class Backend(Protocol):
    """What every CLI command calls; the CLI asks what a backend can do, not which kind it is."""

    kind: str          # "local" or "remote": shown to the user (auth status); only skill transfers test it
                       # (a file:// URL is followed only when this process made it: cli/skill/publish.py)
    location: str      # the workspace folder or the server URL

    def in_process_connect(self) -> InProcessConnect | None:
        """This backend itself, when it connects credentials in this process (a key read from the
        terminal, the connect pages on a loopback port); None when a server does (its links)."""

    def long_running(self) -> None:
        """This command waits by design (a child process, a browser, an event stream, an agent, the
        proxy): its calls keep their own limit, the command has no deadline (backend/timeouts.py)."""

    def request(self, method: str, path: str, query: dict | None = None, body: Any = None,
                progress: Callable[[str, int | None, int | None], None] | None = None) -> Any:
        """Call one route; answer its JSON body (None for 204). Raise ApiError on an error.
        progress(phase, done, total) hears how long work goes: the engine's phases in-process
        (Ctx.report), "server" once over HTTP (the work happens there, unseen)."""

    def exchange(self, method: str, path: str, query: dict | None = None, body: Any = None,
                 headers: dict | None = None) -> tuple[int, list[tuple[str, str]], Any]:
        """One call as `wsctl api` shows it: (status, response headers, body); never raises on an
        HTTP error status (its error body is the body)."""

    def download(self, path: str, out: BinaryIO, progress: Callable[[int], None] | None = None,
                 total: Callable[[int | None], None] | None = None) -> int:
        """Stream a binary route's body into out; answer the number of bytes. total(size) hears
        the size the answer announces (None: unknown) before the first byte."""

    def upload(self, method: str, path: str, data: BinaryIO, size: int | None, content_type: str,
               progress: Callable[[int], None] | None = None) -> Any:
        """Send a binary body to a route (size None: length unknown, sent chunked); answer its JSON body."""

    def proxy(self, method: str, path: str, query: list[tuple[str, str]], headers: dict[str, str],
              body: BinaryIO | None, length: int | None) -> ProxyAnswer:
        """One call through the credential proxy (`path`: /v1/credentials/ID/proxy/...), the body
        read from `body` as it is sent (length None: unknown). Our own refusals raise ApiError; the
        service's answer, whatever its status, is the ProxyAnswer."""
