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


def _version(value: bool):
    if value:
        typer.echo(f"wsctl {__version__}")
        raise typer.Exit()


def root(
    ctx: typer.Context,
    profile: Annotated[Optional[str], typer.Option("--profile", "-p", help="Profile in config.toml to use.", envvar=None)] = None,
    json: Annotated[bool, typer.Option("--json", help="Print the API's JSON body exactly.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and HTTP details on errors.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")] = False,
):
    """wsctl: run a workspace platform from the terminal.

    Works at once on an embedded local workspace; point it at a server with
    `wsctl auth login --server URL` or WSCTL_SERVER.
    """
    st = state(ctx)
    st.profile_flag = profile
    st.json = json
    st.debug = debug


def _exists(module: str) -> bool:
    return importlib.util.find_spec(f"workspacectl.cli.{module}") is not None


class _Unloaded(TyperCommand):
    """A group not imported yet: its name and one-line help, all a command listing needs."""

    def __init__(self, module: str, name: str, help_text: str):
        super().__init__(name=name, help=help_text)
        self.module = module


def _build_group(module: str, name: str, help_text: str) -> _click.Command:
    holder = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False, add_completion=False)
    holder.add_typer(importlib.import_module(f"workspacectl.cli.{module}").app, name=name, help=help_text)
    return typer.main.get_group(holder).commands[name]


class LazyRoot(TyperGroup):
    """The root group: every group is listed at once (so typo suggestions see them all) and
    built on first use; a help listing shows the placeholders' one-line help instead."""

    _listing = False

    def __init__(self, **attrs):
        super().__init__(**attrs)
        for module, name, help_text in GROUPS:
            self.commands.setdefault(name, _Unloaded(module, name, help_text))

    def get_command(self, ctx, cmd_name: str):
        cmd = self.commands.get(cmd_name)
        if isinstance(cmd, _Unloaded) and not self._listing:
            cmd = self.commands[cmd_name] = _build_group(cmd.module, cmd_name, cmd.help)
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
