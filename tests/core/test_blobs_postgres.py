"""PgBlobStore (engine/blobs/postgres.py) on a real PostgreSQL database of its own: chunked,
content-addressed, written in the caller's transaction (a rollback leaves no blob and no chunk),
read back in order, deleted with its chunks. The PostgreSQL workspace door runs the same store
under every project-files and skills test; this file checks the store's own rules directly."""
from __future__ import annotations

import hashlib
import os
import uuid

import pytest

from tests.conftest import postgres_admin_url
from workspacectl.engine.blobs import CHUNK, is_digest
from workspacectl.engine.migrations import m016_blobs

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'workspacectl[postgres]')")


@pytest.fixture(scope="module")
def pg_url():
    admin_url = postgres_admin_url()
    admin = psycopg.connect(admin_url, autocommit=True, connect_timeout=5)
    name = f"h11b_blobs_{uuid.uuid4().hex[:12]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    url = admin_url.rsplit("/", 1)[0] + "/" + name
    try:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute(m016_blobs.POSTGRES_SQL)
        yield url
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


class _Session:
    """What PgBlobStore asks of its workspace: a connection (here psycopg's own, as the workspace
    wrapper hands it over) and the local folder staging happens in."""

    def __init__(self, url, folder):
        self._conn = psycopg.connect(url, autocommit=True)
        self.blobs = folder

    def conn(self):
        return self._conn


@pytest.fixture
def store(pg_url, tmp_path):
    from workspacectl.engine.blobs.postgres import PgBlobStore

    ws = _Session(pg_url, tmp_path / "blobs")
    ws.conn().execute("TRUNCATE blob CASCADE")
    yield PgBlobStore(ws, ws.blobs)
    ws.conn().close()


def _counts(store):
    from workspacectl.engine.store.blob_chunks import counts

    return counts(store.ws.conn())


def _stage_and_publish(store, data: bytes):
    with store.staging() as stage:
        staged = stage.put(iter([data[i:i + 100_000] for i in range(0, len(data), 100_000)] or [b""]))
        with store.ws.conn().transaction():
            store.publish(staged)
    return staged


def test_a_blob_is_stored_in_chunks_and_read_back_whole(store):
    data = os.urandom(3 * CHUNK + 12345)
    staged = _stage_and_publish(store, data)
    assert staged.sha256 == hashlib.sha256(data).hexdigest() and staged.size == len(data)
    assert _counts(store) == (1, 4, len(data))
    assert store.exists(staged.sha256)
    with store.open(staged.sha256) as fh:
        pieces = iter(lambda: fh.read(70_000), b"")
        back = b"".join(pieces)
    assert back == data


def test_publish_rolled_back_with_its_transaction_leaves_nothing(store):
    data = os.urandom(CHUNK + 1)
    with store.staging() as stage:
        staged = stage.put_bytes(data)
        with pytest.raises(RuntimeError):
            with store.ws.conn().transaction():
                store.publish(staged)
                assert _counts(store) == (1, 2, len(data))     # visible inside the transaction
                raise RuntimeError("the recording transaction fails")
    assert _counts(store) == (0, 0, 0)
    assert not store.exists(staged.sha256)
    with pytest.raises(FileNotFoundError):
        store.open(staged.sha256)


def test_the_same_bytes_twice_are_one_blob(store):
    data = b"same bytes " * 50_000
    a, b = _stage_and_publish(store, data), _stage_and_publish(store, data)
    assert a.sha256 == b.sha256
    assert _counts(store) == (1, 1, len(data))


def test_an_empty_blob_reads_back_empty(store):
    staged = _stage_and_publish(store, b"")
    assert _counts(store) == (1, 1, 0)
    with store.open(staged.sha256) as fh:
        assert fh.read() == b""


def test_delete_takes_the_chunks_and_listing_by_age(store):
    import time

    keep, drop = _stage_and_publish(store, b"keep" * 1000), _stage_and_publish(store, os.urandom(2 * CHUNK))
    assert sorted(store.digests()) == sorted([keep.sha256, drop.sha256])
    assert list(store._digests_older_than(time.time() - 3600)) == []
    with store.ws.conn().transaction():
        assert store._delete(drop.sha256) is True
        assert store._delete(drop.sha256) is False
    assert _counts(store) == (1, 1, 4000)
    assert not store.exists(drop.sha256) and store.exists(keep.sha256)


def test_not_a_digest_is_absent(store):
    assert not store.exists("../../etc/passwd") and not is_digest("ABC")
    with pytest.raises(FileNotFoundError):
        store.open("z" * 64)
