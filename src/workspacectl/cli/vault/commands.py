"""`wsctl vault`: connected accounts, audited tokens, and commands run with secrets.

Every token is requested with a reason and logged by the server. Secret values are printed only
by `token`, `env` and inside `run`'s child; every other command shows names, never values.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from typer import _click

from workspacectl.cli.common import choices
from workspacectl.cli.common.context import all_pages, backend
from workspacectl.cli.common.output import JsonOpt, confirm_or_refuse, emit, fields, info, list_table, print_json, table
from workspacectl.cli.common.usage import Command
from workspacectl.cli.vault.requests import cred_path, issue, seg
from workspacectl.errors import ApiError

app = typer.Typer(help="Connected accounts: list, connect, issue audited tokens, run with secrets.",
                  no_args_is_help=True)

LIST_COLUMNS = [("id", "ID"), ("service", "SERVICE"), ("name", "NAME"), ("access", "ACCESS"), ("status", "STATUS")]
LOG_COLUMNS = [("at", "AT"), ("membershipId", "MEMBER"), ("keyId", "KEY"), ("reason", "REASON"), ("fields", "FIELDS"),
               ("outcome", "OUTCOME")]

IdArg = Annotated[str, typer.Argument(metavar="CREDENTIAL", click_type=choices.credential(),
                                      help="Credential id (cred_…) or name.")]
ReasonOpt = Annotated[str, typer.Option("--reason", "-r", help="Why you need the secret (1-500 characters); "
                                        "recorded in the credential's access log.")]
VarNamesOpt = Annotated[Literal["service", "credential"], typer.Option(
    "--var-names", help="Where variable names come from: service (the catalog's, e.g. STRIPE_API_KEY) or "
    "credential (after each credential's name: stripe-live sets STRIPE_LIVE_API_KEY), so two accounts "
    "of one service can be used together.")]


def cred(ctx: typer.Context, ref: str) -> str:
    """The credential id a word names: an id as given, or the id of the credential with that name."""
    from workspacectl.cli.common.refs import resolve

    return resolve(ctx, "credential", ref)


def manage_path(cred_id: str, suffix: str = "") -> str:
    return f"/v1/vault/credentials/{seg(cred_id)}{suffix}"


def env_detail(ctx: typer.Context, cred_id: str) -> dict:
    """The detail whose envVars name the variables; read before any token is issued."""
    try:
        return backend(ctx).request("GET", cred_path(cred_id))
    except ApiError as e:
        if e.code != "insufficient_scope":
            raise
        raise ApiError("insufficient_scope", e.message, {**(e.detail if isinstance(e.detail, dict) else {}), "hint": (
            "this key lacks vault:read, which variable names need (they come from the credential's details): "
            "use a key with vault:read as well as vault:token, or `wsctl vault token ID --format json`.")}) from None


# --- reading --------------------------------------------------------------------------------

@app.command("list")
def list_(
    ctx: typer.Context,
    service: Annotated[str | None, typer.Option("--service", help="Only credentials of this service.")] = None,
    json: JsonOpt = False,
) -> None:
    """List the credentials you own or that are shared with you.

    \b
    Examples:
      wsctl vault list
      wsctl vault list --service stripe --jq '.credentials[].name'
    """
    list_table(ctx, "/v1/credentials", "credentials", LIST_COLUMNS,
               "No credentials. Connect one with `wsctl vault connect SERVICE`.", json,
               query={"service": service} if service else None)


@app.command("show")
def show(ctx: typer.Context, cred_id: IdArg, json: JsonOpt = False) -> None:
    """Show one credential: service, access, status, fields, scopes, sharing (never a secret).

    \b
    Examples:
      wsctl vault show stripe-live
      wsctl vault show stripe-live --jq .credential.status
    """
    body = backend(ctx).request("GET", cred_path(cred(ctx, cred_id)))
    emit(ctx, body, render_detail, json_flag=json)


def render_detail(b: dict) -> None:
    share = [f"{'workspace' if s.get('workspace') or s.get('membershipId') == 'workspace' else s.get('membershipId')}"
             f"={s.get('role')}" for s in b.get("sharing") or []]
    pairs = [("id", b.get("id")), ("name", b.get("name")), ("service", b.get("service")),
             ("credentialType", b.get("credentialType")), ("access", b.get("access")), ("status", b.get("status")),
             *([("statusReason", b["statusReason"])] if b.get("statusReason") else []),
             ("owner", b.get("ownerMembershipId")),
             ("envVars", [f"{k}={v}" for k, v in (b.get("envVars") or {}).items()])]
    pairs += [(f"fields.{k}", v) for k, v in (b.get("fields") or {}).items()]
    pairs += [("scopes", b.get("scopes")), ("sharing", share or "not shared"), ("expiresAt", b.get("expiresAt")),
              ("syncedAt", b.get("syncedAt")), ("createdAt", b.get("createdAt")), ("updatedAt", b.get("updatedAt"))]
    fields(pairs)


@app.command("log")
def log(
    ctx: typer.Context,
    cred_id: IdArg,
    cursor: Annotated[str | None, typer.Option("--cursor", help="Continue from a previous page's nextCursor.")] = None,
    json: JsonOpt = False,
) -> None:
    """Show who was issued this credential's secrets or called through it, when and why (owner only).

    The newest 100 entries unless --limit N or --all says otherwise.

    \b
    Examples:
      wsctl vault log stripe-live
      wsctl vault log stripe-live --limit 20 --json
    """
    body = all_pages(ctx, cred_path(cred(ctx, cred_id), "/access-log"), "entries", {"cursor": cursor} if cursor else None,
                     default_limit=100)

    def render(b: Any) -> None:
        entries = b.get("entries") or []
        columns = LOG_COLUMNS
        if any(e.get("method") for e in entries):   # calls through the proxy: what was called, what came back
            columns = [*LOG_COLUMNS, ("call", "CALL")]
            entries = [{**e, "call": f"{e['method']} {e.get('path')} -> {e.get('upstreamStatus') or '-'}"}
                       if e.get("method") else e for e in entries]
        table(entries, columns, "No token has been requested for this credential.")
        if b.get("nextCursor"):
            info(f"More: wsctl vault log {cred_id} --cursor {b['nextCursor']}")

    emit(ctx, body, render, json_flag=json)


# --- secrets out ----------------------------------------------------------------------------

@app.command("token")
def token(
    ctx: typer.Context,
    cred_id: IdArg,
    reason: ReasonOpt,
    format: Annotated[Literal["json", "value", "env"], typer.Option("--format", help="json (the token body), value (just the secret), "
                                        "env (VAR='value' lines, as dotenv writes them).")] = "json",
    var_names: VarNamesOpt = "service",
    json: JsonOpt = False,
) -> None:
    """Issue a token (refreshed first when near expiry) and print it. Logged with the reason.

    A token the format cannot carry exactly is refused before it is issued (exit 7, nothing logged).

    \b
    Examples:
      wsctl vault token stripe-live --reason 'rotate webhooks' --format value
      wsctl vault token github --reason 'release notes' --format env
    """
    from workspacectl.cli.vault import env as vault_env
    from workspacectl.formats import env_text

    fmt = "json" if json else format
    if fmt not in TOKEN_FORMS:
        raise ApiError("invalid_request", "--format must be json, value or env.")
    cred_id = cred(ctx, cred_id)
    detail = env_detail(ctx, cred_id) if fmt == "env" else None
    if detail is not None:
        if var_names == "credential":
            detail = vault_env.named_after_credential(detail)
        vault_env.check_injectable([detail])
    body = issue(ctx, cred_id, reason, TOKEN_FORMS[fmt])
    if detail is not None:          # --format env: the detail was read above
        sys.stdout.write(env_text.dotenv_lines(vault_env.env_for(detail, body)))
    elif fmt == "json":
        print_json(body)
    else:
        sys.stdout.write(env_text.primary_value(body) + "\n")


# `vault token --format` -> the token request's format (env lines are dotenv lines: exact and inert).
TOKEN_FORMS = {"json": "json", "value": "value", "env": "dotenv"}


def issue_env(ctx: typer.Context, cred_ids: list[str], reason: str, form: str,
              var_names: str = "service") -> tuple[dict[str, str], list[str]]:
    """Variables and secret values of several credentials, written in `form`. Every detail is read
    (and with var_names "credential" its variables renamed after it), and with several credentials
    every request is tried as a dry run, before any token is issued."""
    from workspacectl.cli.vault import env as vault_env

    details = [env_detail(ctx, c) for c in cred_ids]
    if var_names == "credential":
        details = [vault_env.named_after_credential(d) for d in details]
    vault_env.check_injectable(details)
    if len(cred_ids) > 1:
        for cred_id in cred_ids:
            issue(ctx, cred_id, reason, form, dry_run=True)
    parts, secrets = [], []
    for cred_id, detail in zip(cred_ids, details):
        body = issue(ctx, cred_id, reason, form)
        parts.append((cred_id, vault_env.env_for(detail, body)))
        secrets += vault_env.secret_values(body)
    return vault_env.merge_env(parts), secrets


@app.command("env")
def env(
    ctx: typer.Context,
    cred_ids: Annotated[list[str], typer.Argument(metavar="CREDENTIAL...", click_type=choices.credential(),
                                                  help="One or more credential ids or names.")],
    reason: ReasonOpt,
    format: Annotated[Literal["export", "dotenv", "json"], typer.Option("--format", help="export (for eval), dotenv, or json.")] = "export",
    var_names: VarNamesOpt = "service",
    json: JsonOpt = False,
) -> None:
    """Print the credentials' environment variables: eval "$(wsctl vault env ID --reason R)".

    \b
    Examples:
      wsctl vault env stripe-live --reason 'local test run' --format dotenv > .env
      wsctl vault env stripe-live stripe-test --reason 'compare' --var-names credential
    """
    from workspacectl.cli.vault import env as vault_env

    fmt = "json" if json else format
    if fmt not in vault_env.FORMATTERS:
        raise ApiError("invalid_request", "--format must be export, dotenv or json.")
    from workspacectl.cli.common.refs import resolve_all

    variables, _ = issue_env(ctx, resolve_all(ctx, "credential", cred_ids), reason, vault_env.REQUEST_FORMS[fmt],
                             var_names)
    from workspacectl.cli.common import scripting

    if fmt == "json" and scripting.active():  # --json FIELDS or --jq: the same JSON, filtered
        print_json(variables)
        return
    sys.stdout.write(vault_env.FORMATTERS[fmt](variables))


@app.command("proxy")
def proxy(
    ctx: typer.Context,
    cred_id: IdArg,
    method: Annotated[Literal["GET", "POST", "PUT", "PATCH", "DELETE"],
                      typer.Argument(case_sensitive=False, help="GET, POST, PUT, PATCH or DELETE.")],
    path: Annotated[str, typer.Argument(help="The path on the service after its base URL, e.g. /repos/OWNER/NAME; "
                                        "a query string may follow.")],
    reason: ReasonOpt,
    raw_field: Annotated[list[str] | None, typer.Option(
        "--raw-field", "-f", metavar="KEY=VALUE", help="A string field (repeatable): query for GET/DELETE, "
        "JSON body otherwise.")] = None,
    field: Annotated[list[str] | None, typer.Option(
        "--field", "-F", metavar="KEY=VALUE", help="A typed field (repeatable): true, false, null and numbers "
        "as JSON; @FILE reads a file, @- stdin.")] = None,
    input_file: Annotated[str | None, typer.Option(
        "--input", metavar="FILE", click_type=choices.local_file(), help="Send the file's bytes as the body, streamed ('-': stdin).")] = None,
    header: Annotated[list[str] | None, typer.Option(
        "--header", "-H", metavar="'NAME: VALUE'", help="A request header for the service (repeatable).")] = None,
    include: Annotated[bool, typer.Option("--include", "-i", help="Print the service's status line and headers "
                                          "before the body.")] = False,
    paginate: Annotated[bool, typer.Option("--paginate", help="GET: follow the service's next pages (a Link "
                                           "rel=\"next\" header or its catalog's cursor) and print each.")] = False,
    json: JsonOpt = False,
) -> None:
    """Call the credential's service through the vault: the secret stays on the server.

    The call is logged in the credential's access log with the reason, method, path and the
    service's status. The service's answer is printed as it arrives; 400 and up exit 1.

    \b
    Examples:
      wsctl vault proxy github GET /user --reason 'who am I'
      wsctl vault proxy stripe-live POST /v1/refunds -f charge=ch_123 --reason 'refund #4411'
    """
    from workspacectl.cli.vault import proxy as vault_proxy

    vault_proxy.run(ctx, cred_id, method, path, reason, raw_field or [], field or [], input_file, header or [],
                    include, paginate)


@app.command("inject")
def inject(
    ctx: typer.Context,
    reason: ReasonOpt,
    in_file: Annotated[str | None, typer.Option("--in-file", "-i", metavar="TEMPLATE", click_type=choices.local_file(), help="The template "
                                                   "(default: stdin).")] = None,
    out_file: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE", dir_okay=False,
                                                     help="Write here, mode 0600 (default: stdout).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE if it exists.")] = False,
) -> None:
    """Fill {{ wsctl://CREDENTIAL/FIELD }} references in a template with issued secrets, as `op inject`.

    Each credential's token is issued once with the reason and logged; every one is tried as a dry
    run first, so a refusal issues nothing. The file is written 0600 by a temporary file and a rename.

    \b
    Examples:
      wsctl vault inject -i app.env.tpl -o app.env --reason 'start the app'
      wsctl vault inject --reason 'render config' < config.tpl > config.yaml
    """
    from workspacectl.cli.vault import inject as vault_inject

    text = vault_inject.read_template(in_file)
    vault_inject.references(text)  # a malformed reference before anything else
    if out_file is not None:
        vault_inject.check_output(out_file, force)
    filled = vault_inject.fill(ctx, text, reason)
    if out_file is None:
        sys.stdout.write(filled)
    else:
        vault_inject.write_private(out_file, filled)
        info(f"Wrote {out_file} (mode 0600).")


class RunCommand(Command):
    """Keeps the raw arguments so `run` can tell the ids before `--` from the command after it."""

    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        ctx.meta["vault_run_args"] = list(args)
        return super().parse_args(ctx, args)


@app.command("run", cls=RunCommand)
def run(
    ctx: typer.Context,
    words: Annotated[list[str], typer.Argument(metavar="CREDENTIAL... -- CMD", click_type=choices.credential(), help="Credential ids or names, then -- and the "
                                               "command to run (no shell unless you run one).")],
    reason: ReasonOpt,
    no_masking: Annotated[bool, typer.Option("--no-masking", help="Do not mask secret values in the output: the "
                                             "command writes straight to wsctl's stdout and stderr.")] = False,
    var_names: VarNamesOpt = "service",
    watch: Annotated[bool, typer.Option("--watch", help="Restart the command (SIGTERM, then the new values) when a "
                                        "credential it uses is reconnected, refreshed or has its fields changed, as "
                                        "the event feed tells (GET /v1/events).")] = False,
    watch_interval: Annotated[float, typer.Option("--watch-interval", min=0.2, max=300.0, metavar="SECONDS",
                                                  help="With --watch: seconds between looks at the event feed.")] = 5.0,
) -> None:
    """Run CMD with the credentials' env vars set; secrets in its output are masked as ***.

    The command's exit code is passed through, and SIGINT, SIGTERM and SIGHUP are forwarded. On a
    terminal it still writes to a terminal (a pty), so it colours and line-buffers as usual. It never
    outlives wsctl: if wsctl dies, even by SIGKILL, the command is killed too. With --watch it is
    restarted with fresh values whenever one of its credentials changes (it needs to read the event
    feed: a session, or a platform key with vault:read besides vault:token).

    \b
    Examples:
      wsctl vault run stripe-live --reason 'integration tests' -- npm test
      wsctl vault run github slack --reason deploy --watch -- ./deploy.sh
    """
    from workspacectl.cli.vault import run as vault_run

    raw = ctx.meta.get("vault_run_args") or []
    if "--" not in raw:
        raise ApiError("invalid_request", "Put the command after --: wsctl vault run ID... --reason R -- CMD...")
    command = raw[raw.index("--") + 1:]
    ids = words[:len(words) - len(command)] if len(command) <= len(words) else []
    if not command:
        raise ApiError("invalid_request", "No command after --: wsctl vault run ID... --reason R -- CMD...")
    if not ids:
        raise ApiError("invalid_request", "Name at least one credential: wsctl vault run ID... --reason R -- CMD...")
    from workspacectl.cli.common.refs import resolve_all

    cred_ids = resolve_all(ctx, "credential", ids)
    variables, secrets = issue_env(ctx, cred_ids, reason, "environ", var_names)
    restart = None
    if watch:
        from workspacectl.cli.vault.watch import Watcher

        backend(ctx).long_running()   # looks at the feed for as long as CMD runs
        restart = Watcher(backend(ctx), cred_ids, lambda: issue_env(ctx, cred_ids, reason, "environ", var_names),
                          renames_matter=var_names == "credential")
    code = vault_run.run_command(command, variables, secrets, masking=not no_masking, restart=restart,
                                 interval=watch_interval)
    raise typer.Exit(code)


# --- connecting and managing ----------------------------------------------------------------

@app.command("connect")
def connect(
    ctx: typer.Context,
    service: Annotated[str, typer.Argument(help="Service to connect, e.g. slack (see `wsctl catalog integrations`).")],
    no_open: Annotated[bool, typer.Option("--no-open", help="Print the link instead of opening a browser.")] = False,
    wait: Annotated[bool, typer.Option("--wait", help="Wait until the connection completes or fails.")] = False,
    name: Annotated[str | None, typer.Option("--name", "-n", help="Name the new credential, e.g. stripe-live "
                                                "(default: the service's, made unique: stripe, stripe-2).")] = None,
    reconnect: Annotated[str | None, typer.Option("--reconnect", metavar="CREDENTIAL", click_type=choices.credential(),
                                                     help="Put the new secrets into "
                                                     "this credential of yours (same id and shares), e.g. one "
                                                     "that needs_reconnect.")] = None,
    json: JsonOpt = False,
) -> None:
    """Connect an account: a hosted page for the key form or the OAuth consent.

    \b
    Examples:
      wsctl vault connect slack
      wsctl vault connect stripe --name stripe-live --wait
      wsctl vault connect github --reconnect github  # new secrets, same id and shares
    """
    from workspacectl.cli.vault.connect import connect_command

    connect_command(ctx, service, no_open, wait, json, reconnect, name)


@app.command("fields")
def fields_(ctx: typer.Context, cred_id: IdArg, json: JsonOpt = False) -> None:
    """Show the editable fields and which secret fields are set (never their values).

    \b
    Examples:
      wsctl vault fields stripe-live
    """
    body = backend(ctx).request("GET", manage_path(cred(ctx, cred_id), "/editable-fields"))

    def render(b: Any) -> None:
        pairs = [(k, v) for k, v in (b.get("fields") or {}).items()]
        pairs += [(s["name"], "set (secret)" if s.get("set") else "not set (secret)") for s in b.get("secretFields") or []]
        fields(pairs) if pairs else info("This credential has no editable fields.")

    emit(ctx, body, render, json_flag=json)


def read_secret_values(names: list[str]) -> dict[str, str]:
    """New secret values: a hidden prompt per field on a terminal, else stdin (one line per field)."""
    import getpass

    if sys.stdin.isatty():
        values = {n: getpass.getpass(f"New value for {n} (hidden): ") for n in names}
    else:
        text = sys.stdin.read()
        if len(names) == 1:
            values = {names[0]: text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text}
        else:
            lines = text.splitlines()
            if len(lines) < len(names):
                raise ApiError("invalid_request", f"Give one line per secret field on stdin, in this order: "
                               f"{', '.join(names)} (or choose one with --field).")
            values = dict(zip(names, lines))
    empty = [n for n, v in values.items() if not v.strip()]
    if empty:
        raise ApiError("invalid_request", f"No value given for {', '.join(empty)}; nothing changed. Give each a "
                       "value (at the prompt, or one line each on stdin).")
    return values


@app.command("set-key", context_settings={"allow_extra_args": True})
def set_key(
    ctx: typer.Context,
    cred_id: IdArg,
    field: Annotated[list[str] | None, typer.Option("--field", help="Only this secret field (repeatable); "
                                                       "default: all of them.")] = None,
    json: JsonOpt = False,
) -> None:
    """Replace a hand-entered API key, keeping the credential id. Reads it hidden or from stdin.

    \b
    Examples:
      wsctl vault set-key stripe-live  # prompts for the new key (or reads stdin)
    """
    if ctx.args:  # a key typed as an argument: refuse without echoing it (click's own error would)
        from typer._click.exceptions import UsageError

        raise UsageError("set-key never takes the new value as an argument (it would stay in your shell "
                               "history and the process list); type it at the hidden prompt or pipe it on stdin",
                               ctx=ctx)
    cred_id = cred(ctx, cred_id)
    editable = backend(ctx).request("GET", manage_path(cred_id, "/editable-fields"))
    known = [s["name"] for s in editable.get("secretFields") or []]
    names = list(dict.fromkeys(field)) if field else known
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ApiError("invalid_request", f"Unknown secret field {', '.join(unknown)}; this credential's secret "
                       f"fields are: {', '.join(known) or 'none'}.")
    body = backend(ctx).request("PUT", manage_path(cred_id, "/data"), body=read_secret_values(names))
    emit(ctx, body, lambda b: info(f"Replaced {', '.join(names)} of {b.get('id')} ({b.get('name')})."),
         json_flag=json)


@app.command("sync")
def sync(ctx: typer.Context, cred_id: IdArg, json: JsonOpt = False) -> None:
    """Check the credential still works (refresh for OAuth, the service's probe where it has one).

    \b
    Examples:
      wsctl vault sync github
    """
    body = backend(ctx).request("POST", manage_path(cred(ctx, cred_id), "/sync"))

    def render(b: Any) -> None:
        fields([("id", b.get("id")), ("name", b.get("name")), ("status", b.get("status")),
                ("syncedAt", b.get("syncedAt")), ("expiresAt", b.get("expiresAt"))])
        if b.get("status") == "needs_reconnect":
            why = f"{b['statusReason'][:1].upper()}{b['statusReason'][1:]}: r" if b.get("statusReason") else "R"
            info(f"{why}econnect it with `wsctl vault connect {b.get('service')} --reconnect {b.get('id')}`.")

    emit(ctx, body, render, json_flag=json)


@app.command("delete")
def delete(
    ctx: typer.Context,
    cred_id: IdArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Delete here even if revoking at the provider fails.")] = False,
    json: JsonOpt = False,
) -> None:
    """Revoke the credential at the provider where possible, then delete it.

    \b
    Examples:
      wsctl vault delete stripe-test --yes
    """
    cred_id = cred(ctx, cred_id)
    if not yes:
        detail = backend(ctx).request("GET", cred_path(cred_id))
        confirm_or_refuse(f"Delete {detail.get('name')} ({cred_id})? It is revoked at the provider where possible.",
                          yes)
    backend(ctx).request("DELETE", manage_path(cred_id), query={"force": "true"} if force else None)
    emit(ctx, None, lambda _: info(f"Deleted {cred_id}."), json_flag=json)


@app.command("share")
def share(
    ctx: typer.Context,
    cred_id: IdArg,
    role: Annotated[Literal["user", "viewer", "none"], typer.Option("--role", help="user (may request tokens), viewer (sees it), none (removes).")],
    member: Annotated[str | None, typer.Option("--member", click_type=choices.member(),
                                                  help="Member id, email or name.")] = None,
    workspace: Annotated[bool, typer.Option("--workspace", help="Share with the whole workspace.")] = False,
    json: JsonOpt = False,
) -> None:
    """Share a credential you own with a member or the whole workspace.

    \b
    Examples:
      wsctl vault share stripe-live --member bob@example.com --role user
      wsctl vault share stripe-live --workspace --role viewer
    """
    if bool(member) == workspace:
        raise ApiError("invalid_request", "Give exactly one of --member MEMBER or --workspace.")
    if role not in ("user", "viewer", "none"):
        raise ApiError("invalid_request", "--role must be user, viewer or none.")
    from workspacectl.cli.common.refs import resolve

    cred_id = cred(ctx, cred_id)
    body: dict = {"membershipId": resolve(ctx, "member", member)} if member else {"workspace": True}   # one of them: above
    body["role"] = None if role == "none" else role
    answer = backend(ctx).request("PUT", cred_path(cred_id, "/sharing"), body=body)
    emit(ctx, answer, render_detail, json_flag=json)


@app.command("rename")
def rename(
    ctx: typer.Context,
    cred_id: IdArg,
    new_name: Annotated[str, typer.Argument(metavar="NEW_NAME", help="1-64 letters, digits, '.', '_' or '-', "
                                            "unique in the workspace, e.g. stripe-live.")],
    json: JsonOpt = False,
) -> None:
    """Rename a credential you own; its id, secrets and shares stay.

    \b
    Examples:
      wsctl vault rename stripe-2 stripe-test
    """
    body = backend(ctx).request("PATCH", manage_path(cred(ctx, cred_id)), body={"name": new_name})
    emit(ctx, body, lambda b: info(f"Renamed {b.get('id')} to {b.get('name')}."), json_flag=json)
