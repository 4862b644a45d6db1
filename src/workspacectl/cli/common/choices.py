"""Values an option takes from a fixed set, declared as choices so that click refuses anything else
as a usage error (exit 2) and the completion scripts and man pages list them (docgen/tree.py reads
a parameter type's `choices`).

Most are plain `Literal[...]` annotations where the option is declared; this module holds the one
type Typer has no annotation for: a list given comma- or space-separated (`--scope a,b`).
"""
from __future__ import annotations

from typing import Any

from typer import _click
from typer._click.types import ParamType
from typer._types import TyperChoice

from workspacectl.formats.key_scopes import PERSONAL_SCOPES, PLATFORM_SCOPES

SCOPES = (*PLATFORM_SCOPES, *PERSONAL_SCOPES)


class ChoiceList(TyperChoice[str]):
    """One or more of `choices`, comma- or space-separated; answers them as one string."""

    name = "choice-list"

    def convert(self, value: Any, param: _click.Parameter | None, ctx: _click.Context | None) -> str:
        words = str(value).replace(",", " ").split()
        if not words:
            self.fail("give at least one value", param, ctx)
        for word in words:
            super().convert(word, param, ctx)
        return ",".join(words)


def scope_list() -> ChoiceList:
    return ChoiceList(SCOPES)


class Ref(ParamType):
    """An argument naming a credential, specialist, skill, workflow, member or key: any text, but the
    completion scripts ask `wsctl complete-values KIND` for the ids and names there are."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.name = kind

    def convert(self, value: Any, param: _click.Parameter | None, ctx: _click.Context | None) -> Any:
        return value


class LocalPath(ParamType):
    """A local file or folder named as text (often '-' for stdin/stdout, so not a click.Path): the
    value stays a string, and the completion scripts complete files (or folders) there."""

    def __init__(self, path_kind: str) -> None:
        self.path_kind = path_kind
        self.name = path_kind

    def convert(self, value: Any, param: _click.Parameter | None, ctx: _click.Context | None) -> Any:
        return value


def local_file() -> LocalPath:
    return LocalPath("file")


def local_dir() -> LocalPath:
    return LocalPath("dir")


def credential() -> Ref:
    return Ref("credential")


def specialist() -> Ref:
    return Ref("specialist")


def skill() -> Ref:
    return Ref("skill")


def workflow() -> Ref:
    return Ref("workflow")


def member() -> Ref:
    return Ref("member")


def key() -> Ref:
    return Ref("key")
