"""The Typer app: the root options and one sub-app per group (cli/<group>.py).

A group whose module is not in this version is skipped, so the tree grows by adding modules.
"""
from __future__ import annotations

import importlib
import importlib.util
from typing import Annotated, Optional

import typer

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


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="wsctl",
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
    for module, name, help_text in GROUPS:
        if _exists(module):
            mod = importlib.import_module(f"workspacectl.cli.{module}")
            app.add_typer(mod.app, name=name, help=help_text)
    return app
