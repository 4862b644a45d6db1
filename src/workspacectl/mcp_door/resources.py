"""The resources an agent reads as context: memory guides and their reference files, a specialist's
memory, skills' SKILL.md. URIs (`wsctl://…`) name what the API names; each read is one request
through the caller's `Client`, so what a caller may not see is `not_found` here too.

    wsctl://memory/{ownerType}                 the guide (organization or membership), markdown
    wsctl://memory/{ownerType}/files/{path}    one reference file behind that guide
    wsctl://specialists/{specialist}/memory    a specialist's own memory document
    wsctl://skills/{skill}/SKILL.md            a published skill's SKILL.md
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from workspacectl.errors import ApiError
from workspacectl.mcp_door import Client
from workspacectl.mcp_door.tools import OWNER_TYPES, all_rows, resolve, seg

SCHEME = "wsctl://"
MARKDOWN = "text/markdown"
LISTED_PER_KIND = 200     # resources/list names at most this many of each kind (templates reach the rest)


@dataclass(frozen=True)
class Listed:
    uri: str
    name: str
    description: str
    mime_type: str = MARKDOWN


TEMPLATES = [
    Listed(SCHEME + "memory/{ownerType}", "memory-guide",
           "A memory guide: ownerType organization (the workspace's) or membership (yours)."),
    Listed(SCHEME + "memory/{ownerType}/files/{path}", "memory-file",
           "A reference file behind a memory guide (path as memory_read's files list it)."),
    Listed(SCHEME + "specialists/{specialist}/memory", "specialist-memory",
           "A specialist's own memory document (id proj_… or its name)."),
    Listed(SCHEME + "skills/{skill}/SKILL.md", "skill", "A published skill's SKILL.md (id skl_… or its name)."),
]


def listed(client: Client) -> list[Listed]:
    """The guides, their reference files, every specialist's memory and every published skill the
    caller can see (a kind the caller's key may not list is left out, not an error)."""
    out = [Listed(f"{SCHEME}memory/{t}", f"{t} memory", f"The {t} memory guide.") for t in OWNER_TYPES]
    for owner in OWNER_TYPES:
        for f in _quietly(client, f"/v1/memory/{owner}/files", "files"):
            out.append(Listed(f"{SCHEME}memory/{owner}/files/{quote(f['path'])}", f"{owner} memory: {f['path']}",
                              f"A reference file of the {owner} memory ({f.get('size')} bytes).", _mime(f["path"])))
    for p in _quietly(client, "/v1/projects", "projects")[:LISTED_PER_KIND]:
        out.append(Listed(f"{SCHEME}specialists/{p['id']}/memory", f"{p['name']} memory",
                          f"The memory of the specialist {p['name']}."))
    skills = _quietly(client, "/v1/skills", "skills", {"status": "published"})
    for s in skills[:LISTED_PER_KIND]:
        out.append(Listed(f"{SCHEME}skills/{s['id']}/SKILL.md", f"{s['name']} skill", s.get("description") or ""))
    return out


def _quietly(client: Client, path: str, key: str, query: dict | None = None) -> list:
    """Every row of a list route, or none when the caller may not list that kind."""
    try:
        return all_rows(client, path, key, query)[key]
    except ApiError as e:
        if e.code in ("insufficient_scope", "forbidden", "not_found"):
            return []
        raise


def _mime(path: str) -> str:
    return MARKDOWN if path.lower().endswith((".md", ".markdown")) else "text/plain"


def read(client: Client, uri: str) -> tuple[str, str]:
    """(text, mime type) of one resource; ApiError not_found for a URI that names nothing."""
    if not uri.startswith(SCHEME):
        raise ApiError("not_found", f"No resource {uri!r}: wsctl resources start with {SCHEME}.")
    parts = uri[len(SCHEME):].split("/")
    if parts[0] == "memory" and len(parts) == 2:
        return client.request("GET", f"/v1/memory/{seg(parts[1])}")["guide"], MARKDOWN
    if parts[0] == "memory" and len(parts) >= 4 and parts[2] == "files":
        path = unquote("/".join(parts[3:]))
        return _file_text(client, f"/v1/memory/{seg(parts[1])}/files", {"path": path}), _mime(path)
    if parts[0] == "specialists" and len(parts) == 3 and parts[2] == "memory":
        project = resolve(client, "specialist", unquote(parts[1]))
        return client.request("GET", f"/v1/projects/{seg(project)}")["memory"]["text"], MARKDOWN
    if parts[0] == "skills" and len(parts) == 3 and parts[2] == "SKILL.md":
        files = client.request("GET", f"/v1/skills/{seg(unquote(parts[1]))}/files").get("files") or []
        for f in files:
            if f.get("path") == "SKILL.md" and isinstance(f.get("content"), str):
                return f["content"], MARKDOWN
        raise ApiError("not_found", f"The skill {unquote(parts[1])} has no published SKILL.md yet.")
    raise ApiError("not_found", f"No resource {uri!r}; see resources/templates/list for the shapes.")


def _file_text(client: Client, path: str, query: dict) -> str:
    status, _, body = client.exchange("GET", path, query=query)
    if status >= 400:
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            raise ApiError.from_body(status, body)
        raise ApiError("not_found", f"No file {query.get('path')!r} there.")
    raw: Any = body
    if isinstance(raw, str):
        return raw
    if isinstance(raw, (bytes, bytearray)):
        return bytes(raw).decode("utf-8", "replace")
    raise ApiError("not_found", f"No file {query.get('path')!r} there.")
