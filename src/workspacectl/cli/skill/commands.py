"""`wsctl skill`: skills (SKILL.md bundles), their files and versions.

ID is a skill id (skl_…) or a skill's name. `validate`, `publish` and `pull` live in
cli/skill/publish.py; they move bundles through presigned URLs.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import quote

import typer

from workspacectl.cli.common import choices
from workspacectl.cli.common.context import all_pages, backend
from workspacectl.cli.common.output import JsonOpt, confirm_or_refuse, emit, fields, human_size, info, list_table, table
from workspacectl.cli.skill.publish import skill_path
from workspacectl.errors import ApiError

app = typer.Typer(no_args_is_help=True)

IdArg = Annotated[str, typer.Argument(metavar="ID", click_type=choices.skill(), help="Skill id (skl_…) or name.")]
BaseOpt = Annotated[int | None, typer.Option("--base-version", metavar="VERSION", help="Fail with a conflict unless this is "
                                                                       "the live version.")]
COLUMNS = [("id", "ID"), ("name", "NAME"), ("status", "STATUS"), ("version", "VERSION"), ("enabled", "ENABLED"),
           ("description", "DESCRIPTION")]
VERSION_COLUMNS = [("number", "VERSION"), ("id", "ID"), ("publishedAt", "PUBLISHED"), ("publishedBy", "BY"),
                   ("source", "SOURCE"), ("sha256", "SHA256")]


def show_skill(s: dict) -> None:
    fields([("id", s["id"]), ("name", s["name"]), ("description", s["description"]), ("status", s["status"]),
            ("enabled", "yes" if s["enabled"] else "no"), ("version", s["version"]),
            ("specialist", s["projectId"] or "-"), ("created by", s["createdBy"]), ("updated", s["updatedAt"]),
            ("last used", s["lastUsedAt"] or "never")])


def show_published(b: dict) -> None:
    print(f"{b['skill']['name']}: published v{b['number']} ({b['source']}, sha256 {b['sha256'][:12]})")


@app.command("list")
def list_(
    ctx: typer.Context,
    status: Annotated[Literal["draft", "published", "archived", "all"] | None, typer.Option("--status", help="draft, published, archived or all "
                                                                   "(default: draft and published).")] = None,
    json: JsonOpt = False,
) -> None:
    """List the skills you can see.

    \b
    Examples:
      wsctl skill list --status published
    """
    list_table(ctx, "/v1/skills", "skills", COLUMNS,
               "No skills. Make one with `wsctl skill create NAME`.", json, query={"status": status} if status else None)


@app.command("create")
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Lowercase letters, digits and hyphens, e.g. pdf-forms.")],
    description: Annotated[str, typer.Option("--description", "-d", help="What it does and when to use it.")],
    json: JsonOpt = False,
) -> None:
    """Create a draft skill (version 0). Publish content with `put` or `publish`.

    \b
    Examples:
      wsctl skill create pdf-forms --description 'Fill PDF forms from JSON'
    """
    body = backend(ctx).request("POST", "/v1/skills", body={"name": name, "description": description})
    emit(ctx, body, show_skill, json_flag=json)


@app.command("show")
def show(ctx: typer.Context, skill: IdArg, json: JsonOpt = False) -> None:
    """Show a skill's record.

    \b
    Examples:
      wsctl skill show pdf-forms
    """
    emit(ctx, backend(ctx).request("GET", skill_path(skill)), show_skill, json_flag=json)


@app.command("edit")
def edit(
    ctx: typer.Context,
    skill: IdArg,
    name: Annotated[str | None, typer.Option("--name", help="New name (SKILL.md follows).")] = None,
    description: Annotated[str | None, typer.Option("--description", "-d", help="New description.")] = None,
    json: JsonOpt = False,
) -> None:
    """Rename a skill or change its description; a published skill gets a new version.

    \b
    Examples:
      wsctl skill edit pdf-forms --description 'Fill and sign PDF forms'
    """
    changes = {k: val for k, val in (("name", name), ("description", description)) if val is not None}
    if not changes:
        raise typer.BadParameter("pass --name and/or --description", param_hint="--name")
    emit(ctx, backend(ctx).request("PATCH", skill_path(skill), body=changes), show_skill, json_flag=json)


@app.command("archive")
def archive(
    ctx: typer.Context,
    skill: IdArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    json: JsonOpt = False,
) -> None:
    """Archive a skill: it leaves the list, turns read-only, and frees its name.

    \b
    Examples:
      wsctl skill archive pdf-forms --yes
    """
    confirm_or_refuse(f"Archive skill {skill}?", yes)
    body = backend(ctx).request("DELETE", skill_path(skill))
    emit(ctx, body, lambda s: print(f"{s['name']}: archived"), json_flag=json)


def _set_enabled(ctx: typer.Context, skill: str, enabled: bool, json: bool) -> None:
    body = backend(ctx).request("PATCH", skill_path(skill, "/enabled"), body={"enabled": enabled})
    emit(ctx, body, lambda s: print(f"{s['name']}: {'enabled' if s['enabled'] else 'disabled'}"), json_flag=json)


@app.command("enable")
def enable(ctx: typer.Context, skill: IdArg, json: JsonOpt = False) -> None:
    """Enable a skill: agents may load it.

    \b
    Examples:
      wsctl skill enable pdf-forms
    """
    _set_enabled(ctx, skill, True, json)


@app.command("disable")
def disable(ctx: typer.Context, skill: IdArg, json: JsonOpt = False) -> None:
    """Disable a skill: agents stop loading it.

    \b
    Examples:
      wsctl skill disable pdf-forms
    """
    _set_enabled(ctx, skill, False, json)


@app.command("files")
def files(ctx: typer.Context, skill: IdArg, json: JsonOpt = False) -> None:
    """List the files of the live version.

    \b
    Examples:
      wsctl skill files pdf-forms
    """
    body = backend(ctx).request("GET", skill_path(skill, "/files"))
    emit(ctx, body, lambda b: table(b["files"], [("path", "PATH"), ("size", "SIZE"), ("sha256", "SHA256")],
                                    "No published files yet."), json_flag=json)


@app.command("put")
def put(
    ctx: typer.Context,
    skill: IdArg,
    path: Annotated[str, typer.Argument(help="Path inside the bundle, e.g. SKILL.md or references/api.md.")],
    file: Annotated[str, typer.Argument(metavar="FILE", click_type=choices.local_file(), help="Text file to read, or - for stdin.")] = "-",
    base_version: BaseOpt = None,
    json: JsonOpt = False,
) -> None:
    """Save one text file into the skill and publish it as a new version.

    \b
    Examples:
      wsctl skill put pdf-forms SKILL.md ./SKILL.md
      wsctl skill put pdf-forms references/api.md - --base-version 3 < api.md
    """
    raw = sys.stdin.buffer.read() if file == "-" else _read(Path(file))
    try:
        content = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError("invalid_request", f"{file} is not UTF-8 text; binary files go in a bundle "
                                          "(`wsctl skill publish DIR`).") from None
    body = {"path": path, "content": content}
    if base_version is not None:
        body["baseVersion"] = base_version
    emit(ctx, backend(ctx).request("PUT", skill_path(skill, "/files"), body=body), show_published, json_flag=json)


def _read(p: Path) -> bytes:
    try:
        return p.read_bytes()
    except OSError as e:
        raise ApiError("invalid_request", f"Cannot read {p}: {e.strerror}; check the path (and that you may read it).") from None


@app.command("versions")
def versions(ctx: typer.Context, skill: IdArg, json: JsonOpt = False) -> None:
    """List a skill's published versions, newest first.

    \b
    Examples:
      wsctl skill versions pdf-forms
    """
    list_table(ctx, skill_path(skill, "/versions"), "versions", VERSION_COLUMNS, "No published versions.", json)


@app.command("revert")
def revert(
    ctx: typer.Context,
    skill: IdArg,
    version: Annotated[str, typer.Argument(help="Version number or version id (skv_…).")],
    base_version: BaseOpt = None,
    json: JsonOpt = False,
) -> None:
    """Publish an old version's content as a new version.

    \b
    Examples:
      wsctl skill revert pdf-forms 2
    """
    vid = version
    if version.isdigit():
        found = [x for x in all_pages(ctx, skill_path(skill, "/versions"), "versions")["versions"]
                 if x["number"] == int(version)]
        if not found:
            raise ApiError("not_found", f"Skill {skill} has no version {version}. Run `wsctl skill versions {skill}`.")
        vid = found[0]["id"]
    body = {"baseVersion": base_version} if base_version is not None else {}
    out = backend(ctx).request("POST", skill_path(skill, f"/versions/{quote(vid, safe='')}/revert"), body=body)
    emit(ctx, out, show_published, json_flag=json)


@app.command("platform")
def platform(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Platform skill name, e.g. skill-authoring.")],
    json: JsonOpt = False,
) -> None:
    """Show a platform skill's files.

    \b
    Examples:
      wsctl skill platform skill-authoring
    """
    body = backend(ctx).request("GET", f"/v1/skills/platform/{quote(name, safe='')}")

    def render(b: Any) -> None:
        for f in b["files"]:
            info(f"== {f['path']} ({human_size(f['size'])})")
            print(f["content"], end="" if f["content"].endswith("\n") else "\n")

    emit(ctx, body, render, json_flag=json)


from workspacectl.cli.skill import publish as skill_publish  # noqa: E402  (registers validate, publish, pull)

skill_publish.register(app)
