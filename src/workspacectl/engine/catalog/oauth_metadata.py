"""RFC 8414 authorization server metadata, read at `catalog import` for an `[oauth2]` table that
names its `issuer` and no `clientAuth`: the token endpoint's client authentication is taken from
the metadata's `token_endpoint_auth_methods_supported` (absent: RFC 8414's default,
client_secret_basic). client_secret_post is kept when listed (the default, docs/api.md §4.3), else
client_secret_basic, else none. Metadata that cannot be read (unreachable, not JSON, another
issuer) leaves the default: an import never fails for it. httpx is imported lazily.
"""
from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

TIMEOUT_SECONDS = 5.0
PREFERENCE = ("client_secret_post", "client_secret_basic", "none")


def metadata_url(issuer: str) -> str:
    """RFC 8414 §3.1: the well-known segment goes between the host and the issuer's path."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, "/.well-known/oauth-authorization-server" + path, "", ""))


def client_auth_from_metadata(issuer: str) -> str | None:
    """The client authentication to use at the issuer's token endpoint, or None when unknown."""
    import httpx

    from workspacectl.engine.catalog.urls import BlockedAddress, pin

    url = metadata_url(issuer)
    try:
        target = pin(url, "the OAuth issuer's metadata")
        with httpx.Client(timeout=TIMEOUT_SECONDS, follow_redirects=False) as client:
            resp = client.get(target.url, headers={"Accept": "application/json", **target.headers},
                              extensions=target.extensions)
        body = resp.json() if resp.status_code == 200 else None
    except (BlockedAddress, httpx.HTTPError, ValueError):
        return None
    if not isinstance(body, dict) or body.get("issuer") != issuer:   # RFC 8414 §3.3: it must be identical
        return None
    methods = body.get("token_endpoint_auth_methods_supported", ["client_secret_basic"])
    if not isinstance(methods, list):
        return None
    return next((m for m in PREFERENCE if m in methods), None)
