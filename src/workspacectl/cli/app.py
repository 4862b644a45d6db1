"""The Typer app: the root options and one sub-app per group (cli/<group>.py).

A group's module is imported, and its commands built, only when the command line reaches that
group (or the docs generator walks the tree): `wsctl vault list` does not build `skill` or
`specialist`. `wsctl --help` lists the groups from GROUPS without importing any of them.
A top-level command whose module is not in this version is skipped.
"""
from __future__ import annotations

import importlib
import importlib.util
from typing import Annotated, Optional

import typer
from typer import _click
from typer.core import TyperCommand, TyperGroup

from workspacectl import __version__
from workspacectl.cli.context import state

# (module, command name, help) in the order `wsctl --help` lists them.
GROUPS = [
    ("auth", "auth", "Sign in to a server, show who you are, sign out."),
    ("profile", "profile", "Profiles: list, show, switch, rename and remove them."),
    ("members", "members", "Members of the workspace and their login codes."),
    ("keys", "keys", "Personal and platform API keys."),
    ("vault", "vault", "Connected accounts: list, connect, issue audited tokens, run with secrets."),
    ("catalog", "catalog", "Integrations and operations the workspace can use."),
    ("specialist", "specialist", "Specialists (projects): workflows, apps, skills and files."),
    ("memory", "memory", "Workspace and member memory, changed through proposals."),
    ("skill", "skill", "Skills: SKILL.md bundles, versions, publishing."),
    ("trigger", "trigger", "Trigger providers that start workflows."),
    ("workflow", "workflow", "Workflows and apps."),
    ("admin", "admin", "Workspace administration (key rotation)."),
]
# Top-level commands: (module, function name, command name)
COMMANDS = [
    ("init", "init", "init"),
    ("serve", "serve", "serve"),
    ("api", "api", "api"),
]
# Top-level commands built only when used, as the groups are: (module, function, name, help, hidden).
LAZY_COMMANDS = [
    ("completion", "completion", "completion", "Print the shell completion script.", False),
    ("completion", "man", "man", "Show the manual page of wsctl or of one of its commands.", False),
    # what the completion scripts call for ids and names; not a command for people
    ("completion", "complete_values", "complete-values", "Ids and names for shell completion.", True),
]


def _version(value: bool):
    if value:
        typer.echo(f"wsctl {__version__}")
        raise typer.Exit()


def root(
    ctx: typer.Context,
    profile: Annotated[Optional[str], typer.Option("--profile", "-p", help="Profile in config.toml to use.", envvar=None)] = None,
    json: Annotated[bool, typer.Option("--json", help="Print the API's JSON body exactly.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Trace each request on stderr (method, URL, status, time; secrets redacted) and print the traceback of an error; works anywhere on the line, except as the value of another option.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")] = False,
):
    """wsctl: run a workspace platform from the terminal.

    Works at once on an embedded local workspace; point it at a server with
    `wsctl auth login --server URL` or WSCTL_SERVER.
    """
    st = state(ctx)
    st.profile_flag = profile
    st.json = json
    st.debug = debug or _tracing()


def _tracing() -> bool:
    """cli/main.py takes --debug off the line wherever it stands and turns tracing on."""
    import sys

    trace = sys.modules.get("workspacectl.backend.http_trace")
    return bool(trace and trace.enabled)


def _exists(module: str) -> bool:
    return importlib.util.find_spec(f"workspacectl.cli.{module}") is not None


class _Unloaded(TyperCommand):
    """A group (or a command: `func`) not imported yet: its name and one-line help, all a command
    listing needs."""

    def __init__(self, module: str, name: str, help_text: str, func: str | None = None, hidden: bool = False):
        super().__init__(name=name, help=help_text, hidden=hidden)
        self.module = module
        self.func = func


def _build_command(module: str, func: str, name: str, hidden: bool) -> _click.Command:
    holder = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False, add_completion=False)
    holder.command(name, hidden=hidden)(getattr(importlib.import_module(f"workspacectl.cli.{module}"), func))
    holder.command("-")(lambda: None)  # two commands, so typer answers a group and we take ours from it
    return typer.main.get_group(holder).commands[name]


def _build_group(module: str, name: str, help_text: str | None) -> _click.Command:
    holder = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False, add_completion=False)
    holder.add_typer(importlib.import_module(f"workspacectl.cli.{module}").app, name=name, help=help_text)
    return typer.main.get_group(holder).commands[name]


# Lists: each takes --limit N and --all (cli/scripting.py; the command reads them through all_pages).
LISTS = {("vault", "list"), ("vault", "log"), ("members", "list"), ("keys", "list"), ("specialist", "list"),
         ("specialist", "connections"), ("specialist", "files", "list"), ("skill", "list"), ("skill", "versions"),
         ("trigger", "list"), ("workflow", "list"), ("catalog", "integrations"), ("catalog", "operations"),
         ("catalog", "history"), ("memory", "files"), ("profile", "list")}


def add_scripting_options(command: _click.Command, path: tuple[str, ...]) -> None:
    """Every command with --json also takes --jq EXPR; every list takes --limit N and --all."""
    from workspacectl.cli import scripting

    for name, sub in (getattr(command, "commands", None) or {}).items():
        add_scripting_options(sub, (*path, name))
    names = {p.name for p in command.params}
    if "json" in names and "jq" not in names:
        command.params.append(scripting.jq_option())
    if path in LISTS and "limit" not in names:
        command.params.extend(scripting.list_options())


class LazyRoot(TyperGroup):
    """The root group: every group is listed at once (so typo suggestions see them all) and
    built on first use; a help listing shows the placeholders' one-line help instead."""

    _listing = False

    def __init__(self, **attrs):
        super().__init__(**attrs)
        for name, command in self.commands.items():
            add_scripting_options(command, (name,))
        for module, name, help_text in GROUPS:
            self.commands.setdefault(name, _Unloaded(module, name, help_text))
        for module, func, name, help_text, hidden in LAZY_COMMANDS:
            self.commands.setdefault(name, _Unloaded(module, name, help_text, func, hidden))
        from workspacectl.cli import scripting

        self.params.append(scripting.jq_option())

    def get_command(self, ctx, cmd_name: str):
        cmd = self.commands.get(cmd_name)
        if isinstance(cmd, _Unloaded) and not self._listing:
            if cmd.func:
                cmd = self.commands[cmd_name] = _build_command(cmd.module, cmd.func, cmd_name, cmd.hidden)
            else:
                cmd = self.commands[cmd_name] = _build_group(cmd.module, cmd_name, cmd.help)
            add_scripting_options(cmd, (cmd_name,))
        return cmd

    def format_commands(self, ctx, formatter) -> None:
        self._listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="wsctl",
        cls=LazyRoot,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
        context_settings={"help_option_names": ["-h", "--help"]},
        rich_markup_mode=None,
    )
    app.callback()(root)
    for module, func, name in COMMANDS:
        if _exists(module):
            mod = importlib.import_module(f"workspacectl.cli.{module}")
            app.command(name)(getattr(mod, func))
    return app
