"""Body and query field helpers. Each failure is ApiError('invalid_request') naming the field."""
from __future__ import annotations

import re
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Literal, overload

from workspacectl.errors import ApiError
from workspacectl.formats import walk

if TYPE_CHECKING:
    from workspacectl.engine.registry import PublicCtx

EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")

_MISSING = object()


def text_problem(value: Any) -> str | None:
    """Why a JSON-like value (dict keys too) is not text both stores keep, or None: "surrogate" for
    a string that cannot be encoded as UTF-8 (a lone surrogate escape, which SQLite cannot bind),
    "nul" for one holding a NUL (which PostgreSQL text cannot hold; refused on SQLite too, so both
    stores answer alike).
    A body may nest as deep as the JSON parser allows, a YAML definition may hold itself (walk.strings)."""
    for s in walk.strings(value):
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            return "surrogate"
        if "\x00" in s:
            return "nul"
    return None


def bad(message: str) -> ApiError:
    return ApiError("invalid_request", message)


def body_dict(ctx: PublicCtx, allow_empty: bool = True) -> dict:
    body = ctx.body
    if body is None and allow_empty:
        return {}
    if not isinstance(body, dict):
        raise bad("The request body must be a JSON object.")
    return body


def _given(body: dict, name: str, required: bool) -> Any:
    """The field's value; _MISSING when it is absent or null and not required."""
    value = body.get(name)
    if value is None:
        if required:
            raise bad(f"'{name}' is required.")
        return _MISSING
    return value


@overload
def string(body: dict, name: str, *, required: Literal[True] = True, min_len: int = 1, max_len: int = 1000,
           default: None = None) -> str: ...
@overload
def string(body: dict, name: str, *, required: bool = True, min_len: int = 1, max_len: int = 1000,
           default: str) -> str: ...
@overload
def string(body: dict, name: str, *, required: bool = True, min_len: int = 1, max_len: int = 1000,
           default: None = None) -> str | None: ...
def string(body: dict, name: str, *, required: bool = True, min_len: int = 1, max_len: int = 1000,
           default: str | None = None) -> str | None:
    """The field as a string of min_len to max_len characters (400 otherwise); absent or null:
    400 when required, else `default`."""
    value = _given(body, name, required)
    if value is _MISSING:
        return default
    if not isinstance(value, str):
        raise bad(f"'{name}' must be a string.")
    if not (min_len <= len(value) <= max_len):
        raise bad(f"'{name}' must be {min_len} to {max_len} characters long.")
    return value


@overload
def choice(body: dict, name: str, choices: Collection[str], *, required: Literal[True] = True,
           default: None = None) -> str: ...
@overload
def choice(body: dict, name: str, choices: Collection[str], *, required: bool = True, default: str) -> str: ...
@overload
def choice(body: dict, name: str, choices: Collection[str], *, required: bool = True,
           default: None = None) -> str | None: ...
def choice(body: dict, name: str, choices: Collection[str], *, required: bool = True,
           default: str | None = None) -> str | None:
    value = string(body, name, required=required, default=default)
    if value is not None and value not in choices:
        raise bad(f"'{name}' must be one of: {', '.join(choices)}.")
    return value


def string_list(body: dict, name: str, *, required: bool = True, choices: Collection[str] | None = None,
                max_items: int = 100) -> list[str]:
    value = _given(body, name, required)
    if value is _MISSING:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or len(value) > max_items:
        raise bad(f"'{name}' must be a list of strings.")
    if choices is not None:
        unknown = [v for v in value if v not in choices]
        if unknown:
            raise bad(f"Unknown {name}: {', '.join(unknown)}. Allowed: {', '.join(choices)}.")
    return list(dict.fromkeys(value))


@overload
def boolean(body: dict, name: str, *, required: Literal[True] = True, default: None = None) -> bool: ...
@overload
def boolean(body: dict, name: str, *, required: bool = True, default: bool) -> bool: ...
@overload
def boolean(body: dict, name: str, *, required: bool = True, default: None = None) -> bool | None: ...
def boolean(body: dict, name: str, *, required: bool = True, default: bool | None = None) -> bool | None:
    value = _given(body, name, required)
    if value is _MISSING:
        return default
    if not isinstance(value, bool):
        raise bad(f"'{name}' must be true or false.")
    return value


@overload
def integer(body: dict, name: str, *, required: Literal[True] = True, default: None = None,
            minimum: int | None = None, maximum: int | None = None) -> int: ...
@overload
def integer(body: dict, name: str, *, required: bool = True, default: int,
            minimum: int | None = None, maximum: int | None = None) -> int: ...
@overload
def integer(body: dict, name: str, *, required: bool = True, default: None = None,
            minimum: int | None = None, maximum: int | None = None) -> int | None: ...
def integer(body: dict, name: str, *, required: bool = True, default: int | None = None,
            minimum: int | None = None, maximum: int | None = None) -> int | None:
    value = _given(body, name, required)
    if value is _MISSING:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(f"'{name}' must be an integer.")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise bad(f"'{name}' must be between {minimum} and {maximum}.")
    return value


def query_int(ctx: PublicCtx, name: str, default: int, minimum: int, maximum: int) -> int:
    raw = ctx.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise bad(f"Query parameter '{name}' must be an integer.") from None
    if not minimum <= value <= maximum:
        raise bad(f"Query parameter '{name}' must be between {minimum} and {maximum}.")
    return value


def email_address(value: str, label: str = "email") -> str:
    value = (value or "").strip()
    if len(value) > 320 or not EMAIL.match(value):
        raise bad(f"{label} '{value[:80]}' is not an email address; give one like name@example.com.")
    return value.lower()
