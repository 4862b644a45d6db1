"""Which kind of workspace a location names: a folder (engine/workspaces/folder.py Workspace) or a
postgresql:// URL (engine/workspaces/postgres.py PgWorkspace, imported only for such a URL)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from workspacectl.engine.workspaces.folder import Workspace
from workspacectl.errors import ApiError
from workspacectl.formats.workspace_url import is_postgres_url

if TYPE_CHECKING:
    from pathlib import Path


def workspace_type(location: str | Path) -> type[Workspace]:
    """Workspace for a folder, PgWorkspace for a postgresql:// URL (a str: a Path loses the //)."""
    if is_postgres_url(location):
        try:
            from workspacectl.engine.workspaces.postgres import PgWorkspace
        except ImportError:
            raise ApiError("invalid_request", "A PostgreSQL workspace needs psycopg: "
                           "run `pip install 'workspacectl[postgres]'`.") from None

        return PgWorkspace
    return Workspace


def open_workspace(location: str | Path) -> Workspace:
    return workspace_type(location).open(location)
