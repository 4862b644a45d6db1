"""The memory agent: folds pending notes into their owner's guide and reference files.

fold_pending_notes() does one owner in one transaction. BEGIN IMMEDIATE takes the write lock
before the pending notes are read, so two runs at once (two requests, two server timers, a
CLI and a server) serialize: the second finds the notes already folded. A note is never
folded twice, and a failed run changes nothing.

Runs on demand (POST /v1/memory/agent/run, `wsctl memory agent run`) and on a server's timer
(server/memory_timer.py calls fold_all_pending()).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from workspacectl import clock
from workspacectl.engine import validate as v
from workspacectl.engine.db import transaction
from workspacectl.engine.memory import MAX_PENDING
from workspacectl.engine.registry import Ctx, route
from workspacectl.engine.store import memory as store
from workspacectl.errors import ApiError

if TYPE_CHECKING:  # the policy module loads on the first fold, not with every route module
    from workspacectl.engine.memory_folding import FoldingPolicy

Owner = tuple[str, "str | None"]  # (ownerType, member id or None for the organization)


def _apply(policy: FoldingPolicy, method: str, *args):
    """A policy call; a plug-in that fails or answers the wrong type is reported, not a 500."""
    try:
        out = getattr(policy, method)(*args)
    except Exception as e:  # a plug-in's bug: the transaction rolls back and nothing changes
        raise ApiError("unprocessable", f"The memory folding policy '{policy.name}' failed ({type(e).__name__}); "
                                        "fix it or unset WSCTL_MEMORY_POLICY.") from None
    expected = bool if method == "already_there" else str
    if not isinstance(out, expected):
        raise ApiError("unprocessable", f"The memory folding policy '{policy.name}' answered a "
                                        f"{type(out).__name__} from {method}; it must answer a {expected.__name__}.")
    return out


def _file_changes(conn, document_id: int, note) -> str:
    """'none' (no file, or the same bytes stored), 'write', or 'clash' (a folder/file collision)."""
    if not note["file_path"]:
        return "none"
    if store.path_clash(conn, document_id, note["file_path"]):
        return "clash"
    current = store.get_file(conn, document_id, note["file_path"])
    same = current is not None and bytes(current["content"]) == bytes(note["file_content"] or b"")
    return "none" if same else "write"


def _choose_policy(conn) -> FoldingPolicy:
    from workspacectl.engine.memory_folding import choose_policy

    return choose_policy(conn)


def fold_pending_notes(conn, owner: Owner, policy: FoldingPolicy | None = None) -> dict:
    """Fold one owner's pending notes, oldest first, all in one transaction. A note that would
    change nothing (its text already in the guide and its file, if any, already stored) or whose
    file collides with another file's folder is dropped; the others are folded. The version is
    bumped once when anything was folded."""
    policy = policy or _choose_policy(conn)
    owner_type, member_id = owner
    now = clock.now_iso()
    folded, dropped = [], []
    with transaction(conn):
        doc = store.ensure_document(conn, owner_type, member_id, now)
        guide, version = doc["guide"], doc["version"]
        for note in store.pending_notes(conn, doc["id"], MAX_PENDING):
            file = _file_changes(conn, doc["id"], note)
            present = _apply(policy, "already_there", guide, note["text"])
            if file == "clash" or (present and file == "none"):
                store.resolve_note(conn, note["id"], "dropped", now)
                dropped.append(note["id"])
                continue
            if not present:
                guide = _apply(policy, "fold", guide, note["text"], note["section"])
            if file == "write":
                store.put_file(conn, doc["id"], note["file_path"], bytes(note["file_content"] or b""), now)
            store.resolve_note(conn, note["id"], "folded", now)
            folded.append(note["id"])
        if folded:
            version += 1
            store.update_guide(conn, doc["id"], guide, version, now)
    return {"ownerType": owner_type, "membershipId": member_id, "version": version,
            "folded": folded, "dropped": dropped}


def owners_with_pending(conn) -> list[Owner]:
    return [(row["owner_type"], row["member_id"]) for row in store.documents_with_pending(conn)]


def fold_all_pending(conn) -> list[dict]:
    """Every owner with pending notes (the server's timer)."""
    policy = _choose_policy(conn)
    return [fold_pending_notes(conn, owner, policy) for owner in owners_with_pending(conn)]


@route("POST", "/v1/memory/agent/run")
def run_memory_agent(ctx: Ctx) -> dict:
    """Run the memory agent now: organization memory and the caller's own membership memory;
    for an owner or admin, every owner with pending notes too."""
    v.body_dict(ctx)
    owners: list[Owner] = [("organization", None), ("membership", ctx.caller.member_id)]
    if ctx.caller.is_admin:
        owners += [o for o in owners_with_pending(ctx.db) if o not in owners]
    policy = _choose_policy(ctx.db)
    return {"owners": [fold_pending_notes(ctx.db, owner, policy) for owner in owners]}
