"""docs/architecture.md stays true to the code (issue 28 item 5): every module of the package is
named in it, so a module added without a word there fails here, and so does a module named there
that no longer exists under the path the document gives it."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "workspacectl"
DOC = (ROOT / "docs" / "architecture.md").read_text()


def _named(stem: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(stem) + r"(\.py)?\b", DOC) is not None


def test_every_module_is_named_in_the_architecture_doc():
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "engine" and rel.parts[1:2] == ("migrations",) and path.stem.startswith("m0"):
            continue   # migrations are named as a numbered series (m001_identity.py ... mNNN)
        if path.stem == "__init__":
            if len(rel.parts) > 1 and f"{rel.parent.name}/" not in DOC:
                missing.append(str(rel.parent) + "/")
            continue
        if not _named(path.stem):
            missing.append(str(rel))
    assert missing == [], f"name these in docs/architecture.md: {missing}"


def test_every_src_path_the_doc_gives_exists():
    """`engine/store/blob_references.py`-style paths in the text point at files that are there."""
    gone = []
    for m in sorted(set(re.findall(r"`((?:engine|server|backend|cli|formats|mcp_door|docgen)/[\w/]+\.py)", DOC))):
        if not (PACKAGE / m).is_file():
            gone.append(m)
    # and the engine's (or the CLI's) own folders named without their prefix (`store/blob_chunks.py`,
    # `vault/connect.py`)
    wings = "|".join(p.name for p in (PACKAGE / "engine").iterdir() if p.is_dir() and not p.name.startswith("_"))
    for m in sorted(set(re.findall(rf"`((?:{wings})/[\w/]+\.py)", DOC))):
        if not any((PACKAGE / top / m).is_file() for top in ("engine", "cli", ".")):
            gone.append(m)
    assert gone == [], f"docs/architecture.md names files that are not in src/workspacectl: {gone}"
