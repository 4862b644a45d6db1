"""POST /v1/admin/rotate-key (owner session): re-seal every secret under a new workspace key.

Order (engine/crypto.py explains why no failure loses data): the new key is stored next to the
old ones; one transaction re-seals every credential blob and every OAuth client secret and
records the new key as current; only then, if a scan finds nothing sealed under an old key, the
old keys are dropped. Answers counts, never key material.
"""
from __future__ import annotations

from workspacectl.engine import crypto
from workspacectl.engine.db import transaction
from workspacectl.engine.registry import Ctx, route
from workspacectl.engine.store import vault as store
from workspacectl.errors import ApiError

SWEEPS = 3


def _fingerprints(conn) -> set[bytes]:
    fps = set()
    for r in store.sealed_credentials(conn):
        fps.add(crypto.blob_fingerprint(r["secret_blob"]))
    for r in store.sealed_oauth_clients(conn):
        fps.add(crypto.blob_fingerprint(r["oauth_client_secret"]))
    fps.discard(None)
    return fps


def _reseal_all(conn, rotation: crypto.Rotation) -> tuple[int, int]:
    creds = clients = 0
    with transaction(conn):
        for r in store.sealed_credentials(conn):
            new = rotation.reseal(r["id"], r["secret_blob"])
            if new is not None:
                store.replace_credential_blob(conn, r["id"], new)
                creds += 1
        for r in store.sealed_oauth_clients(conn):
            new = rotation.reseal(f"oauth-client:{r['service']}", r["oauth_client_secret"])
            if new is not None:
                store.replace_oauth_client_blob(conn, r["service"], new)
                clients += 1
        rotation.make_current()
    return creds, clients


def rotate_workspace_key(ws) -> dict:
    conn = ws.conn()
    rotation = crypto.begin_rotation(ws, _fingerprints(conn))
    creds, clients = _reseal_all(conn, rotation)
    # A blob sealed by another process just before our commit would still carry an old key:
    # sweep again until none does; old keys are dropped only then.
    for _ in range(SWEEPS):
        leftover = _fingerprints(conn) - {rotation.target.fp}
        if not leftover:
            break
        c, k = _reseal_all(conn, rotation)
        creds, clients = creds + c, clients + k
    leftover = _fingerprints(conn) - {rotation.target.fp}
    retired = rotation.retire_old_keys(leftover)
    return {"credentials": creds, "oauthClients": clients, "keySource": rotation.source, "retiredKeys": retired}


@route("POST", "/v1/admin/rotate-key")
def rotate_key(ctx: Ctx) -> dict:
    if ctx.caller.role != "owner":
        raise ApiError("forbidden", "Only a workspace owner may rotate the workspace key.")
    return rotate_workspace_key(ctx.ws)
