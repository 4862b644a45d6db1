"""Identity rows as the API answers them: a member, an API key or session (never its hash)."""
from __future__ import annotations

import json
import sqlite3


def member_json(row: sqlite3.Row) -> dict:
    return {"id": row["id"], "name": row["name"], "email": row["email"], "role": row["role"],
            "createdAt": row["created_at"]}


def secret_json(row: sqlite3.Row) -> dict:
    return {"id": row["id"], "kind": row["kind"], "name": row["name"], "scopes": json.loads(row["scopes"]),
            "memberId": row["member_id"], "createdAt": row["created_at"], "expiresAt": row["expires_at"],
            "revokedAt": row["revoked_at"], "credentials": key_credentials(row)}


def key_credentials(row: sqlite3.Row) -> list[str] | None:
    """The credential ids a platform key is limited to (engine/vault/key_limits.py), None when not limited."""
    text = row["credential_ids"]
    return list(json.loads(text)) if text is not None else None
