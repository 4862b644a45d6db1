"""What a path sent through the credential proxy may hold (docs/api.md "Authenticated proxy").

The path after `/v1/credentials/:id/proxy/` is appended to the service's base URL, so it must
stay under it: no `.` or `..` segment (in any percent-encoding, once or twice), no empty segment
(`//host` would start another authority), no absolute URL, no backslash, no encoded slash,
backslash or NUL, no control character or space, and percent signs only as `%XX`. Pure: the
engine refuses such a path on every door, and the CLI says the same before it sends anything.
"""
from __future__ import annotations

import re
from urllib.parse import unquote

MAX_PATH = 4096
PROXY_SEGMENT = "proxy"
_CONTROL = re.compile(r"[\x00-\x20\x7f]")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_ENCODED = re.compile(r"%(2f|5c|00)", re.IGNORECASE)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def refusal(path: str) -> str | None:
    """Why `path` (still percent-encoded, without its leading slash) may not be proxied, or None."""
    if len(path) > MAX_PATH:
        return f"the path is over {MAX_PATH} characters"
    if _CONTROL.search(path) or "\\" in path:
        return "the path holds a space, a control character or a backslash; percent-encode it"
    if _BAD_ESCAPE.search(path):
        return "the path holds a '%' that is not a %XX escape"
    if _ENCODED.search(path) or _ENCODED.search(unquote(path)):
        return "the path holds an encoded '/', '\\' or NUL"
    if "://" in path or _SCHEME.match(path):
        return "the path is an absolute URL; give the path on the service, e.g. repos/OWNER/NAME"
    segments = path.split("/")
    for i, segment in enumerate(segments):
        once = unquote(segment)
        if once in (".", "..") or unquote(once) in (".", ".."):
            return "the path holds a '.' or '..' segment"
        if segment == "" and i != len(segments) - 1:
            return "the path holds an empty segment ('//')"
    return None


def split_proxy_path(path: str) -> tuple[str, str] | None:
    """('cred_…', 'rest/of/path') of '/v1/credentials/cred_…/proxy/rest/of/path', else None."""
    head = "/v1/credentials/"
    if not path.startswith(head):
        return None
    cred, sep, rest = path[len(head):].partition("/")
    word, sep2, tail = rest.partition("/")
    if not cred or not sep or word != PROXY_SEGMENT or not sep2:
        return None
    return cred, tail
