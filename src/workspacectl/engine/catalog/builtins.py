"""Built-in data the package ships (the catalog): loaded into a workspace once per version."""
from __future__ import annotations

import sqlite3


def ensure_loaded(conn: sqlite3.Connection) -> None:
    try:
        from workspacectl.engine.store.catalog import ensure_builtin_catalog
    except ImportError:  # the catalog store is not there yet
        return
    ensure_builtin_catalog(conn)
