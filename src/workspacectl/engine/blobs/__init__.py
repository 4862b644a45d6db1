"""Content-addressed blobs behind one small interface, so where they live can change.

A blob is immutable bytes named by their SHA-256. A workspace has one `BlobStore`
(`ws.blob_store`): `FolderBlobStore` (engine/blobs/folder.py, a folder workspace's blobs/)
or `PgBlobStore` (engine/blobs/postgres.py, chunks in PostgreSQL beside the rows). An
S3-compatible store would be a third subclass.

    store = ws.blob_store
    with store.staging() as stage:           # a private local temp folder, removed on exit
        staged = stage.put(reader)           # -> Staged(sha256, size, tmp); nothing published yet
        with transaction(conn):
            ...insert the rows naming staged.sha256...
            store.publish(staged)            # into the store, inside the recording transaction
    store.remove_unreferenced(old_shas)      # after the commit: drop blobs nothing names now
    store.collect_orphans(before)            # housekeeping: blobs no row names, older than before
    store.put(reader) -> (sha256, size)      # stage + publish, for callers inside a transaction
    store.open(sha) -> binary file           # streamed reads; FileNotFoundError when absent
    store.exists(sha) -> bool

Staging is local for every store: bytes arrive, are hashed and checked (limits, archive rules)
in a temp file under the workspace's blobs/tmp/, and only then enter the store.

Rules that keep blobs and rows consistent across processes:
- publish() inside the write transaction that records the reference, and remove_unreferenced()
  runs its check-and-delete in a write transaction too, so the two never interleave.
- Every table naming a blob is listed in engine/store/blob_references.py REFERENCES.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, TypeGuard

from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.workspaces.folder import Workspace

CHUNK = 1 << 20
ORPHAN_BATCH = 200   # blobs checked per write transaction: a sweep never holds the workspace long
_SHA = re.compile(r"^[0-9a-f]{64}$")


def blob_lock(sha: str) -> str:
    """The resource a writer locks to publish, reference or delete one blob (db.transaction's
    locks): remove_unreferenced's check-and-delete and a publish of the same blob never interleave
    on PostgreSQL, where writers of different resources run side by side."""
    return f"blob:{sha}"


def is_digest(sha: object) -> TypeGuard[str]:
    return isinstance(sha, str) and bool(_SHA.match(sha))


def reader_of(body: Any) -> BinaryIO | None:
    """A binary request body as a readable file: the server hands large bodies over as a temp
    file, the local backend as the caller's file, tests as bytes. None for anything else."""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(body))
    if hasattr(body, "read"):
        return body
    return None


class Readable(Protocol):
    """Anything read in chunks: a binary file, a tar member (formats/tar_stream.Record)."""

    def read(self, size: int = -1, /) -> bytes: ...


def chunks_of(reader: Readable | Iterable[bytes]) -> Iterator[bytes]:
    return iter(lambda: reader.read(CHUNK), b"") if hasattr(reader, "read") else iter(reader)


@dataclass
class Staged:
    """Bytes hashed into a local temp file, not yet in the store (BlobStore.publish puts them there)."""
    sha256: str
    size: int
    tmp: Path

    def open(self) -> BinaryIO:
        return open(self.tmp, "rb")

    def discard(self) -> None:
        self.tmp.unlink(missing_ok=True)


class Stage:
    """A private temp folder of one request (BlobStore.staging)."""

    def __init__(self, folder: Path):
        self.folder = folder

    def put(self, reader: Readable | Iterable[bytes], max_bytes: int | None = None) -> Staged:
        """Write a stream (a binary file or an iterable of bytes) to a temp file, hashing it.
        More than max_bytes -> ApiError payload_too_large (the temp file is removed)."""
        digest, size = hashlib.sha256(), 0
        fd, name = tempfile.mkstemp(prefix="blob-", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as f:
                for chunk in chunks_of(reader):
                    size += len(chunk)
                    if max_bytes is not None and size > max_bytes:
                        raise ApiError("payload_too_large", f"The content is over {max_bytes} bytes; send less.")
                    digest.update(chunk)
                    f.write(chunk)
        except BaseException:
            os.unlink(name)
            raise
        return Staged(digest.hexdigest(), size, Path(name))

    def put_bytes(self, data: bytes) -> Staged:
        return self.put([data])


class BlobStore:
    """The interface; subclasses say where published blobs live (the _-prefixed methods)."""

    def __init__(self, ws: Workspace, scratch: Path) -> None:
        self.ws = ws
        self.scratch = Path(scratch)   # local folder: tmp/ holds the stage folders

    # ---------------------------------------------------------------- where blobs live
    def publish(self, staged: Staged) -> None:
        """Put a staged blob into the store (a no-op when it is there). Call inside the write
        transaction that records the reference. Idempotent."""
        raise NotImplementedError

    def open(self, sha: str) -> BinaryIO:
        """A binary file reading the blob in bounded memory; FileNotFoundError when absent."""
        raise NotImplementedError

    def exists(self, sha: str) -> bool:
        raise NotImplementedError

    def _delete(self, sha: str) -> bool:
        """Delete one blob (inside the caller's write transaction); True when one was there."""
        raise NotImplementedError

    def _digests_older_than(self, before: float) -> Iterable[str]:
        """Stored blobs written before `before` (seconds since the epoch, the filesystem's frame)."""
        raise NotImplementedError

    def digests(self) -> Iterator[str]:
        """Every stored blob (for copying a workspace)."""
        return iter(self._digests_older_than(float("inf")))

    # ---------------------------------------------------------------- shared by every store
    def put(self, reader: Readable | Iterable[bytes], max_bytes: int | None = None) -> tuple[str, int]:
        """Store a stream as a blob at once; call inside the transaction recording its reference."""
        with self.staging() as stage:
            staged = stage.put(reader, max_bytes)
            self.publish(staged)
        return staged.sha256, staged.size

    def remove_unreferenced(self, shas: Iterable[str | None]) -> int:
        """Delete those of shas (None and non-digests skipped) no table names any more (engine/store/blob_references.py). Answers how many.
        Runs in its own write transaction, after the change that dropped the references committed."""
        from workspacectl.engine.db import transaction
        from workspacectl.engine.store.blob_references import is_referenced

        shas = sorted({s for s in shas if is_digest(s)})
        if not shas:
            return 0
        removed = 0
        conn = self.ws.conn()
        with transaction(conn, locks=[blob_lock(sha) for sha in shas]):
            for sha in shas:
                if not is_referenced(conn, sha) and self._delete(sha):
                    removed += 1
        return removed

    def collect_orphans(self, before: float) -> int:
        """Delete blobs no row names that were written before `before` (a filesystem timestamp).

        A process killed inside a commit can leave blobs no row names, and nothing else ever
        removes them. The age bound keeps any blob a request may still be about to record; each
        delete re-checks the references under the write lock, as remove_unreferenced does, so a
        publisher reusing an old blob (publish() keeps the one there) never loses it."""
        from workspacectl.engine.store.blob_references import referenced_digests

        held = referenced_digests(self.ws.conn())
        candidates = [sha for sha in self._digests_older_than(before) if is_digest(sha) and sha not in held]
        removed = 0
        for i in range(0, len(candidates), ORPHAN_BATCH):
            removed += self.remove_unreferenced(candidates[i:i + ORPHAN_BATCH])
        return removed

    @contextmanager
    def staging(self) -> Iterator[Stage]:
        """A private temp folder under tmp/, removed on exit with anything not published. It is
        flock-ed while in use, so a folder whose lock is free was left by a killed process and
        remove_abandoned_stages() may take it at once, even while other processes stage files."""
        root = self.scratch / "tmp"
        root.mkdir(parents=True, exist_ok=True)
        folder, fd = _locked_stage_folder(root)
        try:
            yield Stage(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            if fd is not None:
                os.close(fd)

    def remove_abandoned_stages(self) -> int | None:
        """Remove the stage folders no live process holds (their request was killed); answers how
        many, or None where folders cannot be locked (housekeeping's age rule then applies)."""
        removed = 0
        try:
            folders = [p for p in (self.scratch / "tmp").iterdir() if p.name.startswith("stage-") and p.is_dir()]
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
