"""One walk over a parsed JSON or YAML value: every string in it, mapping keys included.

Pure: used by the engine (request bodies, definitions: validate.text_problem) and by the skill
bundle format (frontmatter: skill_bundle._holds_nul); no I/O.
"""
from __future__ import annotations

from collections.abc import Iterator


def strings(value: object) -> Iterator[str]:
    """Each string in `value` (keys and values of mappings, items of lists and tuples), depth first.

    Each list, tuple or mapping is visited once: YAML aliases share (or nest) one object, and a
    self-holding list (`a: &x [*x]`) would otherwise be walked forever. Iterative, so a value may
    nest as deep as its parser allows."""
    stack, seen = [value], set()
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, (dict, list, tuple)):
            if id(v) in seen:
                continue
            seen.add(id(v))
            stack.extend([*v.keys(), *v.values()] if isinstance(v, dict) else v)
