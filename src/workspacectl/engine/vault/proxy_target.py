"""Where a proxied call goes and what crosses: the target URL, the headers each way, Retry-After.

- The target is the service's `baseUrl` (catalog definition) with `{field}` placeholders filled
  from the credential's non-secret fields, plus the path after `/proxy/` (formats/proxy_path.py
  rules) and the query string as sent. A leading `{instanceUrl}`-style field must be a plain
  http(s) URL; a field inside the URL may hold only unreserved characters, so no field can move
  the host. The target's scheme, host and port must be the filled base URL's.
- Request headers: the caller's, without hop-by-hop ones, its own key (`Authorization`), cookies,
  forwarding headers and `X-Wsctl-*`; then the credential presented as `[auth]` says (a header
  the credential sets cannot be overridden; the definition's extra headers can).
- Answer headers: the service's, without hop-by-hop ones, cookies, authentication challenges,
  any header carrying one of the credential's secrets, and any `X-Wsctl-*`. `Location` and
  `Link` URLs under the base URL are rewritten to this proxy's own path.
"""
from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Callable
from urllib.parse import unquote_plus, urlencode, urljoin, urlsplit

from workspacectl.errors import ApiError
from workspacectl.formats import proxy_path

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "trailers",
                        "transfer-encoding", "upgrade"})
REQUEST_DROPPED = HOP_BY_HOP | {"host", "authorization", "proxy-authorization", "cookie", "content-length",
                                "expect", "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto",
                                "x-real-ip"}
ANSWER_DROPPED = HOP_BY_HOP | {"set-cookie", "set-cookie2", "www-authenticate", "proxy-authenticate",
                               "authentication-info", "proxy-authentication-info"}
OURS = "x-wsctl-"
_FIELD = re.compile(r"\{([A-Za-z0-9_]+)\}")
_UNRESERVED = re.compile(r"[A-Za-z0-9._~-]+")
_QUERY_UNSAFE = re.compile(r"[\x00-\x20\x7f#]")


def _conflict(message: str) -> ApiError:
    return ApiError("conflict", message)


def base_url(setup: dict, fields: dict, service: str) -> str:
    """The service's base URL with the credential's fields filled in; 409 when it cannot be made."""
    base = setup.get("baseUrl")
    if not isinstance(base, str) or not base:
        raise _conflict(f"{service} has no baseUrl in its catalog definition, so nothing can be proxied to it; an "
                        "owner or admin adds one with `wsctl catalog import`.")
    lower = {k.lower(): v for k, v in fields.items() if isinstance(v, str) and v}

    def fill(m: re.Match) -> str:
        name = m.group(1)
        value = lower.get(name.lower())
        if value is None:
            raise _conflict(f"The credential has no '{name}' field, which {service}'s base URL needs; reconnect it "
                            f"with `wsctl vault connect {service} --reconnect ID`.")
        if m.start() == 0:   # a whole address: {instanceUrl}/services/data/v61.0
            parts = urlsplit(value)
            if (parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc
                    or parts.query or parts.fragment or "\\" in value or _QUERY_UNSAFE.search(value)):
                raise _conflict(f"The credential's '{name}' field is not a plain http(s) URL; reconnect it with the "
                                "service's address.")
            return value.rstrip("/")
        if not _UNRESERVED.fullmatch(value):
            raise _conflict(f"The credential's '{name}' field holds characters that may not go into {service}'s "
                            "URL; reconnect it with the right value.")
        return value

    return _FIELD.sub(fill, base)


def origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or (443 if parts.scheme == "https" else 80)


def target_url(base: str, tail: str, query: str) -> str:
    """base + '/' + tail (+ the base's own query and the forwarded one); 400 for a path that would
    leave the base URL, whatever its spelling."""
    why = proxy_path.refusal(tail)
    if why is None and _QUERY_UNSAFE.search(query):
        why = "the query string holds a space, a control character or '#'"
    if why:
        raise ApiError("invalid_request", f"Refused to proxy this request: {why}. Nothing was sent.")
    parts = urlsplit(base)
    joined = "&".join(q for q in (parts.query, query) if q)
    url = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}/{tail}" + (f"?{joined}" if joined else "")
    if origin(url) != origin(base) or not urlsplit(url).path.startswith(parts.path.rstrip("/")):
        raise ApiError("invalid_request", "Refused to proxy this request: the path would leave the service's "
                       "base URL. Nothing was sent.")
    return url


def forwarded_query(query_string: str, dropped: set[str]) -> str:
    """The query string as sent, without the parameters named in `dropped` (ours, or the one the
    credential is presented in)."""
    if not dropped:
        return query_string
    return "&".join(p for p in query_string.split("&")
                    if p and unquote_plus(p.partition("=")[0]) not in dropped)


def auth_query(params: dict) -> str:
    return urlencode(params)


def request_headers(caller: list[tuple[str, str]], presented: dict, extra_names: set[str]) -> list:
    """What is sent: the caller's headers that may cross, as the bytes they arrived as (latin-1
    decoded, as HTTP carries them), then the credential's presentation (UTF-8)."""
    secret_names = {k.lower() for k in presented} - extra_names   # the headers the credential is in
    sent: list[tuple[str, bytes]] = []
    given = set()
    dropped = REQUEST_DROPPED | _listed_in_connection(caller)
    for name, value in caller:
        lower = name.lower()
        if lower in dropped or lower.startswith(OURS) or lower in secret_names:
            continue
        given.add(lower)
        sent.append((name, value.encode("latin-1", "replace")))
    for name, value in presented.items():
        if name.lower() in secret_names or name.lower() not in given:
            sent.append((name, value.encode("utf-8")))
    if "accept-encoding" not in given:   # the body is relayed as it comes: no compression unasked for
        sent.append(("Accept-Encoding", b"identity"))
    return sent


def _listed_in_connection(headers: list[tuple[str, str]]) -> set[str]:
    return {n.strip().lower() for k, v in headers if k.lower() == "connection" for n in v.split(",") if n.strip()}


def answer_headers(upstream: list[tuple[str, str]], secret_values: list[str],
                   rewrite: Callable[[str], str | None]) -> list[tuple[str, str]]:
    """The service's answer headers that may reach the caller; `rewrite(url)` answers the proxy
    path of a URL under the base URL (None: leave it)."""
    dropped = ANSWER_DROPPED | _listed_in_connection(upstream)
    out = []
    for name, value in upstream:
        lower = name.lower()
        if lower in dropped or lower.startswith(OURS) or any(s in value for s in secret_values):
            continue
        if lower == "location":
            value = rewrite(value) or value
        elif lower == "link":
            value = re.sub(r"<([^>]*)>", lambda m: f"<{rewrite(m.group(1)) or m.group(1)}>", value)
        out.append((name, value))
    return out


def proxy_path_of(url: str, request_url: str, base: str, prefix: str) -> str | None:
    """prefix + the part of `url` (resolved against the request's URL) under the base URL, or None
    when it is elsewhere."""
    absolute = urljoin(request_url, url)
    if origin(absolute) != origin(base):
        return None
    b, u = urlsplit(base), urlsplit(absolute)
    root = b.path.rstrip("/") + "/"
    if not (u.path + "/").startswith(root):
        return None
    return prefix + u.path[len(root):] + (f"?{u.query}" if u.query else "")


def retry_after(value: str | None) -> float | None:
    """Seconds a Retry-After asks for (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())
