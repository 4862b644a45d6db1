"""FolderBlobStore: blobs as files, blobs/sha256/<first 2 hex>/<other 62 hex>.

A staged temp file (blobs/tmp/, same filesystem) is published by a rename, so a blob is either
whole or absent. A file's mtime is its age for the orphan sweep.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from workspacectl.engine.blobs import BlobStore, Staged, is_digest

if TYPE_CHECKING:
    from workspacectl.engine.workspaces.folder import Workspace


class FolderBlobStore(BlobStore):
    def __init__(self, ws: Workspace, root: Path) -> None:
        super().__init__(ws, root)
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"FolderBlobStore({str(self.root)!r})"

    def path(self, sha: str) -> Path:
        if not is_digest(sha):
            raise ValueError(f"not a sha256 digest: {sha!r}")
        return self.root / "sha256" / sha[:2] / sha[2:]

    def publish(self, staged: Staged) -> None:
        """Rename into place; if the blob already exists the temp copy is dropped."""
        final = self.path(staged.sha256)
        if not staged.tmp.exists():
            return
        if final.exists():
            staged.tmp.unlink()
            return
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staged.tmp, final)

    def open(self, sha: str) -> BinaryIO:
        try:
            return open(self.path(sha), "rb")
        except ValueError:
            raise FileNotFoundError(sha) from None

    def exists(self, sha: str) -> bool:
        return is_digest(sha) and self.path(sha).is_file()

    def _delete(self, sha: str) -> bool:
        try:
            self.path(sha).unlink()
            return True
        except FileNotFoundError:
            return False

    def _digests_older_than(self, before: float) -> Iterator[str]:
        try:
            folders = sorted(d for d in (self.root / "sha256").iterdir() if d.is_dir() and len(d.name) == 2)
        except OSError:
            return
        for folder in folders:
            for f in _files(folder):
                sha = folder.name + f.name
                if is_digest(sha) and _mtime(f) < before:
                    yield sha


def _files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_file())
    except OSError:
        return []


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return float("inf")   # gone or unreadable: left alone
