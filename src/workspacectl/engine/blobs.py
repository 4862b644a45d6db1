"""Content-addressed blobs in the workspace's blobs/ folder.

A blob is immutable bytes named by their SHA-256: blobs/sha256/<first 2 hex>/<other 62 hex>.
New bytes are written to a temp file under blobs/tmp/ (same filesystem), hashed on the way, and
published by a rename, so a blob is either whole or absent.

    with staging(ws) as folder:              # a temp folder, removed with whatever is left in it
        staged = stage(folder, reader)       # -> Staged(sha256, size, tmp); nothing published yet
        with transaction(conn):
            ...insert the rows naming staged.sha256...
            staged.publish(ws)               # rename into place (or drop: already there)
    remove_unreferenced(ws, old_shas)        # after the commit: unlink blobs nothing names now
    collect_orphans(ws, before)              # housekeeping: blobs no row names, older than before

    put_stream(ws, reader) -> (sha256, size)  # stage + publish, for callers inside a transaction
    open_blob(ws, sha) -> binary file         # FileNotFoundError when absent

Rules that keep blobs and rows consistent across processes:
- publish() inside the write transaction that records the reference, and remove_unreferenced()
  runs its check-and-unlink in a write transaction too, so the two never interleave.
- Every table naming a blob is listed in engine/store/blobs.py REFERENCES.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from workspacectl.errors import ApiError

CHUNK = 1 << 20
_SHA = re.compile(r"^[0-9a-f]{64}$")


def blob_path(ws, sha: str) -> Path:
    if not _SHA.match(sha):
        raise ValueError(f"not a sha256 digest: {sha!r}")
    return ws.blobs / "sha256" / sha[:2] / sha[2:]


def open_blob(ws, sha: str) -> BinaryIO:
    return open(blob_path(ws, sha), "rb")


def reader_of(body) -> BinaryIO | None:
    """A binary request body as a readable file: the server hands large bodies over as a temp
    file, the local backend as the caller's file, tests as bytes. None for anything else."""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(body))
    if hasattr(body, "read"):
        return body
    return None


@dataclass
class Staged:
    sha256: str
    size: int
    tmp: Path

    def publish(self, ws) -> None:
        """Move into place; if the blob already exists the temp copy is dropped. Idempotent."""
        final = blob_path(ws, self.sha256)
        if not self.tmp.exists():
            return
        if final.exists():
            self.tmp.unlink()
            return
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.tmp, final)

    def discard(self) -> None:
        self.tmp.unlink(missing_ok=True)


def _lock_folder(folder: Path) -> int | None:
    """An exclusive flock on the folder, held by the returned descriptor; the kernel drops it
    when the process dies, however it dies. OSError when another process holds it or the folder
    is gone; None where flock does not exist (then only the age rule of housekeeping applies)."""
    try:
        import fcntl
    except ImportError:
        return None
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise
    return fd


def _locked_stage_folder(root: Path) -> tuple[Path, int | None]:
    while True:
        folder = Path(tempfile.mkdtemp(prefix="stage-", dir=root))
        try:
            fd = _lock_folder(folder)
        except OSError:      # a sweep took it between mkdtemp and the lock: make another
            continue
        if fd is None:
            return folder, None
        try:
            if os.stat(folder).st_ino == os.fstat(fd).st_ino:
                return folder, fd
        except FileNotFoundError:
            pass
        os.close(fd)         # swept and removed before our lock: make another


@contextmanager
def staging(ws) -> Iterator[Path]:
    """A private temp folder under blobs/tmp/, removed on exit with anything not published. It is
    flock-ed while in use, so a folder whose lock is free was left by a killed process and
    remove_abandoned_stages() may take it at once, even while other processes stage files."""
    root = ws.blobs / "tmp"
    root.mkdir(parents=True, exist_ok=True)
    folder, fd = _locked_stage_folder(root)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if fd is not None:
            os.close(fd)


def remove_abandoned_stages(ws) -> int | None:
    """Remove the stage folders no live process holds (their request was killed); answers how
    many, or None where folders cannot be locked (housekeeping's age rule then applies)."""
    removed = 0
    try:
        folders = [p for p in (ws.blobs / "tmp").iterdir() if p.name.startswith("stage-") and p.is_dir()]
    except OSError:
        return 0
    for folder in folders:
        try:
            fd = _lock_folder(folder)
        except OSError:      # in use, or gone meanwhile
            continue
        if fd is None:
            return None
        try:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
        finally:
            os.close(fd)
    return removed


def stage(folder: Path, reader: BinaryIO | Iterable[bytes], max_bytes: int | None = None) -> Staged:
    """Write a stream (a binary file or an iterable of bytes) to a temp file in folder, hashing it.
    More than max_bytes -> ApiError payload_too_large (the temp file is removed)."""
    chunks = iter(lambda: reader.read(CHUNK), b"") if hasattr(reader, "read") else iter(reader)
    digest, size = hashlib.sha256(), 0
    fd, name = tempfile.mkstemp(prefix="blob-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                size += len(chunk)
                if max_bytes is not None and size > max_bytes:
                    raise ApiError("payload_too_large", f"The content is over {max_bytes} bytes; send less.")
                digest.update(chunk)
                f.write(chunk)
    except BaseException:
        os.unlink(name)
        raise
    return Staged(digest.hexdigest(), size, Path(name))


def stage_bytes(folder: Path, data: bytes) -> Staged:
    return stage(folder, [data])


def put_stream(ws, reader, max_bytes: int | None = None) -> tuple[str, int]:
    """Store a stream as a blob at once; call inside the transaction recording its reference."""
    with staging(ws) as folder:
        staged = stage(folder, reader, max_bytes)
        staged.publish(ws)
    return staged.sha256, staged.size


def remove_unreferenced(ws, shas: Iterable[str]) -> int:
    """Unlink those of shas no table names any more (engine/store/blobs.py). Answers how many.
    Runs in its own write transaction, after the change that dropped the references committed."""
    from workspacectl.engine.db import transaction
    from workspacectl.engine.store.blobs import is_referenced

    shas = sorted({s for s in shas if s and _SHA.match(s)})
    if not shas:
        return 0
    removed = 0
    conn = ws.conn()
    with transaction(conn):
        for sha in shas:
            if not is_referenced(conn, sha):
                try:
                    blob_path(ws, sha).unlink()
                    removed += 1
                except FileNotFoundError:
                    pass
    return removed


ORPHAN_BATCH = 200   # blobs checked per write transaction: the sweep never holds the workspace long


def collect_orphans(ws, before: float) -> int:
    """Unlink blobs no row names whose file is older than `before` (a filesystem timestamp).

    A process killed inside a commit leaves blobs published with no row naming them, and nothing
    else ever removes them. The age bound keeps any blob a request may still be about to record;
    each unlink re-checks the references under the write lock, as remove_unreferenced does, so a
    publisher reusing an old blob (publish() drops its copy when the blob exists) never loses it."""
    from workspacectl.engine.store.blobs import referenced_digests

    root = ws.blobs / "sha256"
    try:
        folders = [d for d in root.iterdir() if d.is_dir() and len(d.name) == 2]
    except OSError:
        return 0
    held = referenced_digests(ws.conn())
    candidates = []
    for folder in folders:
        for f in _files(folder):
            sha = folder.name + f.name
            if _SHA.match(sha) and sha not in held and _mtime(f) < before:
                candidates.append(sha)
    removed = 0
    for i in range(0, len(candidates), ORPHAN_BATCH):
        removed += remove_unreferenced(ws, candidates[i:i + ORPHAN_BATCH])
    return removed


def _files(folder: Path) -> list[Path]:
    try:
        return [p for p in folder.iterdir() if p.is_file()]
    except OSError:
        return []


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return float("inf")   # gone or unreadable: left alone
