"""Uploading a folder to a specialist's files: only what changed is sent.

The folder is measured first (its files and sizes), then hashed (sha256, with a progress bar
against the measured total), and the manifest is compared with the specialist's file listing
(path, size, sha256). Files whose path and sha256 both match are left out of the bundle; an
unchanged folder sends nothing at all. Files the specialist holds that the folder does not are
kept, as with `rsync` and `cp`, unless --delete is given: then they are removed once the upload
has gone through.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from workspacectl.errors import ApiError

CHUNK = 1 << 20


@dataclass
class LocalFile:
    path: str        # relative, with /
    full: str
    size: int
    mtime: float
    sha256: str = ""


@dataclass
class Plan:
    send: list[LocalFile]      # new or changed
    unchanged: int
    extra: list[str]           # in the specialist, not in the folder

    @property
    def send_bytes(self) -> int:
        return sum(f.size for f in self.send)


def measure(root: Path) -> list[LocalFile]:
    """The folder's regular files, sorted by path. A link or special file is refused here,
    before anything is sent: the server would refuse the bundle anyway."""
    found: list[LocalFile] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as it:
            for e in sorted(it, key=lambda e: e.name):
                rel = Path(e.path).relative_to(root).as_posix()
                if e.is_symlink():
                    raise ApiError("invalid_request", f"{rel} is a symbolic link; bundles hold only regular "
                                                      "files. Replace it with a copy or remove it.")
                if e.is_dir(follow_symlinks=False):
                    stack.append(Path(e.path))
                elif e.is_file(follow_symlinks=False):
                    st = e.stat(follow_symlinks=False)
                    found.append(LocalFile(rel, e.path, st.st_size, st.st_mtime))
                else:
                    raise ApiError("invalid_request", f"{rel} is not a regular file; remove it from the folder.")
    found.sort(key=lambda f: f.path)
    return found


def hash_files(files: list[LocalFile], advance: Callable[[int], None]) -> None:
    for f in files:
        h = hashlib.sha256()
        with open(f.full, "rb") as fh:
            while chunk := fh.read(CHUNK):
                h.update(chunk)
                advance(len(chunk))
        f.sha256 = h.hexdigest()


def plan(files: list[LocalFile], remote: list[dict]) -> Plan:
    """remote: the specialist's listing entries ({path, size, sha256, ...})."""
    theirs = {r["path"]: r.get("sha256") for r in remote}
    send = [f for f in files if theirs.get(f.path) != f.sha256]
    mine = {f.path for f in files}
    return Plan(send, len(files) - len(send), sorted(p for p in theirs if p not in mine))


def packed(files: list[LocalFile], advance: Callable[[int], None]) -> Iterator[bytes]:
    """The files as a tar.gz stream; advance(n) hears each file's bytes as they are packed."""
    from workspacectl.formats.tar_stream import write_bundle

    def opener(f: LocalFile) -> Callable[[], CountingReader]:
        return lambda: CountingReader(open(f.full, "rb"), advance)

    return write_bundle((f.path, f.size, f.mtime, opener(f)) for f in files)


class CountingReader:
    """A file whose reads are told to advance(n)."""

    def __init__(self, fh: BinaryIO, advance: Callable[[int], None]) -> None:
        self.fh, self.advance = fh, advance

    def read(self, n: int = -1) -> bytes:
        chunk = self.fh.read(n)
        if chunk:
            self.advance(len(chunk))
        return chunk

    def close(self) -> None:
        self.fh.close()

    def __enter__(self) -> CountingReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
