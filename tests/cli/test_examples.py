"""Every command that takes arguments shows 1-3 examples, in `--help` and as its man page's
EXAMPLES, and each example is a command line this wsctl parses (its options exist, its choices and
required options are right); no usage line reads `{CREDENTIAL}` or `<str>` (issue 26 item 6).

In-process: help and parsing are click's on the built command tree; one real `--help` run checks
what a terminal shows.
"""
from __future__ import annotations

import re
import shlex

import pytest
import typer
from typer import _click
from typer._click.exceptions import UsageError

from tests.conftest import base_env, run_wsctl
from workspacectl.cli.app import build_app
from workspacectl.cli.common import scripting
from workspacectl.docgen import manpages
from workspacectl.docgen.tree import examples, load_tree

SHELL_OPS = {"|", ">", ">>", "<", "&&", "||", ";", "&"}


@pytest.fixture(scope="module")
def root():
    return typer.main.get_command(build_app())


def _is_group(command) -> bool:
    return getattr(command, "commands", None) is not None


def _walk(command, path=(), parent=None):
    settings = dict(command.context_settings or {}) if parent is None else {}
    ctx = _click.Context(command, info_name=path[-1] if path else "wsctl", parent=parent, **settings)
    yield path, command, ctx
    if _is_group(command):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, (*path, name), ctx)


def _words(example: str) -> list[str]:
    """The example's wsctl arguments: env assignments before it and a pipe or redirect after it cut."""
    lex = shlex.shlex(example, posix=True, punctuation_chars=True)
    lex.whitespace_split, lex.commenters = True, "#"
    words = list(lex)
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        words.pop(0)
    cut = next((i for i, w in enumerate(words) if w in SHELL_OPS), len(words))
    assert words[:1] == ["wsctl"], f"an example starts with wsctl: {example!r}"
    return words[1:cut]


def _parse(root, words: list[str]) -> tuple[str, ...]:
    """Parse as `wsctl` would (root options, the command path, the command's own parameters; no
    command runs): the command path reached. A usage error raises."""
    scripting.reset()
    try:
        ctx = root.make_context("wsctl", list(words))
        path: tuple[str, ...] = ()
        command = root
        rest = [*ctx._protected_args, *ctx.args]
        while _is_group(command):
            name, command, rest = command.resolve_command(ctx, rest)
            path += (name,)
            ctx = command.make_context(name, list(rest), parent=ctx)
            rest = [*ctx._protected_args, *ctx.args] if _is_group(command) else []
        return path
    finally:
        scripting.reset()


def test_every_command_with_arguments_has_examples_that_parse(root):
    tree = {n.path: n for n in load_tree().walk()}
    pages = manpages.pages(load_tree())
    checked = 0
    for path, command, ctx in _walk(root):
        node = tree[path]
        if not node.arguments and not examples(node.help):
            continue
        lines = examples(node.help)
        assert 1 <= len(lines) <= 3, (f"wsctl {' '.join(path)}: 1-3 examples, not {len(lines)}: end its docstring "
                                      "with a '\\b' line, 'Examples:' and one indented command line each (docs/cli.md)")
        shown = command.get_help(ctx)
        assert "\n  Examples:\n" in shown and all(f"    {line}\n" in shown for line in lines), shown
        page = pages[f"{node.page}.1"]
        assert "\n.SH EXAMPLES\n" in page, node.page
        for line in lines:
            try:
                reached = _parse(root, _words(line))
            except UsageError as exc:
                pytest.fail(f"example of wsctl {' '.join(path)} does not parse: {line!r}: {exc.format_message()}")
            assert reached == path, f"an example of wsctl {' '.join(path)} runs wsctl {' '.join(reached)}: {line!r}"
            assert manpages._escape(line.partition("  # ")[0].rstrip()) in page
        checked += 1
    assert checked >= 70   # every command taking arguments (69 today) and mcp


def test_no_usage_line_or_option_reads_braces_or_a_type_name(root):
    for path, command, ctx in _walk(root):
        usage = command.get_usage(ctx)
        assert not re.search(r"[{}]|<str>|<int>|<float>|:<", usage), usage
        shown = command.get_help(ctx)
        assert not re.search(r"<(str|int|float|path|text|integer)>", shown), (path, shown)
        for p in command.get_params(ctx):   # a value's name says what goes there: not Q, TYPE_ or INTO
            meta = p.make_metavar(ctx)
            if p.metavar:
                assert meta not in ("INTO", "INPUTS") and not re.search(r"_$|^[A-MO-Z]$", meta), (path, meta)


def test_a_terminal_sees_the_usage_line_and_examples(home):
    r = run_wsctl(["vault", "token", "--help"], base_env(home))
    assert r.out.startswith("Usage: wsctl vault token [OPTIONS] CREDENTIAL\n"), r.out
    assert "\n  Examples:\n    wsctl vault token " in r.out and "{" not in r.out.split("\n\n")[0]
    r = run_wsctl(["api", "--help"], base_env(home))
    assert r.out.startswith("Usage: wsctl api [OPTIONS] METHOD PATH\n") and "\n  METHOD  " in r.out, r.out
