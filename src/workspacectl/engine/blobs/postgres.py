"""PgBlobStore: a PostgreSQL workspace's blobs in PostgreSQL, beside the rows that name them.

A blob is a `blob` row and its bytes in 1 MiB `blob_chunk` rows (migration m016_blobs; SQL in
engine/store/blob_chunks.py). Staging is local, as for every store (engine/blobs/__init__.py): the bytes are
hashed and checked in a temp file, then publish() copies them in by binary COPY inside the write
transaction that records the project file, skill version or upload naming them: the rows and
their bytes commit together or not at all, and a killed replica leaves nothing half-visible.
Reads fetch one chunk at a time, so a 1 GiB bundle moves in and out in bounded memory.
"""
from __future__ import annotations

import io
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

from workspacectl.engine.blobs import CHUNK, BlobStore, Staged, blob_lock, is_digest
from workspacectl.engine.store import blob_chunks as sql

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer


class PgBlobStore(BlobStore):
    def __repr__(self) -> str:
        return f"PgBlobStore({self.ws!r})"

    def publish(self, staged: Staged) -> None:
        from workspacectl.engine.db import lock_resources

        conn = self.ws.conn()
        lock_resources(conn, blob_lock(staged.sha256))   # not beside remove_unreferenced of the same blob
        chunks = max(1, -(-staged.size // CHUNK))
        if not sql.insert_blob(conn, staged.sha256, staged.size, chunks, time.time()):
            return                                      # already stored: the row keeps its chunks
        with staged.open() as fh:
            written = sql.copy_chunks(conn, staged.sha256, _pieces(fh))
        if written != chunks:
            raise OSError(f"staged blob {staged.sha256[:12]} changed while it was stored")

    def open(self, sha: str) -> BinaryIO:
        info = sql.blob_info(self.ws.conn(), sha) if is_digest(sha) else None
        if info is None:
            raise FileNotFoundError(sha)
        return io.BufferedReader(_ChunkReader(self, sha, info[1]), buffer_size=CHUNK)

    def exists(self, sha: str) -> bool:
        return is_digest(sha) and sql.blob_info(self.ws.conn(), sha) is not None

    def _delete(self, sha: str) -> bool:
        return sql.delete_blob(self.ws.conn(), sha)

    def _digests_older_than(self, before: float) -> Iterator[str]:
        return sql.digests_older_than(self.ws.conn(), before)


def _pieces(fh: BinaryIO) -> Iterator[bytes]:
    first = True
    while True:
        piece = fh.read(CHUNK)
        if not piece and not first:
            return
        yield piece          # an empty blob is one empty chunk
        if not piece:
            return
        first = False


class _ChunkReader(io.RawIOBase):
    """A blob read chunk by chunk, each fetched when the previous one is used up. A chunk that
    went missing meanwhile (the blob was collected) is an OSError, as a vanished file would be."""

    def __init__(self, store: PgBlobStore, sha: str, chunks: int):
        self._store, self._sha, self._chunks = store, sha, chunks
        self._seq, self._buf, self._pos = 0, b"", 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: WriteableBuffer) -> int:
        if self._pos >= len(self._buf):
            if self._seq >= self._chunks:
                return 0
            data = sql.chunk(self._store.ws.conn(), self._sha, self._seq)
            if data is None:
                raise FileNotFoundError(f"blob {self._sha[:12]} was removed while it was read")
            self._buf, self._pos, self._seq = data, 0, self._seq + 1
            if not data:
                return 0
        view = memoryview(b)
        n = min(len(view), len(self._buf) - self._pos)
        view[:n] = self._buf[self._pos:self._pos + n]
        self._pos += n
        return n
