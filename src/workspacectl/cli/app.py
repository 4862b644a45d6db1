"""The Typer app: the root options and one sub-app per group (cli/<group>/commands.py).

A group's module is imported only when the command line reaches that group, and each of its
commands is built only when the line reaches that command (or the docs generator walks the tree):
`wsctl vault list` does not build `skill` or `specialist`, nor `vault connect`. `wsctl --help`
lists the groups from GROUPS without importing any of them, and builds no command but the root.
"""
from __future__ import annotations

import copy
import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer
from typer import _click
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandInfo, TyperInfo

from workspacectl import __version__
from workspacectl.cli.common.context import state
from workspacectl.cli.common.usage import Command, real_metavars

# (module, command name, help) in the order `wsctl --help` lists them: a group is the package
# cli/<group>/, its Typer app in commands.py.
GROUPS = [
    ("auth.commands", "auth", "Sign in to a server, show who you are, sign out."),
    ("profile.commands", "profile", "Profiles: list, show, switch, rename and remove them."),
    ("members.commands", "members", "Members of the workspace and their login codes."),
    ("keys.commands", "keys", "Personal and platform API keys."),
    ("vault.commands", "vault", "Connected accounts: list, connect, issue audited tokens, run with secrets."),
    ("catalog.commands", "catalog", "Integrations and operations the workspace can use."),
    ("specialist.commands", "specialist", "Specialists (projects): workflows, apps, skills and files."),
    ("memory.commands", "memory", "Workspace and member memory, changed through proposals."),
    ("skill.commands", "skill", "Skills: SKILL.md bundles, versions, publishing."),
    ("trigger.commands", "trigger", "Trigger providers that start workflows."),
    ("workflow.commands", "workflow", "Workflows and apps."),
    ("admin.commands", "admin", "Workspace administration (key rotation)."),
    ("webhooks.commands", "webhooks", "Signed webhook subscriptions to the event feed."),
]
# Top-level commands, imported and built when used; listed with the first sentence of their
# function's docstring (tests/cli/test_imports.py checks the listing against the built command).
COMMANDS = [
    ("init", "init", "init", "Make a workspace (SQLite + blobs folder) and a local profile that acts as its owner."),
    ("serve", "serve", "serve", "Serve a workspace over HTTP at /v1, with the hosted sign-in and connect pages."),
    ("api", "api", "api", "Call any route of the API and print its JSON body."),
    ("mcp", "mcp", "mcp", "Serve the workspace to an AI agent as Model Context Protocol tools (stdio)."),
    ("events", "events", "events", "Show the workspace's event feed: what happened, newest first."),
]
# Top-level commands built only when used, as the groups are: (module, function, name, help, hidden).
LAZY_COMMANDS = [
    ("completion", "completion", "completion", "Print the shell completion script.", False),
    ("completion", "man", "man", "Show the manual page of wsctl or of one of its commands.", False),
    # what the completion scripts call for ids and names; not a command for people
    ("completion", "complete_values", "complete-values", "Ids and names for shell completion.", True),
]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"wsctl {__version__}")
        raise typer.Exit()


def root(
    ctx: typer.Context,
    profile: Annotated[str | None, typer.Option("--profile", "-p", help="Profile in config.toml to use.", envvar=None)] = None,
    json: Annotated[bool, typer.Option("--json", help="Print the API's JSON body exactly.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Trace each request on stderr (method, URL, status, time; secrets redacted) and print the traceback of an error; works anywhere on the line, except as the value of another option.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")] = False,
    timeout: Annotated[float | None, typer.Option("--timeout", metavar="SECONDS", help="How long to wait for a server: the command's calls, retries included, end within SECONDS in all (vault connect --wait, vault run --watch, events --follow and mcp: each call); an upload or download stops only after SECONDS without progress (default: WSCTL_TIMEOUT or 60). Past it: exit 8.")] = None,
) -> None:
    """wsctl: run a workspace platform from the terminal.

    Works at once on an embedded local workspace; point it at a server with
    `wsctl auth login --server URL` or WSCTL_SERVER.
    """
    st = state(ctx)
    if timeout is not None:
        import math

        from workspacectl.backend import timeouts

        if not (math.isfinite(timeout) and 0 < timeout <= timeouts.MAX):
            raise typer.BadParameter(f"must be a number of seconds above 0 and at most {timeouts.MAX:.0f}, not {timeout:g}",
                                     param_hint="--timeout")
        timeouts.flag = timeout
    st.profile_flag = profile
    st.json = json
    st.debug = debug or _tracing()


def _tracing() -> bool:
    """cli/main.py takes --debug off the line wherever it stands and turns tracing on."""
    import sys

    trace = sys.modules.get("workspacectl.backend.http_trace")
    return bool(trace and trace.enabled)


class _Unloaded(TyperCommand):
    """A group or command not built yet: its name and one-line help, all a command listing needs;
    `build()` makes the real one (importing its module, if it is a top-level group or command)."""

    def __init__(self, name: str, help_text: str | None, build: Callable[[], _click.Command], hidden: bool = False,
                 short_help: str | None = None, deprecated: bool = False) -> None:
        super().__init__(name=name, help=help_text, hidden=hidden, short_help=short_help, deprecated=deprecated)
        self.build = build


def _function(module: str, func: str) -> Callable:
    return getattr(importlib.import_module(f"workspacectl.cli.{module}"), func)


def _build_command(module: str, func: str, name: str, hidden: bool) -> _click.Command:
    """As `@app.command(name, hidden=hidden)` on the root app would make it."""
    return _command_from(CommandInfo(name, cls=Command, callback=_function(module, func), hidden=hidden))


def _command_from(info: CommandInfo) -> _click.Command:
    """As typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False) builds a command, as a
    cli/usage.Command (real metavars, a usage line without braces)."""
    if info.cls in (None, TyperCommand):
        info = copy.copy(info)
        info.cls = Command
    return typer.main.get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=None)


def _build_group(module: str, name: str, help_text: str | None) -> _click.Command:
    app = importlib.import_module(f"workspacectl.cli.{module}").app
    return lazy_group(TyperInfo(app, name=name, help=help_text), (name,))


def lazy_group(info: TyperInfo, path: tuple[str, ...]) -> LazyGroup:
    """typer.main.get_group_from_info, but each command of the group is a placeholder built when
    it is used (sub-groups are walked the same way). Typer makes a command's options from its
    function's annotations, which under `from __future__ import annotations` are strings it
    compiles and evaluates twice (inspect.signature and get_type_hints): `wsctl vault list`
    pays that for `list` only, not for the group's other commands."""
    app = info.typer_instance
    assert isinstance(app, typer.Typer)
    shell = copy.copy(app)   # the group itself (help, callback, settings) without its commands
    shell.registered_commands, shell.registered_groups = [], []
    shell_info = copy.copy(info)
    shell_info.typer_instance, shell_info.cls = shell, LazyGroup
    group = typer.main.get_group_from_info(shell_info, pretty_exceptions_short=True, suggest_commands=True,
                                           rich_markup_mode=None)
    assert isinstance(group, LazyGroup)
    group.path = path
    for command in app.registered_commands:
        assert command.callback is not None
        name = command.name or typer.main.get_command_name(command.callback.__name__)
        help_text = inspect.getdoc(command.callback) if command.help is None else inspect.cleandoc(command.help)
        group.commands[name] = _Unloaded(name, help_text, functools.partial(_command_from, command),
                                         hidden=command.hidden, short_help=command.short_help,
                                         deprecated=command.deprecated)
    for sub_info in app.registered_groups:
        sub = lazy_group(sub_info, (*path, str(sub_info.name)))
        if sub.name:
            group.commands[sub.name] = sub
        else:   # typer's add_typer without a name: the sub-app's commands join this group
            group.commands.update(sub.commands)
    return group


# Lists: each takes --limit N and --all (cli/common/scripting.py; the command reads them through all_pages).
LISTS = {("vault", "list"), ("vault", "log"), ("members", "list"), ("keys", "list"), ("specialist", "list"),
         ("specialist", "connections"), ("specialist", "files", "list"), ("skill", "list"), ("skill", "versions"),
         ("trigger", "list"), ("workflow", "list"), ("catalog", "integrations"), ("catalog", "operations"),
         ("catalog", "history"), ("memory", "files"), ("profile", "list"), ("events",), ("webhooks", "list"),
         ("webhooks", "deliveries")}


def add_scripting_options(command: _click.Command, path: tuple[str, ...]) -> None:
    """Every command with --json also takes --jq EXPR; every list takes --limit N and --all."""
    from workspacectl.cli.common import scripting

    if isinstance(command, _Unloaded):
        return   # given them when it is built
    for name, sub in (getattr(command, "commands", None) or {}).items():
        add_scripting_options(sub, (*path, name))
    names = {p.name for p in command.params}
    if "json" in names and "jq" not in names:
        command.params.append(scripting.jq_option())
    if path in LISTS and "limit" not in names:
        command.params.extend(scripting.list_options())


class LazyGroup(TyperGroup):
    """A group whose placeholders (_Unloaded) are built on first use, which gives them their
    scripting options (--jq, --limit/--all); a help listing shows the placeholders' one-line help
    instead of building them."""

    path: tuple[str, ...] = ()
    _listing = False

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        real_metavars(self.params)

    def get_command(self, ctx: _click.Context | None, cmd_name: str) -> _click.Command | None:
        cmd = self.commands.get(cmd_name)
        if isinstance(cmd, _Unloaded) and not self._listing:
            cmd = self.commands[cmd_name] = cmd.build()
            add_scripting_options(cmd, (*self.path, cmd_name))
        return cmd

    def format_commands(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False


class LazyRoot(LazyGroup):
    """The root group: every group is listed at once (so typo suggestions see them all) and its
    module imported and built on first use."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for module, func, name, help_text in COMMANDS:
            self.commands[name] = _Unloaded(name, help_text, functools.partial(
                _build_command, module, func, name, False))
        for module, name, help_text in GROUPS:
            self.commands.setdefault(name, _Unloaded(name, help_text, functools.partial(
                _build_group, module, name, help_text)))
        for module, func, name, help_text, hidden in LAZY_COMMANDS:
            self.commands.setdefault(name, _Unloaded(name, help_text, functools.partial(
                _build_command, module, func, name, hidden), hidden=hidden))
        from workspacectl.cli.common import scripting

        self.params.append(scripting.jq_option())


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
    app.callback()(root)   # the commands are LazyRoot's
    return app
