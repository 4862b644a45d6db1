"""Skill file contents in the workspace's content-addressed store (engine/blobs.py).

Following that module's rule, bytes are staged before the write transaction and published
(renamed into place) inside the transaction that records the version or upload naming them,
so engine/blobs.remove_unreferenced never sees a blob whose reference is not yet committed.
engine/store/blobs.py lists skill_versions (manifest) and skill_uploads as references.
"""
from __future__ import annotations

from workspacectl.engine import blobs
from workspacectl.errors import ApiError

CHUNK = blobs.CHUNK
staging = blobs.staging
stage = blobs.stage
stage_bytes = blobs.stage_bytes
_MISSING = ("A stored skill file is missing from the workspace's blobs/ folder; "
            "revert to another version or publish again.")


def stage_stream(folder, chunks, limit: int):
    try:
        return blobs.stage(folder, chunks, limit)
    except ApiError as e:
        if e.code == "payload_too_large":
            raise ApiError("payload_too_large", f"The bundle is over {limit // (1024 * 1024)} MiB packed; "
                                                "trim assets and pack again.") from None
        raise


def open_ref(ws, staged: dict, sha: str):
    """A file's content: its staged copy when `staged` holds it, else the stored blob."""
    if sha in staged:
        return open(staged[sha].tmp, "rb")
    try:
        return blobs.open_blob(ws, sha)
    except (OSError, ValueError):
        raise ApiError("not_found", _MISSING) from None


def require_stored(ws, shas) -> None:
    """Before a stream starts (a missing blob could no longer become a clean error)."""
    for sha in shas:
        try:
            if not blobs.blob_path(ws, sha).is_file():
                raise ApiError("not_found", _MISSING)
        except ValueError:
            raise ApiError("not_found", _MISSING) from None
