"""The catalog the package ships (catalog_data/*.toml), loaded into a workspace once per version:
a hash of the data files (and of the loader's version) in settings says whether it is current.
Opened by every command (Workspace.open): what only a load needs is imported when it loads."""
from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from workspacectl.engine.db import IntegrityError, savepoint, transaction
from workspacectl.engine.store import catalog as store
from workspacectl.engine.store.identity import get_setting, set_setting
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    import logging

    from workspacectl.engine.db.conn import Conn

BUILTIN_HASH_SETTING = "catalog.builtin_hash"
# Bump when the loader's output changes for the same data files (markdown layout, defaults).
LOADER_VERSION = "2"


def _log() -> logging.Logger:
    """The catalog's logger, for a skipped or kept service (opening a workspace does not import logging)."""
    import logging

    return logging.getLogger("wsctl.catalog")


def ensure_loaded(conn: Conn) -> None:
    ensure_builtin_catalog(conn)


def default_data_dir() -> Path:
    return Path(__file__).resolve().parent.parent.parent / "catalog_data"


def builtin_files(data_dir: Path) -> list[Path]:
    return sorted(p for p in Path(data_dir).glob("*.toml") if p.is_file())


def builtin_hash(files: list[Path]) -> str:
    h = hashlib.sha256(f"loader:{LOADER_VERSION}\n".encode())
    for p in files:
        data = p.read_bytes()
        h.update(f"{p.name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def load_builtin_records(data_dir: Path, strict: bool = False) -> tuple[list[dict], list[dict]]:
    """(service records, generic trigger providers) from the data files. Files whose name starts
    with '_' hold generic providers. A bad file is skipped with a log line, or raised if strict."""
    from workspacectl.engine.catalog.importer import parse_generic_toml, parse_toml

    records, generic = [], []
    for p in builtin_files(data_dir):
        try:
            text = p.read_text(encoding="utf-8")
            if p.name.startswith("_"):
                generic.extend(parse_generic_toml(text, p.name))
            else:
                records.append(parse_toml(text, p.name))
        except (ApiError, OSError, UnicodeDecodeError) as e:
            if strict:
                raise
            _log().warning("built-in catalog file %s skipped: %s", p.name, getattr(e, "message", e))
    return records, generic


def ensure_builtin_catalog(conn: Conn, data_dir: Path | None = None) -> bool:
    """Load the shipped catalog when its files changed since the last load (a hash in settings).

    Cheap when nothing changed: one hash of a few small files and one settings read. Never
    replaces a service an admin imported (source 'import'). Answers True when it loaded.
    """
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    files = builtin_files(data_dir)
    digest = builtin_hash(files)
    if get_setting(conn, BUILTIN_HASH_SETTING) == digest:
        return False
    from workspacectl.engine.catalog.services import delete_service, replace_service

    records, generic = load_builtin_records(data_dir)
    with transaction(conn):
        if get_setting(conn, BUILTIN_HASH_SETTING) == digest:  # another process loaded it meanwhile
            return False
        imported = store.service_names(conn, source="import")
        with_client = store.service_names(conn, with_oauth_client=True)
        shipped = set()
        for record in records:
            shipped.add(record["service"])
            if record["service"] in imported:
                continue
            # The package never ships client secrets, and an admin's OAuth client outlives reloads.
            record = {**record, "oauthClientSecret": None}
            if record["service"] in with_client:
                record["oauthClientId"] = None
            try:
                with savepoint(conn):
                    replace_service(conn, record, source="builtin")
            except (ApiError, sqlite3.IntegrityError, IntegrityError) as e:
                _log().warning("built-in service %s skipped: %s", record["service"], getattr(e, "message", e))
        for service in sorted(store.service_names(conn, source="builtin") - shipped):
            try:
                with savepoint(conn):
                    delete_service(conn, service)
            except ApiError:  # credentials still use it: keep it
                _log().info("retired built-in service %s kept: credentials or connections still use it", service)
        if generic or files:
            try:
                store.replace_generic_triggers(conn, generic)
            except ApiError as e:
                _log().warning("generic trigger providers skipped: %s", e.message)
        set_setting(conn, BUILTIN_HASH_SETTING, digest)
    return True
