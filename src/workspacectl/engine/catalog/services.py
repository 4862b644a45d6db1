"""Putting a service in the catalog and taking it out, with the search index in step, and its
OAuth client (the secret sealed with engine.crypto, never stored in plaintext).

The statements are store/catalog.py's; each change here joins the caller's transaction, so a
service and its index entries change together or not at all.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from workspacectl.engine.db import transaction
from workspacectl.engine.store import catalog as store

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn
    from workspacectl.engine.workspaces.folder import Workspace
    from workspacectl.secret import Secret


def oauth_aad(service: str) -> str:
    return f"oauth-client:{service}"


def replace_service(conn: Conn, record: dict, source: str = "import", sealed_client_secret: bytes | None = None,
                    keep_client_secret: bool = True) -> bool:
    """Put a service (integration, operations, triggers) in place of any previous one and index
    its operations for search, in one transaction. Answers True when the service is new."""
    from workspacectl.engine.catalog import search

    with transaction(conn):
        created = store.put_service(conn, record, source, sealed_client_secret, keep_client_secret)
        search.reindex_service(conn, record["service"])
    return created


def delete_service(conn: Conn, service: str) -> bool:
    """Remove a service with its operations, triggers and index entries. False when there was
    none; 409 while credentials or pending connections use it."""
    from workspacectl.engine.catalog import search

    with transaction(conn):
        if not store.drop_service(conn, service):
            return False
        search.remove_service(conn, service)
    return True


def get_oauth_client(ws: Workspace, service: str) -> tuple[str | None, Secret | None]:
    """(client_id or None, Secret or None) of an oauth2 integration; the secret is unsealed here."""
    from workspacectl.secret import Secret

    row = store.get_oauth_client_row(ws.conn(), service)
    if row is None:
        return None, None
    secret = None
    if row["oauth_client_secret"] is not None:
        from workspacectl.engine import crypto

        secret = Secret(crypto.unseal(ws, oauth_aad(service), bytes(row["oauth_client_secret"])).decode())
    return row["oauth_client_id"], secret


def set_oauth_client(ws: Workspace, service: str, client_id: str, client_secret: str | None) -> None:
    """Store an OAuth client; the secret is sealed inside the same write transaction."""
    from workspacectl.engine import crypto

    conn = ws.conn()
    with transaction(conn):
        sealed = crypto.seal(ws, oauth_aad(service), client_secret.encode()) if client_secret is not None else None
        store.update_oauth_client(conn, service, client_id, sealed)
