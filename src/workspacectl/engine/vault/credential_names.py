"""Credential names: a handle of the credential's own, such as `stripe-live` (issue 12).

- 1 to 64 characters: ASCII letters, digits, `.`, `_` and `-`, starting with a letter or digit,
  so a name is one word in a shell, an env file and a `{{ wsctl://NAME/FIELD }}` reference.
- Never `cred_…`: that prefix means an id, and an id always wins where a command takes either.
- Unique in the workspace without regard to case (409 on a clash), so a name names one
  credential for everyone who can see it.
- When none is given the name is the service's (`stripe`), made unique in order: `stripe-2`,
  `stripe-3`, …
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

MAX_NAME = 64
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
ID_PREFIX = "cred_"


def check_name(value: Any) -> str:
    """A valid name as given, or 400 saying what a name may hold."""
    if not isinstance(value, str) or not NAME.fullmatch(value) or value.lower().startswith(ID_PREFIX):
        shown = value[:80] if isinstance(value, str) else type(value).__name__
        raise ApiError("invalid_request", f"{shown!r} is not a credential name: use 1 to {MAX_NAME} letters, "
                       "digits, '.', '_' or '-', starting with a letter or digit and not with 'cred_' "
                       "(e.g. stripe-live).")
    return value


def name_base(service: str) -> str:
    """The default name of a service's credential before it is made unique."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", service or "").strip("-._")[:MAX_NAME - 4] or "credential"
    return "credential" if base.lower().startswith(ID_PREFIX) else base


def unique_name(conn: Conn, base: str) -> str:
    """`base`, or `base-N` with the smallest N >= 2 that no credential of the workspace has."""
    from workspacectl.engine.store import vault as store

    if store.credential_id_named(conn, base) is None:
        return base
    stem = base[:MAX_NAME - 4]
    taken = store.credential_names_like(conn, stem)
    n = 2
    while f"{stem}-{n}".lower() in taken:
        n += 1
    return f"{stem}-{n}"


def require_free(conn: Conn, name: str, except_id: str | None = None) -> None:
    from workspacectl.engine.store import vault as store

    holder = store.credential_id_named(conn, name)
    if holder is not None and holder != except_id:
        raise ApiError("conflict", f"A credential named '{name}' already exists in this workspace; "
                       "choose another name.")
