"""`wsctl vault inject`: fill `{{ wsctl://CREDENTIAL/FIELD }}` references in a template, as `op inject`.

- CREDENTIAL is what `vault token` takes; FIELD a field of its token answer (`apiKey`,
  `accessToken`, `instanceUrl`, `expiresAt`, `tokenType`).
- Every credential is asked for a dry run first (with the reason, as `vault env` does): one refusal,
  or a FIELD the credential does not issue, stops everything before any token is issued or logged.
  Then each credential's token is issued once, through the normal token route, with the reason.
- The output file is written 0600 through a temporary file in its folder and a rename, so it is never
  seen half written or readable by others; an existing file is replaced only with --force (or a
  yes at the prompt). Without -o the result goes to stdout.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from workspacectl.cli.vault.requests import issue
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    import typer

REFERENCE = re.compile(r"\{\{\s*wsctl://([^\s/{}]+)/([^\s/{}]+)\s*\}\}")
LOOSE = re.compile(r"\{\{\s*wsctl://[^}]*\}\}")


def references(text: str) -> list[tuple[str, str]]:
    """The (credential, field) pairs in order of first use; a malformed reference is exit 7."""
    for m in LOOSE.finditer(text):
        if not REFERENCE.fullmatch(m.group()):
            line = text.count("\n", 0, m.start()) + 1
            raise ApiError("invalid_request", f"Line {line}: {m.group()!r} is not {{{{ wsctl://CREDENTIAL/FIELD }}}}; "
                                                "write it in that form (`wsctl vault list` shows the names).")
    return list(dict.fromkeys(REFERENCE.findall(text)))


def read_template(source: str | None) -> str:
    if source in (None, "-"):
        if sys.stdin.isatty():
            raise ApiError("invalid_request", "Give the template with -i FILE or on stdin.")
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except OSError as e:
        raise ApiError("invalid_request", f"Cannot read {source}: {e.strerror}; give the template's path with -i/--in-file, "
                       "or - to read it from stdin.") from None
    except UnicodeDecodeError:
        raise ApiError("invalid_request", f"{source} is not UTF-8 text; convert the template to UTF-8.") from None


def fill(ctx: typer.Context, text: str, reason: str) -> str:
    from workspacectl.cli.common.refs import resolve

    refs = references(text)
    if not refs:
        return text
    ids = {word: resolve(ctx, "credential", word) for word in dict.fromkeys(word for word, _ in refs)}
    wanted: dict[str, set[str]] = {}  # by id: a credential named by id and by name is issued once
    for word, fld in refs:
        wanted.setdefault(ids[word], set()).add(fld)
    for cred, names in wanted.items():  # every refusal before anything is issued
        dry = issue(ctx, cred, reason, "json", dry_run=True)
        missing = sorted(names - set(dry.get("fields") or []))
        if missing:
            raise ApiError("invalid_request", f"Credential {cred} issues no {', '.join(missing)} (it issues: "
                           f"{', '.join(dry.get('fields') or []) or 'nothing'}). Nothing was issued.")
    tokens = {cred: issue(ctx, cred, reason, "json") for cred in wanted}
    return REFERENCE.sub(lambda m: str(tokens[ids[m.group(1)]][m.group(2)]), text)


def write_private(path: Path, text: str) -> None:
    """Write text to path with mode 0600: a temporary file beside it, fsync, rename."""
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def check_output(path: Path, force: bool) -> None:
    """Before any token is issued: the folder exists and an existing file may be replaced."""
    if path.is_dir():
        raise ApiError("invalid_request", f"{path} is a folder; -o takes a file name.")
    if not (path.parent if str(path.parent) else Path(".")).is_dir():
        raise ApiError("invalid_request", f"No folder {path.parent} to write {path.name} into.")
    if path.exists() and not force:
        from workspacectl.cli.common.output import confirm_or_refuse

        try:
            confirm_or_refuse(f"Replace {path}?", False)
        except ApiError:
            raise ApiError("invalid_request", f"{path} exists: pass --force to replace it.") from None
