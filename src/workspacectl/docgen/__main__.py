"""`python -m workspacectl.docgen [--check] [--root DIR]`: regenerate completions/ and man/."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workspacectl.docgen import REGENERATE, diff, write


def _checkout() -> Path | None:
    """The source checkout this package runs from (src/workspacectl/docgen -> the repo root)."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "pyproject.toml").is_file() and (root / "src" / "workspacectl").is_dir() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workspacectl.docgen",
                                     description="Regenerate completions/ and man/ from the wsctl command tree.")
    parser.add_argument("--root", type=Path, help="The checkout to write into (default: the one this code is in).")
    parser.add_argument("--check", action="store_true", help="Change nothing; exit 1 if the files are out of date.")
    args = parser.parse_args(argv)
    root = args.root or _checkout()
    if root is None:
        print("error: not running from a source checkout; pass --root DIR.", file=sys.stderr)
        return 2
    if args.check:
        changes = diff(root)
        for line in changes:
            print(line)
        if changes:
            print(f"completions/ or man/ is out of date: run `{REGENERATE}`.", file=sys.stderr)
        return 1 if changes else 0
    changes = write(root)
    for line in changes:
        print(line)
    print(f"{len(changes)} file(s) updated under {root}." if changes else "Up to date.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
