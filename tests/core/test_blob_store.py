"""Where blobs are kept, through every door (the postgres door keeps them as `blob` and
`blob_chunk` rows, engine/blobs/postgres.py; the others as files under blobs/): content-addressed,
one blob for the same bytes, chunked past 1 MiB, collected once no file names it."""
from __future__ import annotations

import hashlib
import os

from tests.projects.test_project_files import _blob_rows, download, new_project, post_bundle, tgz


def _stored(backend) -> set[str]:
    """Digests of the stored blobs, whichever store holds them."""
    if backend.door == "postgres":
        return {r[0] for r in _blob_rows(backend)}
    return {p.parent.name + p.name for p in (backend.workspace / "blobs" / "sha256").glob("*/*")}


def test_blobs_are_stored_once_and_collected_when_no_file_names_them(backend):
    pid = new_project(backend)
    before = _stored(backend)
    big = os.urandom(1_200_000)           # more than one 1 MiB chunk where chunks are used
    post_bundle(backend, pid, tgz({"a.txt": b"same", "b.txt": b"same", "big.bin": big}))
    added = _stored(backend) - before
    assert added == {hashlib.sha256(b"same").hexdigest(), hashlib.sha256(big).hexdigest()}
    if backend.door == "postgres":
        assert {sha: n for sha, _size, n in _blob_rows(backend) if sha in added} == \
            {hashlib.sha256(b"same").hexdigest(): 1, hashlib.sha256(big).hexdigest(): 2}
    assert download(backend, pid)["big.bin"] == big
    backend.ok("DELETE", f"/v1/projects/{pid}/files", query={"path": "big.bin"})
    assert _stored(backend) - before == {hashlib.sha256(b"same").hexdigest()}
    backend.ok("DELETE", f"/v1/projects/{pid}/files", query={"path": "a.txt"})
    assert hashlib.sha256(b"same").hexdigest() in _stored(backend)    # b.txt still names it
