"""`wsctl completion SHELL`, `wsctl man [COMMAND...]`, and the hidden `wsctl complete-values KIND`.

- `completion` prints the bash, zsh or fish script, made from the command tree as `completions/`
  is (docgen/completions.py): commands, options, choices and paths complete without starting
  Python; ids and names of credentials, specialists, skills, workflows, members and keys are asked of
  `complete-values`.
- `complete-values KIND` prints `VALUE<TAB>DESCRIPTION` lines (ids, then names) from the current
  profile's workspace or server, and keeps them for a minute in the completion cache, which the
  next <TAB> reads before Typer is imported (cli/common/completion_cache.py). It never makes a workspace (a missing one answers nothing), reads
  at most one page, and gives up silently after a time limit (TIME_LIMIT seconds, or
  WSCTL_COMPLETION_SECONDS): a completion must never hang a shell or print an error into the
  command line. A busy machine or a slow link may need more than the default.
- `man` shows a page of the installed version (`man -l` when `man` is there, else the roff text).

This module is imported on every run (app.COMMANDS): it imports nothing heavy at the top.
"""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated, Literal

import typer

if TYPE_CHECKING:
    from workspacectl.backend.local import LocalBackend
    from workspacectl.cli.common.context import Target

TIME_LIMIT = 2.0   # seconds; WSCTL_COMPLETION_SECONDS overrides it
ROUTES = {"credential": ("/v1/credentials", "credentials", "service"),
          "specialist": ("/v1/projects", "projects", "description"),
          "skill": ("/v1/skills", "skills", "description"),
          "workflow": ("/v1/workflows", "workflows", "kind"),
          "member": ("/v1/members", "members", "email"),
          "key": ("/v1/keys", "keys", "kind")}


def completion(shell: Annotated[Literal["bash", "zsh", "fish"], typer.Argument(help="bash, zsh or fish.")]) -> None:
    """Print the shell completion script.

    \b
    Examples:
      wsctl completion bash > ~/.local/share/bash-completion/completions/wsctl
      wsctl completion zsh > "${fpath[1]}/_wsctl"  # then run compinit
      wsctl completion fish > ~/.config/fish/completions/wsctl.fish
    """
    from workspacectl.docgen import completions
    from workspacectl.docgen.tree import load_tree

    sys.stdout.write(getattr(completions, shell)(load_tree()))


def man(
    command: Annotated[list[str] | None, typer.Argument(metavar="[COMMAND...]", help="A command, e.g. "
                                                          "`vault token` (default: wsctl itself).")] = None,
    roff: Annotated[bool, typer.Option("--roff", help="Print the page's roff source instead.")] = False,
) -> None:
    """Show the manual page of wsctl or of one of its commands.

    \b
    Examples:
      wsctl man
      wsctl man vault token
    """
    import shutil
    import subprocess

    from workspacectl.docgen import manpages
    from workspacectl.docgen.tree import load_tree
    from workspacectl.errors import ApiError

    name = "-".join(("wsctl", *(command or [])))
    pages = manpages.pages(load_tree())
    text = pages.get(f"{name}.1")
    if text is None:
        raise ApiError("not_found", f"No manual page {name}; `wsctl man` lists the commands under SEE ALSO.")
    sys.stdout.flush()
    if roff or shutil.which("man") is None:
        sys.stdout.write(text)
        return
    code = subprocess.run(["man", "-l", "-"], input=text.encode(), check=False).returncode
    if code:
        raise typer.Exit(code)


def complete_values(ctx: typer.Context,
                    kind: Annotated[str, typer.Argument(help="credential, specialist, skill, workflow, member or key.")],
                    prefix: Annotated[str, typer.Argument(help="What is typed so far.")] = "") -> None:
    """Ids and names for shell completion (hidden)."""
    import signal

    if hasattr(signal, "setitimer"):
        signal.signal(signal.SIGALRM, lambda *_: os._exit(0))
        signal.setitimer(signal.ITIMER_REAL, time_limit())
    try:
        from workspacectl.cli.common import completion_cache
        from workspacectl.cli.common.context import state

        profile = state(ctx).profile_flag
        every = _values(kind, profile)
        if every is not None:   # the next <TAB> answers from it (cli/main.py)
            completion_cache.write(profile, kind, every)
        lines = [line for line in every or () if line.startswith(prefix)]
    except Exception:  # a completion prints nothing rather than an error
        lines = []
    if hasattr(signal, "setitimer"):
        signal.setitimer(signal.ITIMER_REAL, 0)
    sys.stdout.write("".join(f"{line}\n" for line in lines))


def time_limit() -> float:
    """WSCTL_COMPLETION_SECONDS when it is a positive number (at most an hour), else TIME_LIMIT."""
    try:
        seconds = float(os.environ.get("WSCTL_COMPLETION_SECONDS", ""))
    except ValueError:
        return TIME_LIMIT
    return min(seconds, 3600.0) if seconds > 0 else TIME_LIMIT


def _values(kind: str, profile: str | None) -> list[str] | None:
    """Every line of KIND, or None when there is nothing to ask (no such kind, no workspace)."""
    from workspacectl.cli.common.context import resolve
    from workspacectl.cli.common.output import visible

    if kind not in ROUTES:
        return None
    path, key, about = ROUTES[kind]
    target = resolve(profile)
    if target.kind == "remote":
        from workspacectl.backend.remote import RemoteBackend

        remote = RemoteBackend(target.location, target.secret, timeout=time_limit(), attempts=1)
        body = remote.request("GET", path, query={"limit": "500"})
    else:
        local = _open_existing(target)
        if local is None:
            return None
        try:
            body = local.request("GET", path, query={"limit": "500"})
        finally:
            local.close()
    out, names = [], []
    for row in body.get(key) or []:
        label = visible(row.get("name") or "")
        out.append(f"{visible(row.get('id'))}\t{label or visible(row.get(about) or '')}")
        if row.get("name"):
            names.append(f"{label}\t{visible(row.get('id'))}")
    return out + names


def _open_existing(target: Target) -> LocalBackend | None:
    """A local backend on a workspace that already exists, or None: completing never makes one."""
    from workspacectl.backend.local import LocalBackend, workspace_exists

    path = target.location
    if not workspace_exists(path):
        return None
    return LocalBackend.open(path, secret=target.secret, member=target.member)
