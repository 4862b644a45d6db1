"""m014_credential_names: a credential's name becomes its own handle (issue 12).

Before, `name` held the integration's display name ("Stripe", "Stripe (acme)"), so two Stripe
accounts read alike. Now it is a short handle such as `stripe-live`, unique in the workspace
without regard to case (engine/vault/credential_names.py has the rules). Existing credentials
are renamed after their service in creation order: `stripe`, `stripe-2`, ... A pending
connection may carry the name the credential it makes will get.
"""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn


def up(conn: Conn) -> None:
    from workspacectl.engine.vault.credential_names import name_base

    rows = conn.execute("SELECT id, service FROM credentials ORDER BY id").fetchall()
    taken: set[str] = set()
    for cred_id, service in rows:
        base = name_base(service)
        name, n = base, 1
        while name.lower() in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name.lower())
        conn.execute("UPDATE credentials SET name = ? WHERE id = ?", (name, cred_id))
    execute_script(conn, """
    CREATE UNIQUE INDEX credentials_name ON credentials(lower(name));
    ALTER TABLE connections ADD COLUMN name TEXT;
    """)


# The same change for a PostgreSQL workspace, as one script: names after the service in creation
# order (services are lower kebab case already, so the service is the base).
POSTGRES_SQL = """
WITH ranked AS (
    SELECT id, left(service, 60) AS base, row_number() OVER (PARTITION BY left(service, 60) ORDER BY id) AS n
    FROM credentials
)
UPDATE credentials c SET name = CASE WHEN r.n = 1 THEN r.base ELSE r.base || '-' || r.n END
FROM ranked r WHERE c.id = r.id;
CREATE UNIQUE INDEX credentials_name ON credentials(lower(name));
ALTER TABLE connections ADD COLUMN name TEXT COLLATE "C";
"""
