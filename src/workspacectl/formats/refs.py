"""Ids and names: the one rule every door that names things by id or name follows (the CLI's
`cli/common/refs.py`, the agent door's tools), over the door's own `request(method, path, query=...)`.

Every command that takes a credential, specialist, skill, workflow, member or key passes the word
through `resolve(ctx, KIND, word)` (cli/common/refs.py, over this module) and sends the answer to the API. The rules, the same on every
backend (the lookup is one list request with `?name=` through the command's backend; the server
filters, docs/api.md §1 "Lists"):

- A word starting with the kind's id prefix (`cred_`, `proj_`, `skl_`, `wf_`, `um_`, `key_`) is an
  id and is used as given, without a lookup: an id always wins. (Credential names may not start
  with `cred_`; a specialist, workflow, member or key whose name starts with its prefix is named by
  its id.)
- Anything else is a name, looked up among what you can see: an exact match first, else one
  regardless of case (Unicode case folding, as the server filters). A member's email (a word
  with `@`) goes to the API, which matches it.
  One match answers its id; none is exit 5; several are exit 7 with the candidates, one line each
  (`error.detail.candidates`, cli/main.py prints them).
- Skills are the exception: their names are unique among live skills and the server resolves them
  (engine/skills/routes.find_skill), so a skill name goes to the API as given.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workspacectl.errors import ApiError


@dataclass(frozen=True)
class Kind:
    prefix: str
    path: str                      # the list route
    key: str                       # its plural key
    label: str                     # what to call one in a message
    list_command: str              # where to see them
    keys: tuple[str, ...]          # fields a name is matched against
    about: Callable[[dict], str]   # what a candidate line says besides id and name


KINDS = {
    "credential": Kind("cred_", "/v1/credentials", "credentials", "credential", "wsctl vault list", ("name",),
                       lambda r: f"{r.get('service')}, {r.get('access')}"),
    "specialist": Kind("proj_", "/v1/projects", "projects", "specialist", "wsctl specialist list", ("name",),
                       lambda r: f"role {r.get('role')}"),
    "member": Kind("um_", "/v1/members", "members", "member", "wsctl members list", ("name", "email"),
                   lambda r: f"{r.get('email')}, {r.get('role')}"),
    "key": Kind("key_", "/v1/keys", "keys", "key", "wsctl keys list", ("name",),
                lambda r: f"{r.get('kind')}, made {r.get('createdAt')}"),
    "workflow": Kind("wf_", "/v1/workflows", "workflows", "workflow", "wsctl workflow list", ("name",),
                     lambda r: f"{r.get('kind')}, in {r.get('projectId') or 'no specialist'}"),
}
MAX_CANDIDATES = 20


def is_id(kind: str, ref: str) -> bool:
    """Used as given, without a lookup: an id; a skill name or an email, which the server resolves."""
    return kind == "skill" or ref.startswith(KINDS[kind].prefix) or (kind == "member" and "@" in ref)


def resolve_with(request: Callable[..., Any], kind: str, ref: str) -> str:
    """The id `ref` names (see the module docstring), looked up with `request`, a door's
    request(method, path, query=...) answering a route's JSON body."""
    if is_id(kind, ref):
        return ref
    k = KINDS[kind]
    rows = _named(request, k, ref)
    hits = [r for r in rows if any(r.get(f) == ref for f in k.keys)]
    if not hits:
        folded = ref.casefold()
        hits = [r for r in rows if any(isinstance(r.get(f), str) and r[f].casefold() == folded for f in k.keys)]
    if len(hits) == 1:
        return hits[0]["id"]
    if not hits:
        raise ApiError("not_found", f"No {k.label} named '{ref}' that you can see. Run `{k.list_command}`.")
    lines = [f"{r['id']}  {r.get('name') or '-'}  ({k.about(r)})" for r in hits[:MAX_CANDIDATES]]
    if len(hits) > MAX_CANDIDATES:
        lines.append(f"... and {len(hits) - MAX_CANDIDATES} more")
    raise ApiError("invalid_request", f"{len(hits)} {k.label}s are named '{ref}'; give one of these ids instead:",
                   {"candidates": lines})


def _named(request: Callable[..., Any], k: Kind, name: str) -> list[dict]:
    """The entries of the kind's list route the server finds by `?name=` (one request unless more
    than 500 share the name; --limit does not apply to a lookup)."""
    query: dict = {"name": name, "limit": "500"}
    rows: list[dict] = []
    while True:
        try:
            body = request("GET", k.path, query=query)
        except ApiError as e:
            needed = e.detail.get("requiredScope") if isinstance(e.detail, dict) else None
            if e.code == "insufficient_scope" and isinstance(needed, str) and needed != "session":
                raise ApiError(e.code, e.message, {**e.detail, "hint": (
                    f"this key lacks {needed}, which names need (they are looked up in `{k.list_command}`): "
                    f"pass the id ({k.prefix}…), or use a key with {needed}.")}) from None
            if e.code in ("insufficient_scope", "forbidden"):
                raise ApiError(e.code, f"{e.message.rstrip('.')}: looking up a {k.label} by name needs to list them "
                               f"(`{k.list_command}`); give its id ({k.prefix}…) instead.") from None
            raise
        rows.extend(body.get(k.key) or [])
        if not body.get("nextCursor"):
            return rows
        query["cursor"] = body["nextCursor"]
