"""Blob references SQL: does any row still hold a blob's sha256?

Every table that names a blob must be listed in REFERENCES, or engine/blobs.remove_unreferenced
may delete a blob it still needs. Each query takes :sha and answers a row when it is held.
"""
from __future__ import annotations

import sqlite3

REFERENCES = [
    "SELECT 1 FROM project_files WHERE sha256 = :sha LIMIT 1",
    # Skills (m010): a version names its bundle and lists its files in a JSON manifest; a
    # substring match on the 64-hex digest is conservative whatever the manifest's shape.
    "SELECT 1 FROM skill_versions WHERE sha256 = :sha OR instr(manifest, :sha) > 0 LIMIT 1",
    "SELECT 1 FROM skill_uploads WHERE blob_sha256 = :sha LIMIT 1",
]


def is_referenced(conn, sha: str) -> bool:
    for sql in REFERENCES:
        try:
            if conn.execute(sql, {"sha": sha}).fetchone():
                return True
        except sqlite3.OperationalError as e:
            if "no such table" not in str(e):  # a table of a later migration not applied yet
                raise
    return False
