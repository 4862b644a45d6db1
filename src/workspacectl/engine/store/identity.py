"""SQL for settings, members, login codes, secrets (sessions and keys) and web links."""
from __future__ import annotations

import json
from collections.abc import Iterable

from workspacectl import clock
from workspacectl.engine.db import INTEGRITY_ERRORS, Prepared
from workspacectl.engine.db.conn import Conn, Row
from workspacectl.engine.ids import new_id
from workspacectl.engine.store import fetch_named, name_clause


def set_setting(conn: Conn, key: str, value: str) -> None:
    conn.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                 (key, value))
    if key == "name":   # whoami's answer (find_secret_by_hash reads it)
        _auth_changed(conn)


def get_setting(conn: Conn, key: str) -> str | None:
    row = conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


# --- members -------------------------------------------------------------------------------

def count_members(conn: Conn) -> int:
    return conn.execute("SELECT count(*) FROM members").fetchone()[0]


def insert_member(conn: Conn, name: str, email: str, role: str) -> Row | None:
    """The new member's row, or None when the email (any case) is taken."""
    mid = new_id("um")
    try:
        conn.execute("INSERT INTO members (id, name, email, role, created_at) VALUES (?, ?, ?, ?, ?)",
                     (mid, name, email, role, clock.now_iso()))
    except INTEGRITY_ERRORS:
        return None
    return get_member(conn, mid)


def get_member(conn: Conn, member_id: str) -> Row | None:
    return conn.execute("SELECT * FROM members WHERE id = ?", (member_id,)).fetchone()


_MEMBER_AND_NAME = Prepared("SELECT m.*, (SELECT value FROM settings WHERE key = 'name') AS workspace_name "
                            "FROM members m WHERE m.id = ?")   # whoami: one statement, planned once


def get_member_and_workspace_name(conn: Conn, member_id: str) -> Row | None:
    """The member's row with the workspace's name (`workspace_name`) beside it, in one read."""
    return conn.execute(_MEMBER_AND_NAME, (member_id,)).fetchone()


def find_member(conn: Conn, ref: str) -> Row | None:
    """A member by id or by email."""
    if "@" in ref:
        return conn.execute("SELECT * FROM members WHERE email = ?", (ref,)).fetchone()
    return get_member(conn, ref)


def first_owner(conn: Conn) -> Row | None:
    return conn.execute("SELECT * FROM members WHERE role = 'owner' ORDER BY id LIMIT 1").fetchone()


def list_members(conn: Conn, after: str | None, limit: int, named: tuple[str, str] | None = None) -> list:
    clause, args = name_clause("name", named)
    return fetch_named(conn, f"SELECT * FROM members WHERE id > :after{clause} ORDER BY id LIMIT :limit",
                       {"after": after or "", "limit": limit, **args}, named)


# --- login codes ---------------------------------------------------------------------------

def insert_login_code(conn: Conn, code_hash: str, member_id: str, created_by: str | None, expires_at: str) -> None:
    conn.execute("INSERT INTO login_codes (code_hash, member_id, created_by, created_at, expires_at) "
                 "VALUES (?, ?, ?, ?, ?)", (code_hash, member_id, created_by, clock.now_iso(), expires_at))


def get_login_code(conn: Conn, code_hash: str) -> Row:
    return conn.execute("SELECT * FROM login_codes WHERE code_hash = ?", (code_hash,)).fetchone()


def use_login_code(conn: Conn, code_hash: str) -> bool:
    """Mark a code used; False when another request used it first."""
    cur = conn.execute("UPDATE login_codes SET used_at = ? WHERE code_hash = ? AND used_at IS NULL",
                       (clock.now_iso(), code_hash))
    return cur.rowcount == 1


# --- secrets: sessions, API keys, web sessions ---------------------------------------------

def insert_secret(conn: Conn, kind: str, member_id: str, secret_hash: str, name: str = "", scopes: Iterable[str] = (),
                  expires_at: str | None = None, credential_ids: list[str] | None = None) -> Row:
    """credential_ids: the credentials a platform key is limited to; None reaches every one."""
    sid = new_id("key" if kind in ("platform", "personal") else "ses")
    limit = json.dumps(list(credential_ids)) if credential_ids is not None else None
    conn.execute("INSERT INTO secrets (id, kind, member_id, name, scopes, secret_hash, created_at, expires_at, "
                 "credential_ids) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 (sid, kind, member_id, name, json.dumps(list(scopes)), secret_hash, clock.now_iso(), expires_at,
                  limit))
    return get_secret(conn, sid)


def get_secret(conn: Conn, secret_id: str) -> Row:
    return conn.execute("SELECT * FROM secrets WHERE id = ?", (secret_id,)).fetchone()


_FIND_SECRET = Prepared("SELECT s.*, m.role AS member_role, m.name AS member_name, m.email AS member_email, "
                        "m.created_at AS member_created_at, "
                        "(SELECT value FROM settings WHERE key = 'name') AS workspace_name "
                        "FROM secrets s JOIN members m ON m.id = s.member_id "
                        "WHERE s.secret_hash = ?")   # every request's session or key lookup (and whoami's answer)


def find_secret_by_hash(conn: Conn, secret_hash: str) -> Row:
    """The secret's row with its member's fields and the workspace's name (None when unknown). On
    PostgreSQL a known secret's row comes from the replica's cache when it may
    (engine/db/pg_auth_cache.py: a change is let go by every replica before it is answered)."""
    cache = getattr(conn, "auth_cache", None)
    if cache is None:
        return conn.execute(_FIND_SECRET, (secret_hash,)).fetchone()
    row = cache.get(secret_hash)
    if row is None:
        generation = cache.generation
        row = conn.execute(_FIND_SECRET, (secret_hash,)).fetchone()
        if row is not None:
            cache.put(secret_hash, row, generation)
    return row


def _auth_changed(conn: Conn) -> None:
    """After a change to what find_secret_by_hash reads: on PostgreSQL, once it is committed, wait
    until no replica's cache holds what it changed."""
    changed = getattr(conn, "auth_changed", None)
    if changed is not None:
        changed()


def list_keys(conn: Conn, member_id: str | None, after: str | None, limit: int, named: tuple[str, str] | None = None) -> list:
    clause, args = name_clause("name", named)
    sql = f"SELECT * FROM secrets WHERE kind IN ('platform', 'personal') AND revoked_at IS NULL AND id > :after{clause}"
    args.update({"after": after or "", "limit": limit})
    if member_id is not None:
        sql += " AND member_id = :member"
        args["member"] = member_id
    return fetch_named(conn, sql + " ORDER BY id LIMIT :limit", args, named)


def revoke_secret(conn: Conn, secret_id: str) -> bool:
    cur = conn.execute("UPDATE secrets SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                       (clock.now_iso(), secret_id))   # on PostgreSQL answered once every replica let it go
    return cur.rowcount == 1


# --- web sign-in links ---------------------------------------------------------------------

def insert_web_link(conn: Conn, token_hash: str, member_id: str, next_path: str, expires_at: str) -> None:
    conn.execute("INSERT INTO web_links (token_hash, member_id, next_path, created_at, expires_at) "
                 "VALUES (?, ?, ?, ?, ?)", (token_hash, member_id, next_path, clock.now_iso(), expires_at))


def get_web_link(conn: Conn, token_hash: str) -> Row:
    return conn.execute("SELECT * FROM web_links WHERE token_hash = ?", (token_hash,)).fetchone()


def use_web_link(conn: Conn, token_hash: str) -> bool:
    cur = conn.execute("UPDATE web_links SET used_at = ? WHERE token_hash = ? AND used_at IS NULL",
                       (clock.now_iso(), token_hash))
    return cur.rowcount == 1
