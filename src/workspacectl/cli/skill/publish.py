"""`wsctl skill validate | publish | pull`: skill folders in and out through presigned URLs.

`publish DIR...` is for CI: every folder is validated locally first (nothing is published if one
fails), then each skill is created when missing (by its frontmatter name), packed canonically
(the tar made once, hashed as it is made), and published only when its sha256 differs from the
live version's. The server checks the upload once, in /publish (a refusal lists its problems);
there is no separate /validate call. One line per skill.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import typer

from workspacectl.cli.common.context import backend, state
from workspacectl.cli.common.output import JsonOpt, emit, info, print_json
from workspacectl.cli.skill.transfer import check_folder, get_from_url, packed, put_to_url, write_bundle
from workspacectl.errors import ApiError


def skill_path(ref: str, suffix: str = "") -> str:
    return f"/v1/skills/{quote(ref, safe='')}{suffix}"


def _print_problems(label: str, errors: list, warnings: list) -> None:
    for p in errors:
        info(f"{label}: error: {p['path'] + ': ' if p['path'] else ''}{p['message']}")
    for p in warnings:
        info(f"{label}: warning: {p['path'] + ': ' if p['path'] else ''}{p['message']}")


def validate(
    ctx: typer.Context,
    folder: Annotated[Path | None, typer.Argument(metavar="DIR", help="Skill folder holding SKILL.md.")] = None,
    upload_id: Annotated[str | None, typer.Option("--upload-id", help="Validate this staged upload on the "
                                                                         "server instead of a folder.")] = None,
    skill: Annotated[str | None, typer.Option("--skill", help="Skill (id or name) the staged upload "
                                                                 "belongs to.")] = None,
    json: JsonOpt = False,
) -> None:
    """Check a skill folder (or a staged upload) by the server's rules; exit 7 when invalid.

    \b
    Examples:
      wsctl skill validate ./pdf-forms
    """
    if upload_id:
        if not skill:
            raise typer.BadParameter("--upload-id needs --skill", param_hint="--skill")
        body = backend(ctx).request("POST", skill_path(skill, "/validate"), body={"uploadId": upload_id})
        label = skill
    elif folder is not None:
        _files, errors, warnings, _meta = check_folder(folder)
        body, label = {"valid": not errors, "errors": errors, "warnings": warnings}, str(folder)
    else:
        raise typer.BadParameter("pass DIR, or --upload-id with --skill", param_hint="DIR")

    def render(b: Any) -> None:
        _print_problems(label, b["errors"], b["warnings"])
        print(f"{label}: {'valid' if b['valid'] else 'invalid'}")

    emit(ctx, body, render, json_flag=json)
    if not body["valid"]:
        raise typer.Exit(7)


def _find_or_create(ctx: typer.Context, name: str, description: str) -> tuple[dict, bool]:
    """The skill named `name`, made as a draft when missing. Another publisher (a parallel CI job)
    may make it between our read and our create: its 409 means "read it again"."""
    try:
        return backend(ctx).request("GET", skill_path(name)), False
    except ApiError as e:
        if e.code != "not_found":
            raise
    try:
        return backend(ctx).request("POST", "/v1/skills", body={"name": name, "description": description}), True
    except ApiError as e:
        if e.code != "conflict":
            raise
        return backend(ctx).request("GET", skill_path(name)), False


def _live_sha(ctx: typer.Context, skill: dict) -> str | None:
    if skill["version"] == 0:
        return None
    versions = backend(ctx).request("GET", skill_path(skill["id"], "/versions"), query={"limit": "1"})["versions"]
    return versions[0]["sha256"] if versions and versions[0]["number"] == skill["version"] else None


def _unchanged(skill: dict) -> dict:
    return {"name": skill["name"], "skillId": skill["id"], "outcome": "unchanged", "version": None, "skill": skill}


def publish_one(ctx: typer.Context, folder: Path, files: dict, meta: dict) -> dict:
    skill, created = _find_or_create(ctx, meta["name"], meta["description"])
    archive, size, digest = packed(files, f"pack {skill['name']}")
    with archive:
        if _live_sha(ctx, skill) == digest:
            return _unchanged(skill)
        up = backend(ctx).request("POST", skill_path(skill["id"], "/bundle-upload-url"))
        put_to_url(up["url"], archive, size, f"upload {skill['name']}", local=_is_local(ctx))
    try:
        version = backend(ctx).request("POST", skill_path(skill["id"], "/publish"),
                                       body={"uploadId": up["uploadId"], "baseVersion": skill["version"]})
    except ApiError as e:
        if e.code == "unprocessable" and isinstance(e.detail, dict) and isinstance(e.detail.get("errors"), list):
            _print_problems(str(folder), e.detail["errors"], e.detail.get("warnings") or [])
            raise ApiError("unprocessable", f"{folder}: the server refused the bundle; fix the errors above.") from None
        # Someone published since we read the skill. If the live content is now ours (a parallel
        # run of the same CI job), there is nothing to do; anything else is a real conflict.
        if e.code != "conflict":
            raise
        skill = backend(ctx).request("GET", skill_path(skill["id"]))
        if _live_sha(ctx, skill) != digest:
            raise
        return _unchanged(skill)
    return {"name": skill["name"], "skillId": skill["id"], "outcome": "created" if created else "published",
            "version": {k: val for k, val in version.items() if k != "skill"}, "skill": version["skill"]}


def publish(
    ctx: typer.Context,
    folders: Annotated[list[Path], typer.Argument(metavar="DIR...", help="Skill folders, each holding SKILL.md.")],
    json: JsonOpt = False,
) -> None:
    """Publish skill folders (CI): create when missing, skip when unchanged, one line per skill.

    \b
    Examples:
      wsctl skill publish ./pdf-forms
      wsctl skill publish skills/*  # CI: one line per skill
    """
    checked = []
    failed = False
    for folder in folders:
        files, errors, warnings, meta = check_folder(folder)
        _print_problems(str(folder), errors, warnings)
        if errors or meta is None:  # no frontmatter comes only with an error printed above
            failed = True
        else:
            checked.append((folder, files, meta))
    if failed:
        raise ApiError("unprocessable", "Nothing was published: fix the errors above "
                                        "(check with `wsctl skill validate DIR`).")
    results = []
    for folder, files, meta in checked:
        r = publish_one(ctx, folder, files, meta)
        results.append(r)
        if not (json or _json_mode(ctx)):
            if r["outcome"] == "unchanged":
                print(f"{r['name']}: unchanged (v{r['skill']['version']})")
            else:
                lead = "created, published" if r["outcome"] == "created" else "published"
                print(f"{r['name']}: {lead} v{r['version']['number']}")
            sys.stdout.flush()
    if json or _json_mode(ctx):
        print_json({"results": results})


def _is_local(ctx: typer.Context) -> bool:
    """file:// transfer URLs are followed only when the local backend (this process) made them."""
    return getattr(backend(ctx), "kind", None) == "local"


def _json_mode(ctx: typer.Context) -> bool:
    return state(ctx).json


def pull(
    ctx: typer.Context,
    skill: Annotated[str, typer.Argument(metavar="ID", help="Skill id (skl_…) or name.")],
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="Folder to write the live bundle into.")],
    force: Annotated[bool, typer.Option("--force", help="Write into a non-empty DIR that holds no SKILL.md.")] = False,
    json: JsonOpt = False,
) -> None:
    """Download the live version's files into DIR (entries at its root).

    DIR must be new, empty, or a skill folder already (it holds a SKILL.md), as `git clone`
    refuses a non-empty folder: the bundle's paths come from the server.

    \b
    Examples:
      wsctl skill pull pdf-forms ./pdf-forms --force
    """
    if not force and folder.is_dir() and any(folder.iterdir()) and not (folder / "SKILL.md").is_file():
        raise ApiError("invalid_request", f"{folder} is not empty and holds no SKILL.md; pull into a new "
                                          "folder, or pass --force to write into it anyway.")
    link = backend(ctx).request("GET", skill_path(skill, "/bundle-url"))
    with tempfile.TemporaryFile() as archive:   # on disk: a bundle may unpack to 200 MiB
        get_from_url(link["url"], archive, f"download {skill}", local=_is_local(ctx))
        written = write_bundle(archive, folder)
    emit(ctx, link, lambda b: print(f"{skill}: {len(written)} files written to {folder}"), json_flag=json)


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
    app.command("publish")(publish)
    app.command("pull")(pull)
