"""Numbered migrations, applied once each on open and recorded in the `migrations` table.

A workspace made by an old version opens in a new one: never edit a released migration,
add the next number instead.

Each migration module has `up(conn)` (SQLite) and `POSTGRES_SQL` (the same schema for a
PostgreSQL workspace, run as one script). On PostgreSQL the whole run holds a session advisory
lock, so replicas starting together apply each migration once and wait for it.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from workspacectl import clock
from workspacectl.engine.db import transaction

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn
    from workspacectl.engine.db.postgres import PgConnection


def _lazy(name: str) -> Callable[[Conn], None]:
    """up(conn) of migration `name`, its module imported only when it runs: a workspace that has
    them all (every open after its first) imports none of them, which keeps local start-up short."""
    def up(conn: Conn) -> None:
        importlib.import_module(f"{__name__}.{name}").up(conn)

    up.__qualname__ = f"{name}.up"
    return up


MIGRATIONS = [(name, _lazy(name)) for name in (
    "m001_identity",
    "m002_catalog",
    "m003_catalog_search",
    "m004_vault",
    "m005_connections",
    "m006_projects",
    "m007_workflows",
    "m008_project_files",
    "m009_memory",
    "m010_skills",
    "m011_memory_held",
    "m012_catalog_history",
    "m013_leases",
    "m014_credential_names",
    "m015_operation_vectors",
    "m016_blobs",
    "m019_search_postings",
    "m021_model_vectors",
    "m022_vector_sets",
    "m024_key_credentials",
    "m027_events",
    "m028_proxy_log",
    "m029_token_issue",
    "m031_auth_notify",
)]


def apply_migrations(conn: Conn) -> list[str]:
    if getattr(conn, "dialect", "sqlite") == "postgres":
        return _apply_postgres(conn)
    return _run(conn, "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)",
                step=lambda name, up: up, recheck=True)


def _run(conn: Conn, create_table: str, step: Callable[[str, Callable], Callable], recheck: bool) -> list[str]:
    """Applies each migration not recorded yet, one transaction each, and records it.

    The dialects differ only in what is passed: the table's DDL, `step(name, up)` (the callable
    that applies a migration to conn, resolved before its transaction opens), and whether to
    re-check inside the write lock (SQLite: another process may have applied it meanwhile;
    PostgreSQL holds the advisory lock for the whole run instead)."""
    conn.execute(create_table)
    done = {r[0] for r in conn.execute("SELECT name FROM migrations")}
    applied = []
    for name, up in MIGRATIONS:
        if name in done:
            continue
        apply = step(name, up)
        with transaction(conn):
            if recheck and conn.execute("SELECT 1 FROM migrations WHERE name = ?", (name,)).fetchone():
                continue
            apply(conn)
            conn.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (name, clock.iso(clock.now())))
        applied.append(name)
    return applied


def _postgres_step(name: str, up: Callable) -> Callable:
    sql = getattr(importlib.import_module(f"{__name__}.{name}"), "POSTGRES_SQL", None)
    if sql is None:
        raise RuntimeError(f"migration {name} has no POSTGRES_SQL")
    return lambda conn: conn.execute_script(sql)


def _apply_postgres(conn: Conn) -> list[str]:
    from workspacectl.engine.db.postgres import MIGRATION_LOCK

    if _pending_names(conn) == []:
        return []
    pg = cast("PgConnection", conn)   # apply_migrations sends only the PostgreSQL door's connection here
    pg.advisory_lock(MIGRATION_LOCK)
    try:
        return _run(conn, 'CREATE TABLE IF NOT EXISTS migrations (name TEXT COLLATE "C" PRIMARY KEY, '
                          'applied_at TEXT NOT NULL)', step=_postgres_step, recheck=False)
    finally:
        pg.advisory_unlock(MIGRATION_LOCK)


def _pending_names(conn: Conn) -> list[str] | None:
    """Migrations not applied yet (None when the table is not there): a replica opening an
    up-to-date database takes no lock."""
    if conn.execute("SELECT to_regclass('migrations')").fetchone()[0] is None:
        return None
    done = {r[0] for r in conn.execute("SELECT name FROM migrations")}
    return [name for name, _ in MIGRATIONS if name not in done]
