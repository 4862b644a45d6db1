"""Keyset pagination: `limit` (default 100, max 500) and an opaque `cursor`.

Store functions take `after` (the last key of the previous page, or None) and `limit + 1`;
`page()` trims the extra row and makes the next cursor from the last key returned.
"""
from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from workspacectl.engine.validate import bad, query_int

if TYPE_CHECKING:
    from workspacectl.engine.registry import PublicCtx

DEFAULT_LIMIT = 100
MAX_LIMIT = 500
# A cursor we make is a short JSON string, integer or flat list of scalars. Anything longer or of
# another shape is refused before it is parsed: a forged cursor of 3,000 '[' made the JSON
# decoder recurse until it failed with a server error.
MAX_CURSOR_CHARS = 4096
_STRING = rb'"(?:[^"\\]|\\.)*"'
_CURSOR_SHAPE = re.compile(_STRING + rb'|-?\d{1,20}|\[(?:' + _STRING + rb'|[^\[\]{}"])*\]')


MAX_NAME_FILTER = 200


def name_filter(ctx: PublicCtx) -> tuple[str, str] | None:
    """`?name=` on a list route (what `wsctl` resolves a name with, in one request): (the name,
    its casefold()) for store.name_clause and store.fetch_named, or None when absent or empty.
    Entries match when their name equals it regardless of case, by full Unicode case folding
    ("équipe" finds "Équipe", "STRASSE" finds "Straße"), the same on SQLite and PostgreSQL; the
    client picks an exact match over the others."""
    name = ctx.query.get("name") or None
    if name is None:
        return None
    if len(name) > MAX_NAME_FILTER:
        raise bad(f"Query parameter 'name' is at most {MAX_NAME_FILTER} characters.")
    return name, name.casefold()


def page_args(ctx: PublicCtx, key_type: type | tuple = str) -> tuple[int, Any]:
    """(limit, after). `after` is checked to be of key_type (a store binds it as a parameter)."""
    limit = query_int(ctx, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    raw = ctx.query.get("cursor") or None
    after = _decode_cursor(raw) if raw else None
    if raw and not _valid(after, key_type):
        raise bad("The cursor is not valid; pass the nextCursor of the previous page.")
    return limit, after


def _decode_cursor(raw: str) -> Any:
    """The key a cursor holds, or None when it is not one we could have made (refused by the
    caller). Bounded in size and checked for shape before the JSON decoder sees it."""
    if len(raw) > MAX_CURSOR_CHARS or not raw.isascii():
        return None
    try:
        data = base64.urlsafe_b64decode(raw.encode() + b"===")
    except (ValueError, binascii.Error):
        return None
    if not _CURSOR_SHAPE.fullmatch(data):
        return None
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def _valid(value: Any, key_type: type | tuple) -> bool:
    if key_type is list:
        return isinstance(value, list) and all(isinstance(x, (str, int, float)) and not isinstance(x, bool)
                                               and _bindable(x) for x in value)
    return isinstance(value, key_type) and not isinstance(value, bool) and _bindable(value)


def _bindable(value: object) -> bool:
    """SQLite can bind it: an int within 64 bits, a str without lone surrogates (a forged
    cursor may hold either; binding would fail with a server error)."""
    if isinstance(value, int):
        return -2**63 <= value < 2**63
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
    return True


def encode_cursor(key: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode().rstrip("=")


R = TypeVar("R")   # a row of the page: a store's row, or an entry built from one


def page(name: str, rows: Sequence[R], limit: int, key: Callable[[R], Any], render: Callable[[R], dict]) -> dict:
    """{name: [render(row)...], nextCursor} from up to limit+1 rows; key(row) is the sort key."""
    more = len(rows) > limit
    rows = rows[:limit]
    return {name: [render(r) for r in rows], "nextCursor": encode_cursor(key(rows[-1])) if more and rows else None}
