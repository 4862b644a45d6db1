"""Blob references SQL: does any row still hold a blob's sha256?

Every table that names a blob must be listed in REFERENCES, or BlobStore.remove_unreferenced
and the orphan sweep may delete a blob it still needs. A reference is a column holding the digest,
or (kind "text") a JSON text that contains digests anywhere in it.
"""
from __future__ import annotations

import re

from workspacectl.engine.db import OPERATIONAL_ERRORS
from workspacectl.engine.db.conn import Conn

# (table, column, kind)
REFERENCES = [
    ("project_files", "sha256", "column"),
    # Skills (m010): a version names its bundle and lists its files in a JSON manifest; a
    # substring match on the 64-hex digest is conservative whatever the manifest's shape.
    ("skill_versions", "sha256", "column"),
    ("skill_versions", "manifest", "text"),
    ("skill_uploads", "blob_sha256", "column"),
]
_DIGEST = re.compile(r"[0-9a-f]{64}")


def _missing_table(e: Exception) -> bool:
    return "no such table" in str(e)    # a table of a later migration not applied yet


def is_referenced(conn: Conn, sha: str) -> bool:
    for table, column, kind in REFERENCES:
        test = f"{column} = :sha" if kind == "column" else f"{column} LIKE '%' || :sha || '%'"
        try:
            if conn.execute(f"SELECT 1 FROM {table} WHERE {test} LIMIT 1", {"sha": sha}).fetchone():
                return True
        except OPERATIONAL_ERRORS as e:
            if not _missing_table(e):
                raise
    return False


def referenced_digests(conn: Conn) -> set[str]:
    """Every digest any row names now: one read of each referencing column, for a sweep that
    checks thousands of blobs (each one left is checked again with is_referenced under the lock)."""
    found: set[str] = set()
    for table, column, kind in REFERENCES:
        try:
            rows = conn.execute(f"SELECT {column} FROM {table} WHERE {column} IS NOT NULL")
            for (value,) in rows:
                found.update(_DIGEST.findall(value) if kind == "text" else (value,))
        except OPERATIONAL_ERRORS as e:
            if not _missing_table(e):
                raise
    return found
