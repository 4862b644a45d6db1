"""SQL for the catalog's change history (m012) and the credentials a forced re-import resets."""
from __future__ import annotations

import json

from workspacectl.engine.db.conn import Conn, Row


def record_change(conn: Conn, *, at: str, member_id: str | None, service: str, action: str, changes: list[dict],
                  forced: bool = False, credentials_reset: int = 0) -> None:
    conn.execute("INSERT INTO catalog_changes (at, member_id, service, action, forced, credentials_reset, "
                 "changes_json) VALUES (?, ?, ?, ?, ?, ?, ?)",
                 (at, member_id, service, action, int(forced), credentials_reset, json.dumps(changes)))


def list_changes(conn: Conn, service: str | None, before: int | None, limit: int) -> list[Row]:
    """Newest first; `before` is the id of the last row of the previous page."""
    sql = "SELECT * FROM catalog_changes WHERE id < ?"
    args: list = [before if before is not None else 2 ** 62]
    if service is not None:
        sql += " AND service = ?"
        args.append(service)
    return conn.execute(sql + " ORDER BY id DESC LIMIT ?", (*args, limit)).fetchall()


def credential_ids(conn: Conn, service: str) -> list[str]:
    return [r[0] for r in conn.execute("SELECT id FROM credentials WHERE service = ? ORDER BY id", (service,))]


def fail_pending_connections(conn: Conn, service: str, error: str, now: str) -> int:
    """Pending connections of a service whose provider moved: their code must not go to the new one."""
    return conn.execute("UPDATE connections SET status = 'failed', error = ?, finished_at = ?, pkce_sealed = NULL "
                        "WHERE service = ? AND status = 'pending'", (error, now, service)).rowcount
