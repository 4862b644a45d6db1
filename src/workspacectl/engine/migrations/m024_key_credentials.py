"""m024_key_credentials: a platform key may be limited to named credentials (issue 25).

`secrets.credential_ids` holds the JSON list of the credential ids the key reaches, or NULL for a
key that reaches every credential its creator can use (every key made before, and every session).
engine/vault/key_limits.py enforces it.
"""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn


def up(conn: Conn) -> None:
    execute_script(conn, "ALTER TABLE secrets ADD COLUMN credential_ids TEXT;")


POSTGRES_SQL = """
ALTER TABLE secrets ADD COLUMN credential_ids TEXT COLLATE "C";
"""
