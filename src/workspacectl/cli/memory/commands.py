"""`wsctl memory`: read memory guides and files, propose notes, run the memory agent.

OWNER is `organization` (alias `org`) or `membership` (alias `me`): the workspace's memory or
your own.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, urlencode

import typer

from workspacectl.cli.common import choices
from workspacectl.cli.common.config import atomic_output
from workspacectl.cli.common.context import backend
from workspacectl.cli.common.output import JsonOpt, emit, human_size, info, is_tty, list_table, table
from workspacectl.errors import ApiError

app = typer.Typer(no_args_is_help=True)
agent_app = typer.Typer(no_args_is_help=True)
app.add_typer(agent_app, name="agent", help="The memory agent that folds proposals in.")

ALIASES = {"org": "organization", "me": "membership"}
OwnerArg = Annotated[str, typer.Argument(help="organization (alias org) or membership (alias me).",
                                         metavar="OWNER")]


def owner_path(owner: str) -> str:
    return f"/v1/memory/{quote(ALIASES.get(owner, owner), safe='')}"


@app.command("show")
def show(ctx: typer.Context, owner: OwnerArg, json: JsonOpt = False) -> None:
    """Show a memory guide and the notes waiting for the memory agent.

    \b
    Examples:
      wsctl memory show org
      wsctl memory show me
    """
    body = backend(ctx).request("GET", owner_path(owner))

    def render(b: Any) -> None:
        pending = b["pendingNotes"]
        if is_tty():
            from rich.console import Console
            from rich.markdown import Markdown

            Console().print(Markdown(b["guide"] or "_(empty)_"))
        else:
            sys.stdout.write(b["guide"])
        held = b.get("heldNotes") or []
        info(f"{b['ownerType']} memory, version {b['version']}, updated {b['updatedAt']}; "
             f"{len(pending)} pending note(s)" + (f", {len(held)} held (the guide is full)." if held else "."))
        for notes in (pending, held):
            if notes:
                rows = [{**n, "text": n["text"].splitlines()[0][:80]} for n in notes]
                (table if is_tty() else _stderr_table)(rows, [("id", "ID"), ("section", "SECTION"), ("text", "TEXT")])

    emit(ctx, body, render, json_flag=json)


def _stderr_table(rows: list[dict[str, Any]], columns: list[tuple[str, str]]) -> None:
    for r in rows:
        info("\t".join("" if r.get(k) is None else str(r[k]) for k, _ in columns))


def _download(ctx: typer.Context, path: str, output: Path | None) -> None:
    """Write a binary route's body to output (through a temporary file renamed into place) or stdout."""
    if output is None:
        backend(ctx).download(path, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    output = output.expanduser()
    if not output.parent.is_dir():
        raise ApiError("invalid_request", f"Folder {output.parent} does not exist; make it or pick another -o.")
    with atomic_output(output) as out:
        size = backend(ctx).download(path, out)
    info(f"Wrote {human_size(size)} to {output}.")


@app.command("files")
def files(
    ctx: typer.Context,
    owner: OwnerArg,
    path: Annotated[str | None, typer.Option("--path", metavar="PATH", help="Download this one file (to -o or stdout).")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write the download here; without --path, all files as tar.gz.")] = None,
    tar: Annotated[bool, typer.Option("--tar", help="Download all files as one tar.gz (to -o or stdout).")] = False,
    json: JsonOpt = False,
) -> None:
    """List a memory's reference files, or download one (--path) or all (-o FILE / --tar).

    \b
    Examples:
      wsctl memory files org
      wsctl memory files me --path ops/runbook.md -o runbook.md
    """
    base = owner_path(owner) + "/files"
    if path is not None:
        _download(ctx, f"{base}?{urlencode({'path': path})}", output)
        return
    if tar or output is not None:
        if output is None and is_tty():
            raise ApiError("invalid_request", "A tar.gz would go to the terminal; pass -o FILE or redirect stdout.")
        _download(ctx, f"{base}?format=tar.gz", output)
        return
    list_table(ctx, base, "files", [("path", "PATH"), ("size", "SIZE"), ("updatedAt", "UPDATED")],
               "No memory files.", json)


def _read_text(source: str, what: str) -> str:
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).expanduser().read_bytes()
    except OSError as e:
        raise ApiError("invalid_request", f"Cannot read {what} {source} ({e.strerror or e}); check the path, or "
                       "give - to read stdin.") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError("invalid_request", f"{what.capitalize()} {source} is not UTF-8 text; memory holds text: convert it "
                       "to UTF-8 or give another file.") from None


@app.command("propose")
def propose(
    ctx: typer.Context,
    owner: OwnerArg,
    text: Annotated[str, typer.Argument(help="The note; '-' reads it from stdin.", metavar="TEXT")],
    section: Annotated[str | None, typer.Option("--section", metavar="SECTION", help="Guide section to fold it under (default Notes).")] = None,
    file: Annotated[str | None, typer.Option("--file", metavar="LOCAL_FILE", click_type=choices.local_file(), help="A local text file to add as a reference file.")] = None,
    file_path: Annotated[str | None, typer.Option("--file-path", metavar="PATH", help="Path of --file inside memory (default: its name).")] = None,
    json: JsonOpt = False,
) -> None:
    """Queue a note (and optionally a reference file) for the memory agent's next run.

    \b
    Examples:
      wsctl memory propose org 'Deploys freeze on Fridays' --section Releases
      wsctl memory propose me 'See the runbook' --file runbook.md --file-path ops/runbook.md
    """
    if text == "-":
        text = _read_text("-", "stdin")
    body: dict = {"text": text}
    if section is not None:
        body["section"] = section
    if file is not None:
        body["file"] = {"path": file_path or Path(file).name, "content": _read_text(file, "file")}
    elif file_path is not None:
        raise typer.BadParameter("--file-path needs --file", param_hint="--file-path")
    answer = backend(ctx).request("POST", owner_path(owner) + "/proposals", body=body)

    def render(b: Any) -> None:
        print(b["id"])
        info(f"Queued ({b['status']}); the memory agent folds it on its next run (`wsctl memory agent run`).")

    emit(ctx, answer, render, json_flag=json)


@agent_app.command("run")
def agent_run(ctx: typer.Context, json: JsonOpt = False) -> None:
    """Fold pending notes now: organization memory and yours (every owner's for an owner or admin)."""
    body = backend(ctx).request("POST", "/v1/memory/agent/run")

    def render(b: Any) -> None:
        rows = [{"owner": o["ownerType"] + (f" {o['membershipId']}" if o["membershipId"] else ""),
                 "folded": len(o["folded"]), "dropped": len(o["dropped"]), "held": len(o.get("held", [])),
                 "version": o["version"]}
                for o in b["owners"]]
        table(rows, [("owner", "OWNER"), ("folded", "FOLDED"), ("dropped", "DROPPED"), ("held", "HELD"),
                     ("version", "VERSION")])

    emit(ctx, body, render, json_flag=json)
