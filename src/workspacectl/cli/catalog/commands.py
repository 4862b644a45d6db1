"""`wsctl catalog`: integrations, operations, their reference, search, and import."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, overload
from urllib.parse import quote

import typer

from workspacectl.cli.common.context import all_pages, backend
from workspacectl.cli.common.output import JsonOpt, emit, fields, info, is_tty, list_table, phases, table
from workspacectl.errors import ApiError

app = typer.Typer(help="Integrations and operations the workspace can use.", no_args_is_help=True)

INTEGRATION_COLUMNS = [("service", "SERVICE"), ("name", "NAME"), ("credentialType", "CREDENTIAL"),
                       ("operationCount", "OPERATIONS"), ("description", "DESCRIPTION")]
OPERATION_COLUMNS = [("opId", "OPERATION"), ("method", "METHOD"), ("path", "PATH"), ("summary", "SUMMARY")]
SEARCH_COLUMNS = [("opId", "OPERATION"), ("score", "SCORE"), ("method", "METHOD"), ("path", "PATH"),
                  ("summary", "SUMMARY")]


@overload
def utf8(value: str, what: str) -> str: ...
@overload
def utf8(value: None, what: str) -> None: ...


def utf8(value: str | None, what: str) -> str | None:
    """An argument that is not UTF-8 reaches Python with lone surrogates, which no URL or
    request can carry: refuse it as the engine would, on both backends alike."""
    if value is not None:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ApiError("invalid_request", f"{what} is not valid UTF-8 text; check it for stray bytes.") from None
    return value


def seg(value: str, what: str) -> str:
    """A path segment from an argument, percent-encoded."""
    return quote(utf8(value, what), safe="")


@app.command("integrations")
def integrations(ctx: typer.Context, json: JsonOpt = False) -> None:
    """List every integration the workspace can use."""
    list_table(ctx, "/v1/integrations", "integrations", INTEGRATION_COLUMNS, "No integrations.", json)


@app.command("integration")
def integration(ctx: typer.Context, service: Annotated[str, typer.Argument(help="Service name, e.g. slack.")],
                json: JsonOpt = False) -> None:
    """Show one integration's setup: credential type, env vars, OAuth URLs and scopes.

    \b
    Examples:
      wsctl catalog integration slack
    """
    body = backend(ctx).request("GET", f"/v1/integrations/{seg(service, 'SERVICE')}")

    def render(b: Any) -> None:
        pairs = [("service", b["service"]), ("name", b["name"]), ("credentialType", b["credentialType"]),
                 ("operations", b.get("operationCount")),
                 ("envVars", [f"{k}={v}" for k, v in (b.get("envVars") or {}).items()]),
                 ("fields", b.get("fields"))]
        for key in ("secretFields", "authorizeUrl", "tokenUrl", "scopes", "oauthClientConfigured", "baseUrl",
                    "docsUrl", "source"):
            if key in b:
                pairs.append((key, b[key]))
        fields(pairs)
        if b.get("description"):
            print()
            print(b["description"])

    emit(ctx, body, render, json_flag=json)


@app.command("operations")
def operations(ctx: typer.Context, service: Annotated[str, typer.Argument(help="Service name, e.g. slack.")],
               json: JsonOpt = False) -> None:
    """List one service's operations.

    \b
    Examples:
      wsctl catalog operations slack
      wsctl catalog operations github --limit 10
    """
    list_table(ctx, f"/v1/integrations/{seg(service, 'SERVICE')}/operations", "operations", OPERATION_COLUMNS,
               f"{service} has no operations.", json)


def print_markdown(text: str) -> None:
    if is_tty():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(text))
    else:
        print(text, end="" if text.endswith("\n") else "\n")


@app.command("operation")
def operation(ctx: typer.Context, op_id: Annotated[str, typer.Argument(metavar="OPID", help="Operation id, e.g. slack.chat-post-message.")],
              json: JsonOpt = False) -> None:
    """Show an operation's reference: method, path, params, response, example, env vars.

    \b
    Examples:
      wsctl catalog operation slack.chat-post-message
    """
    body = backend(ctx).request("GET", f"/v1/operations/{seg(op_id, 'OPID')}")
    emit(ctx, body, lambda b: print_markdown(b.get("markdown") or ""), json_flag=json)


@app.command("search")
def search(
    ctx: typer.Context,
    phrase: Annotated[str, typer.Argument(help="What you want to do, e.g. 'send a text message'.")],
    service: Annotated[str | None, typer.Option("--service", help="Only this service's operations.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-L", min=1, max=500, metavar="N", help="How many results (1-500).")] = 10,
    json: JsonOpt = False,
) -> None:
    """Find operations by what they do, best match first.

    \b
    Examples:
      wsctl catalog search 'send a text message'
      wsctl catalog search 'list open issues' --service github --limit 5
    """
    query = {"q": utf8(phrase, "PHRASE"), "limit": str(limit)}
    if service:
        query["service"] = utf8(service, "--service")
    body = backend(ctx).request("GET", "/v1/operations", query=query)

    def render(b: Any) -> None:
        rows = []
        for hit in b.get("operations") or b.get("results") or []:
            row = dict(hit)
            if isinstance(row.get("score"), float):
                row["score"] = f"{row['score']:.3f}"
            rows.append(row)
        table(rows, SEARCH_COLUMNS, "No matching operations.")

    emit(ctx, body, render, json_flag=json)


def _format_of(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix == ".toml":
        return "toml"
    if suffix in (".json", ".yaml", ".yml"):
        return "openapi"
    return None


# The engine's catalog_limits.MAX_DOCUMENT_BYTES (tests/catalog/test_hostile_definitions.py checks they
# agree): the CLI stops reading there, so /dev/zero or a huge file cannot fill its memory.
MAX_IMPORT_BYTES = 16 * 1024 * 1024


def read_document(file: Path) -> bytes:
    try:
        with file.open("rb") as f:
            raw = f.read(MAX_IMPORT_BYTES + 1)
    except OSError as e:
        raise ApiError("invalid_request", f"Cannot read {file}: {e.strerror or e}; give the path of an OpenAPI document (JSON or YAML) or a "
                       "catalog TOML file.") from None
    if len(raw) > MAX_IMPORT_BYTES:
        raise ApiError("payload_too_large", f"{file.name}: the document is over {MAX_IMPORT_BYTES >> 20} MiB; "
                       "split the service or trim the document.")
    return raw


@app.command("import")
def import_(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A service definition (.toml) or an OpenAPI 2/3 document (.json, .yaml).")],
    service: Annotated[str | None, typer.Option("--service", help="Service name to use instead of the document's.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Owner only: replace even when the import changes where "
                                        "secrets go while credentials use the service (they must reconnect).")] = False,
    json: JsonOpt = False,
) -> None:
    """Import a service into the catalog (owner or admin); replaces a service of the same name.

    \b
    Examples:
      wsctl catalog import ./acme-billing.toml
      wsctl catalog import openapi.json --service acme
    """
    raw = read_document(file)
    try:
        content = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ApiError("invalid_request", f"{file.name}: the file is not UTF-8 text.") from None
    body: dict = {"content": content, "filename": file.name}
    fmt = _format_of(file)
    if fmt:
        body["format"] = fmt
    if service:
        body["service"] = utf8(service, "--service")
    if force:
        body["force"] = True
    with phases(f"Importing {file.name}") as progress:  # read, resolve, index here; "on the server..." over HTTP
        answer = backend(ctx).request("POST", "/v1/admin/catalog", body=body, progress=progress)

    def render(b: Any) -> None:
        verb = "Imported" if b.get("created") else "Replaced"
        info(f"{verb} {b['service']}: {b['operationCount']} operations, {b['triggerCount']} trigger providers.")
        print(b["service"])

    emit(ctx, answer, render, json_flag=json)


@app.command("oauth-client")
def oauth_client(
    ctx: typer.Context,
    service: Annotated[str, typer.Argument(help="An oauth2 service, e.g. github.")],
    client_id: Annotated[str, typer.Option("--client-id", help="The OAuth client id the provider issued.")],
    json: JsonOpt = False,
) -> None:
    """Set an oauth2 service's OAuth client (owner or admin). The secret is read hidden or from stdin.

    \b
    Examples:
      wsctl catalog oauth-client github --client-id Iv1.8a61f9b3a7aba766  # the secret is asked for
    """
    import getpass
    import sys

    if not client_id.strip():
        raise ApiError("invalid_request", "--client-id is empty; pass the client id the provider issued.")
    if sys.stdin.isatty():
        secret = getpass.getpass(f"{service} OAuth client secret (hidden): ")
    else:
        text = sys.stdin.read()
        secret = text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text
    if not secret.strip():
        raise ApiError("invalid_request", "No client secret given (type it at the prompt or pipe it on stdin); "
                       "nothing changed.")
    answer = backend(ctx).request("PUT", f"/v1/admin/catalog/{seg(service, 'SERVICE')}/oauth-client",
                                  body={"clientId": utf8(client_id.strip(), "--client-id"), "clientSecret": secret})

    def render(b: Any) -> None:
        info(f"Set the OAuth client of {b['service']}; members can now run `wsctl vault connect {b['service']}`.")
        print(b["service"])

    emit(ctx, answer, render, json_flag=json)


HISTORY_COLUMNS = [("at", "AT"), ("membershipId", "BY"), ("service", "SERVICE"), ("action", "ACTION"),
                   ("summary", "CHANGED")]


def _change_summary(entry: dict) -> str:
    names = [c.get("field", "?") for c in entry.get("changes") or []]
    text = ", ".join(names) or "-"
    if entry.get("forced"):
        text += f" (forced: {entry.get('credentialsReset', 0)} credentials reset)"
    return text


@app.command("history")
def history(
    ctx: typer.Context,
    service: Annotated[str | None, typer.Option("--service", help="Only this service's changes.")] = None,
    json: JsonOpt = False,
) -> None:
    """List catalog changes, newest first: who, when, what changed (owner or admin).

    \b
    Examples:
      wsctl catalog history --service github
    """
    query = {"service": utf8(service, "--service")} if service else None
    body = all_pages(ctx, "/v1/admin/catalog/history", "changes", query=query)

    def render(b: Any) -> None:
        rows = [{**e, "membershipId": e.get("membershipId") or "(built-in)", "summary": _change_summary(e)}
                for e in b["changes"]]
        table(rows, HISTORY_COLUMNS, "No catalog changes.")

    emit(ctx, body, render, json_flag=json)
