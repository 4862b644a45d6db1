"""`wsctl auth`: sign in to a server with a login code, see who you are, sign out."""
from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from workspacectl.cli.common import config, secrets_store
from workspacectl.cli.common.context import Target, backend, resolve, state, token_key
from workspacectl.cli.common.output import JsonOpt, emit, fields, info
from workspacectl.cli.profile.commands import how_to_use
from workspacectl.errors import ApiError

app = typer.Typer(no_args_is_help=True)

ProfileOpt = Annotated[str | None, typer.Option("--profile", "-p", help="Profile to use (default: the active one).")]


def _profile(ctx: typer.Context, flag: str | None) -> str:
    st = state(ctx)
    if flag:
        st.profile_flag = flag
    return config.profile_name(st.profile_flag, config.load())


@app.command("login")
def login(
    ctx: typer.Context,
    server: Annotated[str | None, typer.Option("--server", metavar="URL", help="Server base URL, e.g. https://wsctl.example.com.")] = None,
    code: Annotated[str | None, typer.Option("--code", help="The login code from `wsctl members login-code` (asked for when left out).")] = None,
    member: Annotated[str | None, typer.Option("--member", help="Local workspaces: act as this member (id, email or name).")] = None,
    profile: ProfileOpt = None,
    activate: Annotated[bool, typer.Option("--activate", help="Make this profile the active one.")] = False,
    json: JsonOpt = False,
) -> None:
    """Sign in. With --server: exchange a one-time login code for a session kept in the keyring.
    With --member: make a local profile act as another member of a workspace you can open.

    \b
    Examples:
      wsctl auth login --server https://wsctl.acme.dev --profile acme --activate  # asks for the login code
      wsctl auth login --member bob@example.com --profile bob  # a local workspace, as Bob
    """
    name = _profile(ctx, profile)
    prof = config.get_profile(config.load(), name)
    if member and server:
        raise typer.BadParameter("use either --server (remote) or --member (local), not both")
    if member:
        _login_local(ctx, name, member, json, activate)
        return
    server = server or prof.get("server")
    if not server:
        raise typer.BadParameter("pass --server URL (or --member MEMBER for a local workspace)", param_hint="--server")
    server = server.rstrip("/")
    server = server[:-3].rstrip("/") if server.endswith("/v1") else server  # the API prefix names the same server
    if not server.startswith(("http://", "https://")):
        raise typer.BadParameter("must start with http:// or https://", param_hint="--server")
    if not code:
        code = _ask_code()
    from workspacectl.backend.remote import RemoteBackend

    answer = RemoteBackend(server, None).request("POST", "/v1/auth/session", body={"code": code.strip(), "name": "wsctl"})
    where = secrets_store.set(token_key(name), answer["token"])
    active = config.set_profile(name, {"server": server}, make_default=activate)
    member_rec = answer["member"]
    body = {"profile": name, "server": server, "member": member_rec, "tokenStorage": where, "active": active}
    kept = "the OS keyring" if where == "keyring" else where
    emit(ctx, body, lambda b: info(f"Signed in to {server} as {member_rec['name']} <{member_rec['email']}> "
                                   f"({member_rec['role']}); profile '{name}', token kept in {kept}."
                                   f"{how_to_use(name, active)}"), json_flag=json)


def _ask_code() -> str:
    if sys.stdin.isatty():
        return typer.prompt("Login code")
    line = sys.stdin.readline().strip()
    if not line:
        raise ApiError("invalid_request", "No login code: pass --code or type it when asked.")
    return line


def _login_local(ctx: typer.Context, name: str, member: str, json: bool, activate: bool = False) -> None:
    from workspacectl.backend.local import LocalBackend
    from workspacectl.cli.common.context import ensure_workspace_path, opened

    target = resolve(state(ctx).profile_flag, new_profile_ok=True)
    if target.kind == "remote":
        raise ApiError("invalid_request", f"Profile '{name}' points at a server; --member is for local workspaces.")
    path = target.location
    ensure_workspace_path(path, name)
    if not member.startswith("um_") and "@" not in member:  # a name: looked up as the workspace's owner
        from workspacectl.cli.common.refs import resolve as resolve_ref

        member = resolve_ref(ctx, "member", member, be=opened(LocalBackend.open(path)))
    be = opened(LocalBackend.open(path, member=member, exact=True))
    rec = be.request("GET", "/v1/auth/whoami")["member"]
    active = config.set_profile(name, {"workspace": be.stored_location, "member": rec["id"]}, make_default=activate)
    body = {"profile": name, "workspace": be.location, "member": rec, "active": active}
    emit(ctx, body, lambda b: info(f"Profile '{name}' now acts as {rec['name']} <{rec['email']}> ({rec['role']}) "
                                   f"on {be.location}.{how_to_use(name, active)}"), json_flag=json)


@app.command("status")
def status(ctx: typer.Context, profile: ProfileOpt = None, json: JsonOpt = False) -> None:
    """Show the profile in use, where its data lives, who it acts as, and where the token came from;
    and the other profiles there are."""
    name = _profile(ctx, profile)
    target = resolve(state(ctx).profile_flag)
    from workspacectl.formats.workspace_url import shown

    data = config.load()
    active = data.get("profile") or "default"
    body = {"profile": name, "activeProfile": active,
            "otherProfiles": sorted(n for n in data.get("profiles", {}) if n != name),
            "backend": target.kind, "location": shown(target.location),
            "tokenSource": target.secret_source, "signedIn": False, "member": None}
    try:
        _require_workspace(target)
        who = backend(ctx).request("GET", "/v1/auth/whoami")
        body.update(signedIn=True, member=who["member"], kind=who["kind"], scopes=who["scopes"])
    except ApiError as e:
        if e.code != "unauthenticated" and not (e.detail or {}).get("notMadeYet"):
            raise
        body["error"] = e.message

    def render(b: Any) -> None:
        chosen = "active" if b["profile"] == b["activeProfile"] else f"chosen for this command; active: {b['activeProfile']}"
        pairs = [("profile", f"{b['profile']} ({chosen})"), ("backend", b["backend"]),
                 ("server" if b["backend"] == "remote" else "workspace", b["location"]),
                 ("token from", b["tokenSource"])]
        if b["signedIn"]:
            m = b["member"]
            pairs += [("signed in as", f"{m['name']} <{m['email']}> ({m['role']})"), ("acting with", b["kind"])]
            if b.get("scopes"):
                pairs.append(("scopes", b["scopes"]))
        else:
            pairs.append(("signed in", f"no: {b.get('error', '')}"))
        pairs.append(("other profiles", ", ".join(b["otherProfiles"]) + " (`wsctl profile use NAME` switches)"
                      if b["otherProfiles"] else "none"))
        fields(pairs)

    emit(ctx, body, render, json_flag=json)
    if not body["signedIn"]:
        raise typer.Exit(3)


@app.command("whoami")
def whoami(ctx: typer.Context, json: JsonOpt = False) -> None:
    """Print the member this profile acts as."""
    _require_workspace(resolve(state(ctx).profile_flag))
    body = backend(ctx).request("GET", "/v1/auth/whoami")
    def render(b: Any) -> None:
        limit = b.get("credentials")
        only = f", limited to {len(limit)} credential(s)" if isinstance(limit, list) else ""
        print(f"{b['member']['name']} <{b['member']['email']}> ({b['member']['role']}) via {b['kind']}{only}")

    emit(ctx, body, render, json_flag=json)


def _require_workspace(target: Target) -> None:
    """Asking who you are does not make the embedded workspace (only a command that needs it does)."""
    from pathlib import Path

    from workspacectl.cli.common.first_use import not_made_yet
    from workspacectl.formats.workspace_url import is_postgres_url

    local_folder = target.kind == "local" and not is_postgres_url(target.location)
    missing = not_made_yet(Path(target.location)) if local_folder else None
    if missing:
        raise ApiError("not_found", missing, {"notMadeYet": True})


@app.command("token")
def token(ctx: typer.Context, profile: ProfileOpt = None) -> None:
    """Print the session token of a remote profile on stdout, for scripts:
    WSCTL_TOKEN=$(wsctl auth token). Like `gh auth token` it prints on a terminal too, since
    you asked for it; it is a live credential, so treat the output as a password.

    \b
    Examples:
      wsctl auth token --profile acme  # what a script sets WSCTL_TOKEN to
    """
    name = _profile(ctx, profile)
    target = resolve(state(ctx).profile_flag)
    if target.kind != "remote":
        raise ApiError("invalid_request", "A local profile acts in-process and has no token. "
                       "Sign in to a server with `wsctl auth login --server URL`.")
    if not target.secret:
        raise ApiError("unauthenticated", f"Profile '{name}' is not signed in. Run `wsctl auth login`.")
    print(target.secret)


@app.command("logout")
def logout(ctx: typer.Context, profile: ProfileOpt = None, json: JsonOpt = False) -> None:
    """Revoke this profile's session on the server and forget its token."""
    name = _profile(ctx, profile)
    target = resolve(state(ctx).profile_flag)
    body = {"profile": name, "revoked": False}
    if target.kind == "remote" and target.secret_source in ("keyring", "credentials file"):
        try:
            backend(ctx).request("DELETE", "/v1/auth/session")
            body["revoked"] = True
        except ApiError as e:
            if e.code != "unauthenticated":
                raise
        secrets_store.delete(token_key(name))
        msg = f"Signed out of {target.location} (profile '{name}')."
    elif target.kind == "remote" and target.secret_source == "none":
        msg = f"Profile '{name}' is not signed in to {target.location}; nothing to sign out of."
    elif target.kind == "remote":
        msg = f"The token comes from {target.secret_source}; unset it to sign out."
    else:
        msg = "A local profile acts in-process as its member; there is no session to end."
    emit(ctx, body, lambda b: info(msg), json_flag=json)
