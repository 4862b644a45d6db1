"""`wsctl specialist memory`: a specialist's own memory document.

Every write names the version it replaces; a stale version is refused (exit 6), so two people
editing at once never silently overwrite each other.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from workspacectl.cli.common import choices
from workspacectl.cli.common.context import backend
from workspacectl.cli.common.output import JsonOpt, emit, info
from workspacectl.cli.specialist.refs import project_path
from workspacectl.errors import ApiError

app = typer.Typer(help="The specialist's own memory document, written by version.", no_args_is_help=True)

SpecArg = Annotated[str, typer.Argument(metavar="ID", click_type=choices.specialist(), help="Specialist id (proj_…) or its exact name.")]


def _written(m: dict) -> None:
    info(f"Memory is now version {m['version']} ({len(m['text'])} characters).")


@app.command("show")
def show(ctx: typer.Context, ref: SpecArg, json: JsonOpt = False) -> None:
    """Print the memory text (with --json, the whole specialist as the API answers it).

    \b
    Examples:
      wsctl specialist memory show ops-desk
    """
    body = backend(ctx).request("GET", project_path(ctx, ref))

    def render(b: Any) -> None:
        m = b["memory"]
        sys.stdout.write(m["text"] if m["text"].endswith("\n") or not m["text"] else m["text"] + "\n")
        who = (m.get("updatedBy") or {}).get("displayName") or (m.get("updatedBy") or {}).get("membershipId")
        info(f"version {m['version']}, updated {m['updatedAt']} by {who}")

    emit(ctx, body, render, json_flag=json)


def _read_text(file: str) -> str:
    try:
        data = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
        return data.decode("utf-8")
    except OSError as e:
        raise ApiError("invalid_request", f"Cannot read {file}: {e.strerror}; check the path, or give - to read stdin.") from None
    except UnicodeDecodeError:
        raise ApiError("invalid_request", f"{file} is not UTF-8 text; convert it to UTF-8 or give another file.") from None


@app.command("set")
def set_(ctx: typer.Context, ref: SpecArg,
         file: Annotated[str, typer.Argument(metavar="FILE", click_type=choices.local_file(), help="Markdown file with the new memory ('-' for stdin).")],
         version: Annotated[int | None, typer.Option("--version", help="The version you are replacing; without "
                                                        "it, the current version is read first.")] = None,
         json: JsonOpt = False) -> None:
    """Replace the memory with a file's contents (needs edit access).

    \b
    Examples:
      wsctl specialist memory set ops-desk memory.md
      wsctl specialist memory set ops-desk - < memory.md
    """
    text = _read_text(file)
    path = project_path(ctx, ref)
    if version is None:
        version = backend(ctx).request("GET", path)["memory"]["version"]
    body = backend(ctx).request("PUT", path + "/memory", body={"text": text, "version": version})
    emit(ctx, body, _written, json_flag=json)


@app.command("edit")
def edit(ctx: typer.Context, ref: SpecArg, json: JsonOpt = False) -> None:
    """Open the memory in $VISUAL or $EDITOR and save it under the version you read.

    \b
    Examples:
      wsctl specialist memory edit ops-desk
    """
    import os
    import shlex
    import subprocess
    import tempfile

    path = project_path(ctx, ref)
    memory = backend(ctx).request("GET", path)["memory"]
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.TemporaryDirectory(prefix="wsctl-memory-") as tmp:
        draft = Path(tmp) / "memory.md"
        draft.write_text(memory["text"], encoding="utf-8")
        try:
            code = subprocess.call([*shlex.split(editor), str(draft)])
        except (OSError, ValueError) as e:
            raise ApiError("invalid_request", f"Cannot run the editor '{editor}': {e}. Set $EDITOR.") from None
        if code != 0:
            raise ApiError("invalid_request", f"The editor exited with status {code}; nothing was saved. Run the "
                                                "command again (or set $EDITOR to another editor).")
        text = _read_text(str(draft))
    if text == memory["text"]:
        info("No change; nothing saved.")
        return
    body = backend(ctx).request("PUT", path + "/memory", body={"text": text, "version": memory["version"]})
    emit(ctx, body, _written, json_flag=json)
