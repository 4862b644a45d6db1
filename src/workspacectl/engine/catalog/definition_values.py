"""The values a service definition is made of, shared by its readers: the TOML reader (importer.py),
the OpenAPI reader (openapi_reader.py) and the schema walk (schema_walk.py).

The one-line import error naming the file, the rule for a service name, names folded to kebab case,
and TOML/YAML values turned into bounded JSON.
"""
from __future__ import annotations

import datetime as _dt
import re
import unicodedata
from typing import Any

from workspacectl.errors import ApiError

SERVICE_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
# The generic trigger providers (catalog_data/_generic.toml) answer their own id as `service`
# (the seed types it as a string), so no catalog service may take one of these names.
GENERIC_SERVICES = ("webhook", "cron")
MAX_NAME = 120
MAX_SERVICE = 64


def bad(where: str, message: str) -> ApiError:
    return ApiError("invalid_request", f"{where}: {message}")


def ascii_fold(text: str) -> str:
    """Letters with accents or compatibility forms as their ASCII base: 'über' -> 'uber',
    'ﬁle' -> 'file', 'Ⅻ' -> 'XII', 'ß' -> 'ss'. Other non-ASCII characters are kept."""
    if text.isascii():
        return text
    s = unicodedata.normalize("NFKD", text.replace("ß", "ss").replace("ẞ", "SS"))
    return "".join(c for c in s if not unicodedata.combining(c))


def kebab(text: str) -> str:
    """'chat_postMessage' -> 'chat-post-message'; 'repos/get-HTTPStatus' -> 'repos-get-http-status';
    'créerContact' -> 'creer-contact' (accents folded to ASCII, not dropped)."""
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", ascii_fold(str(text)[:MAX_NAME * 4]))
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1-\2", s)
    s = re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower()
    return s[:MAX_NAME].strip("-")


def jsonable(value: Any, depth: int = 0, budget: list | None = None) -> Any:
    """TOML/YAML values as JSON: dates become ISO strings. Depth and size are capped, since YAML
    aliases can make a value cyclic or exponentially large."""
    budget = [5000] if budget is None else budget
    budget[0] -= 1
    if depth > 12 or budget[0] < 0:
        return "…"
    if isinstance(value, dict):
        return {str(k)[:200]: jsonable(v, depth + 1, budget) for k, v in list(value.items())[:200]}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, depth + 1, budget) for v in value[:200]]
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):  # not JSON
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
