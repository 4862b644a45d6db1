"""Builds the backend a command talks to, from flags, environment and config (strongest first):

    flag  >  WSCTL_PROFILE  >  WSCTL_SERVER  >  WSCTL_WORKSPACE  >  WSCTL_TOKEN  >  WSCTL_API_KEY  >  config

A profile named by --profile or WSCTL_PROFILE that exists is used as configured (its server or
workspace, its stored token): the variables after WSCTL_PROFILE are weaker, so they do not apply.
"""
from __future__ import annotations

import os
import sys
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workspacectl.backend.base import ON_WRITE
from workspacectl.cli.common import config
from workspacectl.cli.common.paths import default_workspace
from workspacectl.cli.common.scripting import page_limit
from workspacectl.cli.common.state import state
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    import typer

    from workspacectl.backend.base import Backend
    from workspacectl.backend.local import LocalBackend


@dataclass
class Target:
    profile: str
    kind: str                 # local | remote
    location: str             # workspace folder or server URL
    secret: str | None        # the session token or API key presented (never printed)
    secret_source: str        # WSCTL_TOKEN | WSCTL_API_KEY | keyring | profile member | withheld | ...
    member: str | None = None
    withheld: str | None = None   # why a stored token was not sent (said when the server answers 401)


def token_key(profile: str) -> str:
    return f"profile:{profile}"


def resolve(profile_flag: str | None = None, new_profile_ok: bool = False) -> Target:
    data = config.load()
    name = config.profile_name(profile_flag, data)
    prof = config.get_profile(data, name)
    env: Mapping[str, str] = os.environ
    named = profile_flag or env.get("WSCTL_PROFILE")
    if named and named != "default" and not prof and not new_profile_ok and not (env.get("WSCTL_SERVER") or env.get("WSCTL_WORKSPACE")):
        # A mistyped profile must not quietly fall back to (or create) the embedded workspace.
        known = ", ".join(sorted(data.get("profiles", {}))) or "none yet"
        raise ApiError("not_found", f"No profile '{name}' (profiles: {known}). Make it with "
                       f"`wsctl auth login --profile {name} --server URL` or `wsctl init --workspace DIR`.")
    env_secret = None
    for var in ("WSCTL_TOKEN", "WSCTL_API_KEY"):
        if env.get(var):
            env_secret = (env[var].strip(), var)
            break
    if named and (prof.get("server") or prof.get("workspace")):
        # The named profile wins over every variable after WSCTL_PROFILE; a token variable only
        # fills in when the profile has no stored token of its own.
        fallback, env, env_secret = env_secret, {}, None
    else:
        fallback = None
    if env.get("WSCTL_SERVER"):
        server, local_path = server_url(env["WSCTL_SERVER"], "WSCTL_SERVER"), None
    elif env.get("WSCTL_WORKSPACE"):
        server, local_path = None, env["WSCTL_WORKSPACE"]
    elif prof.get("server"):
        server, local_path = server_url(prof["server"], f"The server of profile '{name}'"), None
    else:
        server, local_path = None, prof.get("workspace")
    if server:
        if env_secret:
            return Target(name, "remote", server.rstrip("/"), env_secret[0], env_secret[1])
        from workspacectl.cli.common import secrets_store

        if not prof.get("server") or server_url(prof["server"], f"The server of profile '{name}'") != server:
            # WSCTL_SERVER names another server than the profile's: never send it the profile's token.
            return _without_token(name, prof.get("server"), server)

        token, source = secrets_store.lookup(token_key(name))
        if token is None and fallback:
            token, source = fallback
        return Target(name, "remote", server.rstrip("/"), token, source)
    path = local_location(local_path) if local_path else str(default_workspace())
    if env_secret:
        return Target(name, "local", path, env_secret[0], env_secret[1])
    member = prof.get("member") if prof.get("workspace") and _same(prof["workspace"], path) else None
    return Target(name, "local", path, None, "profile member" if member else "workspace owner", member)


def _without_token(name: str, stored_for: str | None, server: str) -> Target:
    """WSCTL_SERVER names another server than the one the profile's token was stored for: the
    token is not sent, and a 401 from that server says so and what to pass instead."""
    from workspacectl.cli.common import secrets_store

    if not stored_for or secrets_store.lookup(token_key(name))[0] is None:
        return Target(name, "remote", server, None, "none")
    why = (f"Not signed in to {server}: profile '{name}' holds a token for {stored_for.rstrip('/')}, not for "
           f"this server, so it was not sent. Sign in here with `wsctl auth login --server {server} --profile "
           "NAME`, pass a token for it in WSCTL_TOKEN, or unset WSCTL_SERVER to use the profile's server.")
    return Target(name, "remote", server, None, "withheld", withheld=why)


def server_url(url: str, where: str) -> str:
    """An http(s) base URL, or 400 naming where it came from (never an unreachable-server 8).
    A URL ending in /v1 (the API's prefix) names the same server."""
    url = url.strip()
    try:
        parts = urllib.parse.urlsplit(url)
        _ = parts.port  # raises on a port that is not a number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ApiError("invalid_request", f"{where} '{url}' is not a server URL; use http(s)://HOST[:PORT].")
    url = url.rstrip("/")
    return url[:-3].rstrip("/") if url.endswith("/v1") else url


def location_arg(value: Path | None) -> str | None:
    """A --workspace value: options are typed Path (shells complete folders), which folds the //
    of a postgresql:// URL; this gives the URL back as typed."""
    if value is None:
        return None
    text = str(value)
    for scheme in ("postgresql:", "postgres:"):
        if text.startswith(scheme + "/") and not text.startswith(scheme + "//"):
            return scheme + "//" + text[len(scheme) + 1:]
    return text


def local_location(raw: str) -> str:
    """A workspace folder (user-expanded) or a postgresql:// URL (as given)."""
    from workspacectl.formats.workspace_url import is_postgres_url

    return raw if is_postgres_url(raw) else str(Path(raw).expanduser())


def _same(a: str, b: str) -> bool:
    from workspacectl.formats.workspace_url import is_postgres_url, without_password

    if is_postgres_url(a) or is_postgres_url(b):
        return is_postgres_url(a) and is_postgres_url(b) and without_password(a) == without_password(b)
    return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()


def ensure_workspace_path(path: Path | str, profile: str | None) -> None:
    """The embedded default is made on first use (kept only if the command succeeds,
    cli/common/first_use.py); any other missing folder (or database without a workspace) is an error."""
    from workspacectl.backend.local import workspace_exists
    from workspacectl.formats.workspace_url import is_postgres_url, redacted

    if is_postgres_url(str(path)):
        if workspace_exists(str(path)):
            return
        raise ApiError("not_found", f"No workspace in {redacted(str(path))}. "
                                    "Run `wsctl init --workspace URL` to make one there.")
    if _same(str(path), str(default_workspace())):
        from workspacectl.cli.common import first_use

        first_use.ensure_default(default_workspace(), profile or config.profile_name(None, config.load()))
        return
    if workspace_exists(path):
        return
    raise ApiError("not_found", f"No workspace at {path}. Run `wsctl init --workspace {path}` to make one.")


def open_local(target: Target) -> LocalBackend:
    from workspacectl.backend.local import LocalBackend

    path = target.location
    ensure_workspace_path(path, target.profile)
    return opened(LocalBackend.open(path, secret=target.secret, member=target.member))


_opened: list[LocalBackend] = []   # local backends opened in this process (housekeeping, then closed, after the command)


def opened(be: LocalBackend) -> LocalBackend:
    """A local backend this command opened: swept and closed after the command (after_command)."""
    _opened.append(be)
    return be


def after_command(housekeeping: bool = True) -> None:
    """Once a command's output is out: housekeeping of the workspaces it opened locally, at most
    once an hour per workspace (LocalBackend.housekeeping; not after an interrupt), then each is
    closed (no connection is left for the interpreter's exit to collect). Never fails the command."""
    if not _opened:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    for be in _opened:
        try:
            if housekeeping:
                be.housekeeping()
        except Exception:  # a locked database, a read-only folder: the next command tries again
            pass
        try:
            be.close()
        except Exception:  # a connection already broken: the process ends anyway
            pass
    _opened.clear()


def _drop_completion_cache() -> None:
    from workspacectl.cli.common import completion_cache

    completion_cache.clear()


# A call that may change names (any method but GET) drops the completion cache first.
if _drop_completion_cache not in ON_WRITE:
    ON_WRITE.append(_drop_completion_cache)


_sources: list[str] = []   # where the secret of each backend this command opened came from


def secret_source() -> str | None:
    """Where the secret of the backend this command opened came from (WSCTL_TOKEN, keyring, ...)."""
    return _sources[-1] if _sources else None


def open_backend(target: Target) -> Backend:
    _sources.append(target.secret_source)
    if target.kind == "remote":
        from workspacectl.backend.remote import RemoteBackend

        return RemoteBackend(target.location, target.secret, unauthenticated_hint=target.withheld)
    return open_local(target)


def backend(ctx: typer.Context) -> Backend:
    st = state(ctx)
    if st._backend is None:
        st._backend = open_backend(resolve(st.profile_flag))
    return st._backend


def all_pages(ctx: typer.Context, path: str, key: str, query: dict | None = None, default_limit: int | None = None) -> dict:
    """Every page of a list route, as one body {key: [...], "nextCursor": null}.

    A list command shows the whole list: it follows nextCursor rather than stopping at one page.
    With `--limit N` (cli/common/scripting.py) it stops after N entries, asking each page for at most the
    entries still wanted, so the nextCursor answered is exactly where the next run continues.
    """
    cap = page_limit(default_limit)
    query = {**(query or {}), "limit": "500"}
    items: list = []
    while True:
        if cap is not None:
            query["limit"] = str(min(500, cap - len(items)))
        body = backend(ctx).request("GET", path, query=query)
        items.extend(body.get(key) or [])
        if not body.get("nextCursor") or (cap is not None and len(items) >= cap):
            return {key: items[:cap] if cap is not None else items, "nextCursor": body.get("nextCursor")}
        query["cursor"] = body["nextCursor"]
