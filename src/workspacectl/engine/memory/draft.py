"""A guide being folded into, note after note, within one batch of the memory agent.

The FoldingPolicy protocol is string in, string out: each call sees the whole guide, so folding
n notes into a guide of g bytes costs n x g. With 1,000 notes and a guide near its bound that is
quadratic work done while the workspace's write lock is held. The agent therefore works on a
draft: `already_there(text)`, `fold(text, section, max_bytes) -> bool` (False: the guide would
grow past max_bytes, and nothing changed) and `text()`.

- SectionAppendDraft is the default policy's fold kept as lines plus an index (level-2
  sections, the normalized lines and how often each occurs, the rendered size), so a note costs
  about its own size, not the guide's. It gives exactly the text that SectionAppendPolicy.fold
  and .already_there give note by note (tests/memory/test_memory_fold_batches.py checks that).
- StringDraft runs a plug-in policy's string protocol note by note and checks its answers.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from workspacectl.engine.memory.folding import (
    _HEADING,
    DEFAULT_SECTION,
    FoldingPolicy,
    SectionAppendPolicy,
    entry_lines,
    fence_after,
    normal_line,
    scan_sections,
    section_insert,
    section_key,
)
from workspacectl.errors import ApiError


def _size(lines: list[str]) -> int:
    """Bytes these lines take in the rendered guide (each ends with a newline)."""
    return sum(len(line.encode("utf-8", "surrogatepass")) for line in lines) + len(lines)


class SectionAppendDraft:
    def __init__(self, guide: str):
        self.original = guide
        self.changed = False
        self.lines = guide.rstrip("\n").split("\n") if guide.strip() else []
        self.norm = [normal_line(line) for line in self.lines]
        self.counts = Counter(n for n in self.norm if n)
        self.nbytes = _size(self.lines)
        self._scan()

    def _scan(self) -> None:
        """(Re)build the section index: [start, end, key] per level-2 section, the first section
        of each key, and the code fence open at the end of the guide."""
        found, self.eof_fence = scan_sections(self.lines)
        self.sections: list[list] = [list(s) for s in found]   # [start, end, key], ends moved by folds
        self.first: dict[str, int] = {}
        for n, (_, _, key) in enumerate(found):
            self.first.setdefault(key, n)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n" if self.changed else self.original

    def already_there(self, text: str) -> bool:
        want = [n for line in text.split("\n") if (n := normal_line(line))]
        if not want:
            return True
        if any(w not in self.counts for w in want):  # the usual answer, without a scan
            return False
        norm, i = self.norm, -1
        while True:  # every place the first wanted line occurs (list.index runs in C)
            try:
                i = norm.index(want[0], i + 1)
            except ValueError:
                return False
            j, k = i + 1, 1
            while k < len(want) and j < len(norm):
                if norm[j]:
                    if norm[j] != want[k]:
                        break
                    k += 1
                j += 1
            if k == len(want):
                return True

    def fold(self, text: str, section: str | None, max_bytes: int) -> bool:
        title = " ".join((section or "").split()) or DEFAULT_SECTION
        entry = entry_lines(text)
        n = self.first.get(section_key(title))
        if n is None:
            return self._append_section(title, entry, max_bytes)
        lines = self.lines
        start, end, _ = self.sections[n]
        at, rest, block = section_insert(lines, start, end, entry)
        # The lines between `at` and the section's end are blank, so the fence open at `at` is
        # the one open at the section's end: none when a heading follows, else the guide's last.
        before = None if end < len(lines) else self.eof_fence
        if not self._replace(at, rest, block, max_bytes):
            return False
        delta = len(block) - (rest - at)
        if fence_after(block, before) != before:
            self._scan()  # a note that leaves a fence open changes what follows: index anew
            return True
        self.sections[n][1] += delta
        for s in self.sections[n + 1:]:
            s[0] += delta
            s[1] += delta
        return True

    def _append_section(self, title: str, entry: list[str], max_bytes: int) -> bool:
        at = len(self.lines)
        block = ([""] if self.lines else []) + [f"## {title}", ""] + entry
        if not self._replace(at, at, block, max_bytes):
            return False
        head = at + len(block) - len(entry) - 2
        h = _HEADING.match(block[-len(entry) - 2])
        if self.eof_fence is not None or h is None or len(h.group(1)) != 2:
            self._scan()  # the heading sits inside an open fence (or is odd): index anew
            return True
        for s in self.sections:
            if s[1] == at:
                s[1] = head
        key = section_key(h.group(2))
        self.first.setdefault(key, len(self.sections))
        self.sections.append([head, len(self.lines), key])
        self.eof_fence = fence_after(entry, None)
        return True

    def _replace(self, at: int, rest: int, block: list[str], max_bytes: int) -> bool:
        """lines[at:rest] (blank lines) becomes block, unless the guide would pass max_bytes."""
        size = self.nbytes - _size(self.lines[at:rest]) + _size(block)
        if size > max_bytes:
            return False
        norm = [normal_line(line) for line in block]
        self.lines[at:rest] = block
        self.norm[at:rest] = norm
        self.counts.update(n for n in norm if n)
        self.nbytes, self.changed = size, True
        return True


class StringDraft:
    """A plug-in policy's string protocol, note by note; a plug-in that fails or answers the
    wrong type is reported (422 unprocessable) and the batch rolls back."""

    def __init__(self, policy: FoldingPolicy, guide: str):
        self.policy, self.guide = policy, guide

    def _call(self, method: str, *args: Any) -> Any:
        try:
            out = getattr(self.policy, method)(*args)
        except Exception as e:  # a plug-in's bug: the transaction rolls back and nothing changes
            raise ApiError("unprocessable", f"The memory folding policy '{self.policy.name}' failed "
                                            f"({type(e).__name__}); fix it or unset WSCTL_MEMORY_POLICY.") from None
        expected = bool if method == "already_there" else str
        if not isinstance(out, expected):
            raise ApiError("unprocessable", f"The memory folding policy '{self.policy.name}' answered a "
                                            f"{type(out).__name__} from {method}; it must answer a "
                                            f"{expected.__name__}.")
        return out

    def text(self) -> str:
        return self.guide

    def already_there(self, text: str) -> bool:
        return self._call("already_there", self.guide, text)

    def fold(self, text: str, section: str | None, max_bytes: int) -> bool:
        folded = self._call("fold", self.guide, text, section)
        if len(folded.encode("utf-8", "surrogatepass")) > max_bytes:
            return False
        self.guide = folded
        return True


def draft_for(policy: FoldingPolicy, guide: str) -> SectionAppendDraft | StringDraft:
    """The default policy folds through its index; any other (a subclass too, which may change
    fold) through its own string protocol."""
    return SectionAppendDraft(guide) if type(policy) is SectionAppendPolicy else StringDraft(policy, guide)
