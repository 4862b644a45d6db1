"""Generated docs: shell completions (completions/) and man pages (man/) from the command tree.

Regenerate with `python -m workspacectl.docgen` from the checkout (CONTRACT §10); the test
`tests/cli/test_docs_generated.py` fails when the committed files differ from what this makes.
"""
from __future__ import annotations

from pathlib import Path

from workspacectl.docgen import completions, manpages
from workspacectl.docgen.tree import Node, load_tree

REGENERATE = "python -m workspacectl.docgen"
COMPLETION_FILES = ("completions/wsctl.bash", "completions/_wsctl", "completions/wsctl.fish")


def render(tree: Node | None = None) -> dict[str, str]:
    """{path relative to the checkout: text} for every generated file."""
    tree = tree or load_tree()
    files = {
        "completions/wsctl.bash": completions.bash(tree),
        "completions/_wsctl": completions.zsh(tree),
        "completions/wsctl.fish": completions.fish(tree),
    }
    files.update({f"man/{name}": text for name, text in manpages.pages(tree).items()})
    return files


def _owned(root: Path) -> set[str]:
    """Generated files present on disk (the man pages and the three completion scripts)."""
    found = {p for p in COMPLETION_FILES if (root / p).exists()}
    man = root / "man"
    if man.is_dir():
        found |= {f"man/{p.name}" for p in man.glob("wsctl*.1")}
    return found


def diff(root: Path, files: dict[str, str] | None = None) -> list[str]:
    """What differs between the checkout and a fresh generation: 'changed: x', 'missing: y', 'stale: z'."""
    files = render() if files is None else files
    out = []
    for rel, text in files.items():
        path = root / rel
        if not path.exists():
            out.append(f"missing: {rel}")
        elif path.read_text(encoding="utf-8") != text:
            out.append(f"changed: {rel}")
    out += [f"stale: {rel}" for rel in sorted(_owned(root) - set(files))]
    return out


def write(root: Path, files: dict[str, str] | None = None) -> list[str]:
    """Write every generated file under `root` and remove stale man pages; returns what changed."""
    files = render() if files is None else files
    changes = diff(root, files)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    for rel in _owned(root) - set(files):
        (root / rel).unlink()
    return changes
