"""`--debug` (anywhere on the command line) and WSCTL_DEBUG=1: one stderr line per HTTP request.

    debug: GET http://127.0.0.1:8750/v1/credentials?limit=500 -> 200 application/json (12 ms)

Redaction is default-deny. Headers and bodies are never printed (Authorization, cookies and
every token live there). In the URL: user:password is dropped; a query value is printed only
for the keys in SHOWN_QUERY, every other value reads `***`; a path outside /v1 (presigned
transfer links, hosted pages) keeps only its leading plain words, the rest reads `***`.
"""
from __future__ import annotations

import re
import sys
import urllib.parse

enabled = False   # set by cli/main.py from --debug or WSCTL_DEBUG=1

# Query keys whose values are never secret: paging, search text, names of things.
SHOWN_QUERY = frozenset({"limit", "cursor", "q", "service", "path", "format", "kind", "status", "all", "name"})
_WORD = re.compile(r"^[a-z][a-z-]*$")


def redact_url(url: str) -> str:
    parts = urllib.parse.urlsplit(str(url))
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host + (f":{port}" if port else "")
    path = parts.path
    if not path.startswith("/v1/") and path != "/v1":
        kept = []
        for seg in path.split("/")[1:]:
            if not _WORD.match(seg):
                kept.append("***")
                break
            kept.append(seg)
        path = "/" + "/".join(kept) if kept else path
    pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    query = "&".join(f"{urllib.parse.quote(k, safe='')}="
                     f"{urllib.parse.quote(v, safe='') if k in SHOWN_QUERY else '***'}" for k, v in pairs)
    return urllib.parse.urlunsplit((parts.scheme, netloc, path, query, ""))


def trace(method: str, url: str, outcome: str, seconds: float, note: str = "") -> None:
    """One line on stderr when debugging is on; never raises."""
    if not enabled:
        return
    from workspacectl.errors import one_line

    line = f"debug: {method} {redact_url(url)} -> {outcome} ({seconds * 1000:.0f} ms){note}"
    try:
        print(one_line(line), file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
