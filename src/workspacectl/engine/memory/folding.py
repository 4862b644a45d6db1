"""How the memory agent folds one note into a guide: the FoldingPolicy protocol and its default.

A policy answers two questions about markdown text and touches nothing else (no database, no
files): is this note's text already in the guide (then the agent drops it), and what is the
guide with the note folded in. The agent (memory/agent.py) owns the transaction around it.

The policy is chosen by name: env WSCTL_MEMORY_POLICY, else the workspace setting
`memory.folding_policy`, else "section-append". A name is a key of POLICIES or
"package.module:ClassName" (a class with a no-argument constructor), for plug-ins.
"""
from __future__ import annotations

import importlib
import os
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

DEFAULT_SECTION = "Notes"
POLICY_ENV = "WSCTL_MEMORY_POLICY"
POLICY_SETTING = "memory.folding_policy"

# Headings count only at column 0: a note is folded as an indented list item, so a heading
# line inside a note can never open a section of the guide.
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_LIST_MARK = re.compile(r"^(?:[-*+]|\d{1,9}[.)])[ \t]+")


@runtime_checkable
class FoldingPolicy(Protocol):
    name: str

    def already_there(self, guide: str, text: str) -> bool:
        """True when the note's text is already in the guide (the note is dropped)."""

    def fold(self, guide: str, text: str, section: str | None) -> str:
        """The guide with the note's text folded in under its section."""


def section_key(title: str) -> str:
    """What makes two section titles the same: case and spacing ignored, closing #s dropped."""
    m = _HEADING.match("## " + title.strip())
    return " ".join((m.group(2) if m else title).split()).casefold()


def normal_line(line: str) -> str:
    """A line without indentation, list markers or repeated spaces ('' for a blank line)."""
    line = line.strip()
    while (m := _LIST_MARK.match(line)):
        line = line[m.end():]
    return " ".join(line.split()) if line else ""


def _normal_lines(markdown: str) -> list[str]:
    """Non-blank lines without indentation, list markers or repeated spaces."""
    return [n for line in markdown.split("\n") if (n := normal_line(line))]


def fence_after(lines: Iterable[str], fence: str | None) -> str | None:
    """The open code fence ('`', '~' or None) after `lines`, starting inside `fence`."""
    for line in lines:
        if (m := _FENCE.match(line)):
            mark = m.group(1)[0]
            fence = None if fence == mark else (fence or mark)
    return fence


def scan_sections(lines: list[str]) -> tuple[list[tuple[int, int, str]], str | None]:
    """(heading index, end index, key) of every level-2 section, and the code fence still open
    at the end. A section ends at the next heading of level 1 or 2 (or the end). Lines inside
    fenced code blocks are never headings."""
    heads: list[tuple[int, int, str]] = []
    fence = None
    for i, line in enumerate(lines):
        if line[:1] != "#" and not line.lstrip(" \t").startswith(("```", "~~~")):
            continue  # neither a heading nor a fence: skip the regexes (most lines of a guide)
        m = _FENCE.match(line)
        if m:
            mark = m.group(1)[0]
            fence = None if fence == mark else (fence or mark)
            continue
        if fence:
            continue
        h = _HEADING.match(line)
        if h and len(h.group(1)) <= 2:
            heads.append((i, len(h.group(1)), h.group(2)))
    out = []
    for n, (i, level, title) in enumerate(heads):
        end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
        if level == 2:
            out.append((i, end, section_key(title)))
    return out, fence


def _sections(lines: list[str]) -> list[tuple[int, int, str]]:
    return scan_sections(lines)[0]


def entry_lines(text: str) -> list[str]:
    """A note as list-item lines: '- first line', the rest indented under it. A note that is
    already a list keeps its items; an unclosed code fence is closed."""
    lines = [line.rstrip() for line in text.strip("\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    if _LIST_MARK.match(lines[0]):
        out = [line if not line or _LIST_MARK.match(line) or line[0] in " \t" else "  " + line for line in lines]
    else:
        out = ["- " + lines[0].lstrip()] + ["  " + line if line else "" for line in lines[1:]]
    fences = [m.group(1)[0] for line in out if (m := _FENCE.match(line))]
    if len(fences) % 2:
        out.append("  " + fences[-1] * 3)
    return out


def section_insert(lines: list[str], start: int, end: int, entry: list[str]) -> tuple[int, int, list[str]]:
    """Where an entry goes in the section lines[start:end] (its heading at start): lines[at:rest]
    (blank lines) become block. After the section's last non-blank line, with a blank line
    before it unless that line is a list item, and one blank line before what follows."""
    last = end - 1
    while last > start and not lines[last].strip():
        last -= 1
    if last == start:
        block, at = ["", *entry], start + 1
    else:
        block, at = (entry if _is_list_line(lines[last]) else ["", *entry]), last + 1
    rest = at
    while rest < len(lines) and not lines[rest].strip():
        rest += 1
    if rest < len(lines):
        block = [*block, ""]
    return at, rest, block


def _is_list_line(line: str) -> bool:
    return bool(_LIST_MARK.match(line)) or line[:1] in (" ", "\t")


class SectionAppendPolicy:
    """Appends each note as a list item at the end of its `## Section` (made at the end of the
    guide when missing; a note without a section goes under `## Notes`). A note is already
    there when its lines, ignoring indentation, list markers and spacing, appear in the guide
    as consecutive lines."""

    name = "section-append"

    def already_there(self, guide: str, text: str) -> bool:
        want = _normal_lines(text)
        if not want:
            return True
        # Fast refusal, in C: a normalized guide line is whole words of the guide, so a wanted
        # line that is no substring of the guide's words joined by single spaces is nowhere.
        # (Normalizing the whole guide for every note made a run O(notes x guide) in Python.)
        words = " ".join(guide.split())
        if not all(line in words for line in want):
            return False
        have = _normal_lines(guide)
        n = len(want)
        return any(have[i:i + n] == want for i in range(len(have) - n + 1))

    def fold(self, guide: str, text: str, section: str | None) -> str:
        title = " ".join((section or "").split()) or DEFAULT_SECTION
        entry = entry_lines(text)
        lines = guide.rstrip("\n").split("\n") if guide.strip() else []
        key = section_key(title)
        found = next(((i, end) for i, end, k in _sections(lines) if k == key), None)
        if found is None:
            head = [*lines, ""] if lines else []
            return "\n".join([*head, f"## {title}", "", *entry]) + "\n"
        at, rest, block = section_insert(lines, *found, entry)
        return "\n".join(lines[:at] + block + lines[rest:]) + "\n"


POLICIES: dict[str, type] = {SectionAppendPolicy.name: SectionAppendPolicy}


def policy_named(name: str, source: str) -> FoldingPolicy:
    name = name.strip()
    cls = POLICIES.get(name)
    if cls is None and ":" in name:
        module, _, attr = name.partition(":")
        try:
            cls = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError, ValueError, TypeError):
            cls = None
    try:
        policy = cls() if isinstance(cls, type) else None
    except Exception:  # a plug-in that cannot be made is reported like an unknown name
        policy = None
    if not isinstance(policy, FoldingPolicy):
        raise ApiError("invalid_request", f"Unknown memory folding policy '{name[:100]}' (from {source}); "
                                          f"set it to {' or '.join(POLICIES)} or to module:Class.")
    return policy


def choose_policy(conn: Conn) -> FoldingPolicy:
    from workspacectl.engine.store.identity import get_setting

    if os.environ.get(POLICY_ENV, "").strip():
        return policy_named(os.environ[POLICY_ENV], POLICY_ENV)
    configured = get_setting(conn, POLICY_SETTING)
    if configured and configured.strip():
        return policy_named(configured, f"workspace setting {POLICY_SETTING}")
    return SectionAppendPolicy()
