"""The agent door: the workspace as Model Context Protocol tools and resources (`wsctl mcp`, and
`/mcp` on `wsctl serve`).

Every tool is one or a few API requests made through a `Client` (below), which is the caller's own
door: the CLI's backend for `wsctl mcp` over stdio (local workspace or remote server, acting as the
profile's member or the API key in the environment), and the engine as the authenticated bearer for
`/mcp` on a server. So a tool can do exactly what its caller could do with `wsctl api`: the same
scopes, grants, credential limits, audit rows, errors and messages. Nothing here reads or writes
the workspace by itself.

- `tools.py`: the tool table (name, JSON schema, description, annotations) and what each runs.
- `resources.py`: the resources (memory guides and their reference files, a specialist's memory,
  skills' SKILL.md) and how each is read.
- `protocol.py`: the MCP SDK's low-level server around the two tables, over stdio or streamable HTTP.
  The SDK is imported there only, so nothing else in wsctl loads it.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, BinaryIO, Protocol


class Proxied(Protocol):
    """A service's answer through the credential proxy (backend/base.ProxyAnswer has this shape)."""

    status: int
    headers: list[tuple[str, str]]
    chunks: Iterable[bytes]

    def close(self) -> None:
        """Done with the answer (its body may be left unread)."""


class Client(Protocol):
    """One caller's access to the API: the JSON body of a route, or ApiError (errors.py)."""

    def request(self, method: str, path: str, query: dict | None = None, body: Any = None) -> Any: ...

    def exchange(self, method: str, path: str, query: dict | None = None, body: Any = None,
                 headers: dict | None = None) -> tuple[int, list[tuple[str, str]], Any]: ...

    def proxy(self, method: str, path: str, query: list[tuple[str, str]], headers: dict[str, str],
              body: BinaryIO | None, length: int | None) -> Proxied:
        """One call through /v1/credentials/:id/proxy/…; our own refusals raise ApiError."""
