"""`wsctl profile list | show [NAME] | use NAME | rename OLD NEW | remove NAME`: the profiles in config.toml.

A profile is a local workspace folder and the member it acts as, or a server whose session token
is kept in the keyring (cli/common/config.py). The active one is config's `profile` (`default` when
unset); `--profile` and WSCTL_PROFILE choose another for one command. These commands read and
write config.toml and the profile's stored token; they never open a workspace, so they never
make the embedded workspace. Only `remove` talks to a server: it revokes the removed profile's
session there first (DELETE /v1/auth/session with that profile's own token).
"""
from __future__ import annotations

import os
import re
from typing import Annotated, Any

import typer

from workspacectl.cli.common import config
from workspacectl.cli.common.context import state, token_key
from workspacectl.cli.common.output import JsonOpt, confirm_or_refuse, emit, fields, info, table
from workspacectl.errors import ApiError

app = typer.Typer(no_args_is_help=True)

COLUMNS = [("mark", " "), ("name", "NAME"), ("backend", "BACKEND"), ("location", "SERVER OR WORKSPACE"),
           ("member", "MEMBER")]
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="A profile name (see `wsctl profile list`).")]
PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def in_use(ctx: typer.Context) -> str:
    """The profile this command would use: --profile, else WSCTL_PROFILE, else config's active one."""
    return config.profile_name(state(ctx).profile_flag, config.load())


def entry(name: str, prof: dict, active: str, in_use_name: str) -> dict:
    remote = bool(prof.get("server"))
    return {"name": name, "active": name == active, "inUse": name == in_use_name,
            "backend": "remote" if remote else "local",
            "location": prof.get("server") if remote else prof.get("workspace"),
            "member": None if remote else prof.get("member")}


def how_to_use(name: str, active: bool) -> str:
    """A sentence on whether a profile just made or changed is active, and if not how to use it."""
    if active:
        return " It is the active profile."
    return (f" It is not the active profile: use it with `wsctl -p {name} COMMAND` or WSCTL_PROFILE={name}, "
            f"or make it active with `wsctl profile use {name}`.")


def _require(data: dict, name: str) -> dict:
    profiles = data.get("profiles", {})
    if name not in profiles:
        known = ", ".join(sorted(profiles)) or "none yet"
        raise ApiError("not_found", f"No profile '{name}' (profiles: {known}). Run `wsctl profile list`.")
    return profiles[name]


@app.command("list")
def list_(ctx: typer.Context, json: JsonOpt = False) -> None:
    """List the profiles; the active one is marked *."""
    data = config.load()
    active = data.get("profile") or "default"
    using = in_use(ctx)
    from workspacectl.cli.common.scripting import cap_items

    rows = [entry(n, p, active, using) for n, p in sorted(data.get("profiles", {}).items())]
    body = cap_items({"profiles": rows, "active": active}, "profiles")

    def render(b: Any) -> None:
        table([{**r, "mark": "*" if r["active"] else ""} for r in b["profiles"]], COLUMNS,
              "No profiles yet: `wsctl init` or `wsctl auth login --server URL` makes one.")
        if using != active:
            info(f"This shell uses profile '{using}' ({_why_in_use(ctx)}).")

    emit(ctx, body, render, json_flag=json)


def _why_in_use(ctx: typer.Context) -> str:
    return "--profile" if state(ctx).profile_flag else "WSCTL_PROFILE"


@app.command("show")
def show(ctx: typer.Context,
         name: Annotated[str | None, typer.Argument(metavar="[NAME]", help="A profile (default: the one in use).")] = None,
         json: JsonOpt = False) -> None:
    """Show a profile: its server or workspace, its member, where its token is kept (never the token).

    \b
    Examples:
      wsctl profile show
      wsctl profile show acme --json
    """
    data = config.load()
    name = name or in_use(ctx)
    prof = _require(data, name)
    body = entry(name, prof, data.get("profile") or "default", in_use(ctx))
    if body["backend"] == "remote":
        from workspacectl.cli.common import secrets_store

        body["tokenStorage"] = secrets_store.lookup(token_key(name))[1]

    def render(b: Any) -> None:
        pairs = [("name", b["name"]), ("active", "yes" if b["active"] else f"no (`wsctl profile use {b['name']}`)"),
                 ("backend", b["backend"]), ("server" if b["backend"] == "remote" else "workspace", b["location"])]
        pairs.append(("token", b["tokenStorage"]) if b["backend"] == "remote" else ("member", b["member"]))
        fields(pairs)

    emit(ctx, body, render, json_flag=json)


@app.command("use")
def use(ctx: typer.Context, name: NameArg, json: JsonOpt = False) -> None:
    """Make a profile the active one (config.toml `profile`).

    \b
    Examples:
      wsctl profile use acme
    """
    data = config.load()
    prof = _require(data, name)
    data["profile"] = name
    config.save(data)
    body = entry(name, prof, name, in_use(ctx))

    def render(b: Any) -> None:
        info(f"Profile '{name}' is active: {b['backend']} {b['location']}.")
        env = os.environ.get("WSCTL_PROFILE")
        if env and env != name:
            info(f"WSCTL_PROFILE={env} is set in this shell and still wins; unset it to use '{name}'.")

    emit(ctx, body, render, json_flag=json)


@app.command("rename")
def rename(ctx: typer.Context,
           old: Annotated[str, typer.Argument(metavar="OLD", help="The profile to rename.")],
           new: Annotated[str, typer.Argument(metavar="NEW", help="Its new name: 1-64 letters, digits, '.', '_' "
                                                                "or '-', starting with a letter or digit.")],
           json: JsonOpt = False) -> None:
    """Rename a profile; its stored token and its being active go with it.

    \b
    Examples:
      wsctl profile rename default laptop
    """
    data = config.load()
    _require(data, old)
    if not PROFILE_NAME.fullmatch(new):
        raise ApiError("invalid_request", f"{new[:80]!r} is not a profile name: use 1 to 64 letters, digits, '.', "
                       "'_' or '-', starting with a letter or digit (e.g. prod).")
    if new in data.get("profiles", {}):
        raise ApiError("conflict", f"A profile '{new}' exists already; remove it first (`wsctl profile remove "
                       f"{new}`) or pick another name.")
    from workspacectl.cli.common import secrets_store

    token = secrets_store.get(token_key(old)) if old != new else None
    if token:  # stored under the new name before config names it, so no moment has a profile without it
        secrets_store.set(token_key(new), token)
    data["profiles"][new] = data["profiles"].pop(old)
    active = (data.get("profile") or "default") == old
    if active:
        data["profile"] = new
    config.save(data)
    if token:
        secrets_store.delete(token_key(old))
    body = {"renamed": old, "name": new, "active": active}

    def render(b: Any) -> None:
        msg = f"Renamed profile '{old}' to '{new}'" + (" and moved its stored token." if token else ".")
        info(msg + how_to_use(new, active))
        if os.environ.get("WSCTL_PROFILE") == old:
            info(f"WSCTL_PROFILE={old} is set in this shell; set it to {new}.")

    emit(ctx, body, render, json_flag=json)


@app.command("remove")
def remove(ctx: typer.Context, name: NameArg,
           yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
           force: Annotated[bool, typer.Option("--force", help="Forget the profile even when its session cannot "
                                               "be revoked on the server (it then stays valid there).")] = False,
           json: JsonOpt = False) -> None:
    """Forget a profile: revoke its session on its server, then delete its stored token.

    Its workspace folder or server is left alone. When the session cannot be revoked (the server
    is unreachable) nothing is removed, unless --force. Removing the active profile asks first
    (or --yes), and says which profile is active next.

    \b
    Examples:
      wsctl profile remove old-server --yes
    """
    data = config.load()
    prof = _require(data, name)
    active = data.get("profile") or "default"
    rest = sorted(n for n in data.get("profiles", {}) if n != name)
    successor = None
    if name == active:
        successor = "default" if "default" in rest else (rest[0] if rest else None)
        then = f"'{successor}' becomes active" if successor else "no profile is left"
        confirm_or_refuse(f"Remove the active profile '{name}'? {then}.", yes)
    from workspacectl.cli.common import secrets_store

    revoked, failure = _revoke(prof, secrets_store.get(token_key(name)))
    if failure and not force:
        raise ApiError(failure.code, f"Could not revoke profile '{name}''s session on {prof.get('server')}: "
                       f"{failure.message.rstrip('.')}. Nothing was removed; run again when the server answers, "
                       "or pass --force to forget the profile anyway (its session then stays valid there).")
    secrets_store.delete(token_key(name))  # a remote profile's session token (nothing for a local one)
    data = config.load()
    data.get("profiles", {}).pop(name, None)
    if not data.get("profiles"):
        data.pop("profiles", None)
    if name == active:
        if successor:
            data["profile"] = successor
        else:
            data.pop("profile", None)
    config.save(data)
    left = data.get("profiles", {})
    body = {"removed": name, "active": (data.get("profile") or "default") if left else None,
            "sessionRevoked": revoked}

    def render(b: Any) -> None:
        where = f"its server {prof['server']}" if prof.get("server") else f"the workspace at {prof.get('workspace')}"
        if failure:
            msg = (f"Removed profile '{name}' and its stored token, but its session on {prof.get('server')} could "
                   f"not be revoked ({failure.message.rstrip('.')}); it stays valid there.")
        elif revoked:
            msg = f"Revoked profile '{name}''s session on {prof['server']}, removed the profile and its stored token."
        else:
            msg = f"Removed profile '{name}' and its stored token; {where} is untouched."
        if name == active:
            msg += f" Active now: '{successor}'." if successor else " No profile is left; `wsctl init` or `wsctl auth login` makes one."
        info(msg)

    emit(ctx, body, render, json_flag=json)


def _revoke(prof: dict, token: str | None) -> tuple[bool | None, ApiError | None]:
    """Sign the profile's own session out on its own server: (revoked, why not). revoked is None
    when there is nothing to revoke (a local profile, or no stored token); a token the server no
    longer knows counts as revoked."""
    if not prof.get("server") or not token:
        return None, None
    from workspacectl.backend import timeouts
    from workspacectl.backend.remote import RemoteBackend

    be = RemoteBackend(prof["server"], token, timeout=timeouts.seconds_or(15.0))
    try:
        be.request("DELETE", "/v1/auth/session")
    except ApiError as e:
        if e.code == "unauthenticated":
            return True, None
        return False, e
    finally:
        be.http.close()
    return True, None
