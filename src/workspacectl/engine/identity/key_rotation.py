"""POST /v1/admin/rotate-key (owner session): re-seal every secret under a new workspace key.

Order (engine/crypto/__init__.py explains why no failure loses data): the new key is stored next to the
old ones; one transaction re-seals every sealed column of the workspace (credential secrets,
OAuth client secrets, connection links and PKCE verifiers, webhook signing secrets:
store.vault.SEALED_COLUMNS) and
records the new key as current; only then, if a scan finds nothing sealed under an old key, the
old keys are dropped. Answers counts, never key material.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from workspacectl.engine import crypto
from workspacectl.engine.db import transaction
from workspacectl.engine.registry import Ctx, route
from workspacectl.engine.schema_blocks import INT, obj, text
from workspacectl.engine.scopes import SESSION
from workspacectl.engine.store import vault as store
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn
    from workspacectl.engine.workspaces.folder import Workspace

SWEEPS = 3

# The AAD each sealed column was sealed with, from its row key (must match the sealing code).
AAD = {
    ("credentials", "secret_blob"): lambda key: key,
    ("integrations", "oauth_client_secret"): lambda key: f"oauth-client:{key}",
    ("connections", "link_sealed"): lambda key: f"connection-link:{key}",
    ("connections", "pkce_sealed"): lambda key: f"connection-pkce:{key}",
    ("webhooks", "secret_sealed"): lambda key: f"webhook:{key}",   # engine/events/delivery.secret_aad
}
COUNT_NAME = {"credentials": "credentials", "integrations": "oauthClients", "connections": "connections",
              "webhooks": "webhooks"}


def _fingerprints(conn: Conn) -> set[bytes]:
    fps = set()
    for table, key_col, blob_col in store.SEALED_COLUMNS:
        for _key, blob in store.sealed_values(conn, table, key_col, blob_col):
            fp = crypto.blob_fingerprint(blob)
            if fp is not None:
                fps.add(fp)
    return fps


def _reseal_all(conn: Conn, rotation: crypto.Rotation) -> dict[str, int]:
    counts = {name: 0 for name in COUNT_NAME.values()}
    with transaction(conn):
        for table, key_col, blob_col in store.SEALED_COLUMNS:
            aad = AAD[(table, blob_col)]
            for key, blob in store.sealed_values(conn, table, key_col, blob_col):
                new = rotation.reseal(aad(key), blob)
                if new is not None:
                    store.replace_sealed(conn, table, key_col, blob_col, key, new)
                    counts[COUNT_NAME[table]] += 1
        rotation.make_current()
    return counts


def rotate_workspace_key(ws: Workspace) -> dict:
    conn = ws.conn()
    rotation = crypto.begin_rotation(ws, _fingerprints(conn))
    counts = _reseal_all(conn, rotation)
    # A blob sealed by another process just before our commit would still carry an old key:
    # sweep again until none does; old keys are dropped only then.
    for _ in range(SWEEPS):
        if not _fingerprints(conn) - {rotation.target.fp}:
            break
        for name, n in _reseal_all(conn, rotation).items():
            counts[name] += n
    leftover = _fingerprints(conn) - {rotation.target.fp}
    retired = rotation.retire_old_keys(leftover)
    return {**counts, "keySource": rotation.source, "retiredKeys": retired}


@route("POST", "/v1/admin/rotate-key", scope=SESSION,
       responses={200: obj({
           "credentials": INT, "oauthClients": INT, "connections": INT, "webhooks": INT,
           "keySource": text(enum=["env", "keyring", "file"]), "retiredKeys": INT}, required="all")},
       summary="Rotate the workspace key: reseal every secret under a new key (owner session).")
def rotate_key(ctx: Ctx) -> dict:
    if ctx.caller.role != "owner":
        raise ApiError("forbidden", "Only a workspace owner may rotate the workspace key; ask one "
                                    "(`wsctl members list` shows who).")
    return rotate_workspace_key(ctx.ws)
