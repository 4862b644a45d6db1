"""The command tree as plain data: what the completion scripts and man pages are made from.

`load_tree()` walks the click command that Typer builds from `cli.app.build_app()` (typer vendors
click as `typer._click`; typer 0.29 parameters describe their type in `type_descriptor`, older
typer and plain click ones in `type`, and both are read here). Hidden commands and options are left out.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typer import _click


@dataclass
class Param:
    """An option (names like `--format`, `-f`) or a positional argument (no names)."""

    names: list[str]                 # long names first, then short; empty for an argument
    metavar: str                     # FORMAT, ID, ID...
    help: str
    takes_value: bool                # False for flags
    choices: list[str] = field(default_factory=list)
    path_kind: str | None = None     # "file", "dir" or None
    multiple: bool = False           # an option given repeatedly, or a variadic argument
    required: bool = False
    default: str | None = None       # shown as the default, already a string
    value_range: str | None = None   # "1 to 500", "at least 1"
    values: str | None = None        # "credential", "specialist", "skill": completed from the workspace

    @property
    def is_option(self) -> bool:
        return bool(self.names)


@dataclass
class Node:
    """A group or a command; `path` is its words after `wsctl` (empty for the root)."""

    path: tuple[str, ...]
    help: str
    options: list[Param]
    arguments: list[Param]
    children: list[Node] = field(default_factory=list)
    is_group: bool = False

    @property
    def name(self) -> str:
        return " ".join(("wsctl", *self.path))

    @property
    def page(self) -> str:
        """The man page name: wsctl, wsctl-vault, wsctl-vault-token."""
        return "-".join(("wsctl", *self.path))

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.walk()


def load_tree(command: _click.Command | None = None) -> Node:
    """The tree of `wsctl` (or of any click/Typer command given, for tests)."""
    if command is None:
        import typer

        from workspacectl.cli.app import build_app

        command = typer.main.get_command(build_app())
    return _node(command, (), _context(command, "wsctl", None))


def _context(command: _click.Command, name: str, parent: _click.Context | None) -> _click.Context:
    from typer import _click

    settings = dict(getattr(command, "context_settings", None) or {}) if parent is None else {}
    return _click.Context(command, info_name=name, parent=parent, **settings)


def _node(command: _click.Command, path: tuple[str, ...], ctx: _click.Context) -> Node:
    from typer.core import TyperGroup

    options, arguments = [], []
    for p in command.get_params(ctx):  # includes the help option, which click adds per context
        if getattr(p, "hidden", False):
            continue
        if getattr(p, "param_type_name", "") == "argument":
            arguments.append(_argument(p))
        else:
            options.append(_option(p))
    node = Node(path, clean_help(command.help or ""), options, arguments)
    if isinstance(command, TyperGroup):
        node.is_group = True
        for name in command.list_commands(ctx):
            child = command.get_command(ctx, name)
            if child is None or getattr(child, "hidden", False):
                continue
            node.children.append(_node(child, (*path, name), _context(child, name, ctx)))
    return node


def _option(p: _click.Parameter) -> Param:
    names = sorted(list(p.opts) + list(p.secondary_opts), key=lambda n: (not n.startswith("--"), n))
    flag = bool(getattr(p, "is_flag", False)) or bool(getattr(p, "count", False))
    metavar = p.metavar or (p.name or "").upper()
    default = None
    if not flag and p.default not in (None, "", (), []) and getattr(p, "show_default", True) is not False:
        default = _default_text(p.default)
    return Param(names=names, metavar=metavar, help=clean_help(getattr(p, "help", None) or ""),
                 takes_value=not flag, choices=_choices(p), path_kind=_path_kind(p),
                 multiple=bool(p.multiple), required=bool(p.required), default=default,
                 value_range=_range(p), values=_values(p))


def _argument(p: _click.Parameter) -> Param:
    metavar = p.metavar or (p.name or "").upper()
    return Param(names=[], metavar=metavar, help=clean_help(getattr(p, "help", None) or ""), takes_value=True,
                 choices=_choices(p), path_kind=_path_kind(p), multiple=p.nargs == -1 or p.nargs > 1,
                 required=bool(p.required), values=_values(p))


def _values(p: _click.Parameter) -> str | None:
    """The kind of workspace object a parameter names (cli/choices.Ref), completed at run time."""
    kind = getattr(getattr(p, "type", None), "kind", None)
    return kind if isinstance(kind, str) else None


def _choices(p: _click.Parameter) -> list[str]:
    desc = getattr(p, "type_descriptor", None)
    raw = desc.choices if desc is not None else getattr(getattr(p, "type", None), "choices", None)
    out = []
    for c in raw or ():
        value = getattr(c, "value", c)  # an Enum member completes as its value
        out.append(str(value))
    return out


def _path_kind(p: _click.Parameter) -> str | None:
    declared = getattr(getattr(p, "type", None), "path_kind", None)  # cli/choices.LocalPath
    if declared in ("file", "dir"):
        return declared
    desc = getattr(p, "type_descriptor", None)
    if desc is not None:
        if desc.is_file:
            return "file"
        if not desc.is_path:
            return None
        info = desc.parameter_info
        return "dir" if getattr(info, "dir_okay", True) and not getattr(info, "file_okay", True) else "file"
    t = getattr(p, "type", None)  # click's types, or typer's copies of them: recognised by their attributes
    if t is not None and hasattr(t, "dir_okay") and hasattr(t, "file_okay"):
        return "dir" if t.dir_okay and not t.file_okay else "file"
    if getattr(t, "name", None) == "filename":  # click.File
        return "file"
    return None


def _range(p: _click.Parameter) -> str | None:
    lo, hi = getattr(p, "min", None), getattr(p, "max", None)
    if lo is None and hi is None:
        t = getattr(p, "type", None)
        lo, hi = getattr(t, "min", None), getattr(t, "max", None)
    if lo is not None and hi is not None:
        return f"{lo} to {hi}"
    if lo is not None:
        return f"at least {lo}"
    if hi is not None:
        return f"at most {hi}"
    return None


def _default_text(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(_default_text(v) for v in value)
    value = getattr(value, "value", value)
    return str(value)


def clean_help(text: str) -> str:
    """Help as click shows it: cut at a form feed, common indentation removed, ends trimmed."""
    import inspect

    return inspect.cleandoc(text.split("\f", 1)[0]).strip()


def paragraphs(text: str) -> list[tuple[str, bool]]:
    """(text, keep_lines) per paragraph; click's `\\b` marks one whose line breaks are kept."""
    out = []
    for block in re.split(r"\n\s*\n", text.strip()):
        if not block.strip():
            continue
        if block.startswith("\b"):
            out.append((block[1:].strip("\n"), True))
        else:
            out.append((" ".join(line.strip() for line in block.splitlines()), False))
    return out


EXAMPLES = "Examples:"


def _blocks(text: str) -> list[str]:
    return [b for b in re.split(r"\n\s*\n", text.strip()) if b.strip()]


def _is_examples(block: str) -> bool:
    return block.startswith("\b") and block[1:].strip().startswith(EXAMPLES)


def examples(text: str) -> list[str]:
    """The command lines of a help's examples block: a paragraph kept as typed (click's `\\b`)
    whose first line is `Examples:`, one example a line, indented, a `# comment` allowed after it."""
    for block in _blocks(text):
        if _is_examples(block):
            return [line.strip() for line in block[1:].strip().splitlines()[1:] if line.strip()]
    return []


def without_examples(text: str) -> str:
    """The help without its examples block (the man page's DESCRIPTION; EXAMPLES has them)."""
    return "\n\n".join(b for b in _blocks(text) if not _is_examples(b))


def summary(text: str, name: str = "wsctl") -> str:
    """A one-line description: the first sentence of the help (two if the first is very short)."""
    paras = paragraphs(text)
    if not paras:
        return ""
    first = paras[0][0].replace("\n", " ")
    if first.lower().startswith(name + ": "):
        first = first[len(name) + 2:]
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z`\"'(])", first)
    out = sentences[0]
    if len(out) < 20 and len(sentences) > 1:
        out += " " + sentences[1]
    return out
