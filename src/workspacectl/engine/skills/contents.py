"""Skill file contents in the workspace's blob store (engine/blobs/__init__.py, `ws.blob_store`).

Following that module's rule, bytes are staged before the write transaction and published
inside the transaction that records the version or upload naming them, so
remove_unreferenced never sees a blob whose reference is not yet committed.
engine/store/blob_references.py lists skill_versions (manifest) and skill_uploads as references.
"""
from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, BinaryIO

from workspacectl.engine.blobs import CHUNK  # noqa: F401  (read size of the skill wing)
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.blobs import Readable, Stage, Staged
    from workspacectl.engine.workspaces.folder import Workspace

_MISSING = ("A stored skill file is missing from the workspace's blob store; "
            "revert to another version or publish again.")


def staging(ws: Workspace) -> AbstractContextManager[Stage]:
    return ws.blob_store.staging()


def stage_stream(stage: Stage, chunks: Readable | Iterable[bytes], limit: int) -> Staged:
    try:
        return stage.put(chunks, limit)
    except ApiError as e:
        if e.code == "payload_too_large":
            raise ApiError("payload_too_large", f"The bundle is over {limit // (1024 * 1024)} MiB packed; "
                                                "trim assets and pack again.") from None
        raise


def publish_all(ws: Workspace, staged: dict[str, Staged]) -> None:
    for st in staged.values():
        ws.blob_store.publish(st)


def open_ref(ws: Workspace, staged: dict[str, Staged], sha: str) -> BinaryIO:
    """A file's content: its staged copy when `staged` holds it, else the stored blob."""
    if sha in staged:
        return staged[sha].open()
    try:
        return ws.blob_store.open(sha)
    except (OSError, ValueError):
        raise ApiError("not_found", _MISSING) from None


def require_stored(ws: Workspace, shas: Iterable[str]) -> None:
    """Before a stream starts (a missing blob could no longer become a clean error)."""
    for sha in shas:
        if not ws.blob_store.exists(sha):
            raise ApiError("not_found", _MISSING)
