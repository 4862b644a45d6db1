"""An uploaded tar.gz read (engine/bundle_tar.read_tar, the one reader) and its files staged as
blobs (engine/blobs/__init__.py) without publishing anything: the caller commits all of it or none.

    with ws.blob_store.staging() as stage:
        files, staged = stage_archive(reader, stage, limits)   # {path: FileRef}, {sha256: Staged}
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import BinaryIO

from workspacectl.engine.blobs import Stage, Staged
from workspacectl.formats.tar_stream import Limits, read_tar

SMALL = 256 * 1024          # files up to this size are hashed in memory before touching disk


@dataclass(frozen=True)
class FileRef:
    """A file of a bundle: its content is the blob `sha256` (staged or published)."""
    sha256: str
    size: int
    executable: bool = False


def stage_archive(reader: BinaryIO, stage: Stage, limits: Limits) -> tuple[dict[str, FileRef], dict]:
    """Read and stage a tar.gz; ArchiveError (400/413) refuses it whole, staged files go with the stage."""
    files: dict[str, FileRef] = {}
    staged: dict[str, Staged] = {}
    for rec in read_tar(reader, limits):
        if rec.size <= SMALL:
            content = rec.read(rec.size)
            sha = hashlib.sha256(content).hexdigest()
            if sha not in staged:
                staged[sha] = stage.put_bytes(content)
        else:
            s = stage.put(rec)
            sha = s.sha256
            if sha in staged:
                s.discard()
            else:
                staged[sha] = s
        files[rec.path] = FileRef(sha, rec.size, rec.executable)
    return files, staged
