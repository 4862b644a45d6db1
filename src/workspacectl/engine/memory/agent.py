"""The memory agent: folds pending notes into their owner's guide and reference files.

fold_pending_notes() works in short batches so that no fold holds the workspace: each batch is
one BEGIN IMMEDIATE transaction that reads the oldest pending notes after taking the write lock,
folds at most BATCH_NOTES of them (fewer once BATCH_SECONDS have passed or BATCH_FILE_BYTES of
files were read), writes the guide, bumps the version, marks those notes, and commits. Between
batches the agent checkpoints the WAL (holding no lock) and pauses (BATCH_PAUSE) so that writers
of this process (queued on db.py's lock) and of other processes (polling in SQLite's busy
handler, at most 100 ms apart) get their turn: a token issue waits for one batch, not the fold.

Exactly once: a note is marked in the batch that folds it, and a batch re-reads what is pending
after taking the lock. Two agents at once (two requests, two server timers, a CLI and a server)
take turns batch by batch; an agent killed mid-run loses only the batch in flight, which rolls
back, and the next run folds those notes. A failed batch changes nothing; batches before it stay.

The guide has a bound (GUIDE_MAX_BYTES): a note that would take the guide past it is `held`
(kept with its text and file, listed by GET /v1/memory/:ownerType, never folded), not lost.

Runs on demand (POST /v1/memory/agent/run, `wsctl memory agent run`) and on a server's timer
(server/memory_timer.py calls fold_all_pending()).
"""
from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING

from workspacectl import clock
from workspacectl.engine import validate as v
from workspacectl.engine.db import checkpoint, checkpoints_by_hand, transaction
from workspacectl.engine.events.record import record_event
from workspacectl.engine.memory import memory_lock
from workspacectl.engine.memory.routes import OWNER_TYPES
from workspacectl.engine.registry import Ctx, route
from workspacectl.engine.schema_blocks import INT, STR, array, nullable, obj, text
from workspacectl.engine.scopes import SESSION
from workspacectl.engine.store import memory as store

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

if TYPE_CHECKING:  # the policy module loads on the first fold, not with every route module
    from workspacectl.engine.memory.draft import SectionAppendDraft, StringDraft
    from workspacectl.engine.memory.folding import FoldingPolicy

Owner = tuple[str, "str | None"]  # (ownerType, member id or None for the organization)

GUIDE_MAX_BYTES = 1024 * 1024   # a guide is context an agent loads whole; 1 MiB is ~250k tokens
BATCH_NOTES = 100
BATCH_SECONDS = 0.1
BATCH_FILE_BYTES = 4 * 1024 * 1024
BATCH_PAUSE = 0.1               # > the busy handler's longest sleep (100 ms): every waiter gets a poll in
HELD_GUIDE_FULL = "guide_full"


def _choose_policy(conn: Conn) -> FoldingPolicy:
    from workspacectl.engine.memory.folding import choose_policy

    return choose_policy(conn)


def _fold_note(conn: Conn, document_id: int, draft: SectionAppendDraft | StringDraft, note: sqlite3.Row,
               now: str) -> str:
    """Fold one note into the draft and the files: 'folded', 'dropped' (nothing to change, or its
    file would collide with another file's folder) or 'held' (the guide would pass its bound)."""
    file = "none"
    if note["file_path"]:
        if store.path_clash(conn, document_id, note["file_path"]):
            file = "clash"
        elif not store.note_file_stored(conn, document_id, note["id"]):
            file = "write"
    present = draft.already_there(note["text"])
    if file == "clash" or (present and file == "none"):
        outcome = "dropped"
    elif not present and not draft.fold(note["text"], note["section"], GUIDE_MAX_BYTES):
        store.resolve_note(conn, note["id"], "held", now, HELD_GUIDE_FULL)
        return "held"
    else:
        if file == "write":
            store.put_file_from_note(conn, document_id, note["id"], now)
        outcome = "folded"
    store.resolve_note(conn, note["id"], outcome, now)
    return outcome


class _Run:
    """One owner's run: its totals, the notes it may fold (queued before it started, so a steady
    stream of proposals cannot keep it going) and the draft the last batch committed."""

    def __init__(self, conn: Conn, owner: Owner, policy: FoldingPolicy) -> None:
        self.conn, self.owner, self.policy = conn, owner, policy
        self.upto: int | None = None
        self.version = 0
        self.done: dict[str, list] = {"folded": [], "dropped": [], "held": []}
        self.draft: SectionAppendDraft | StringDraft | None = None

    def batch(self, limit: int) -> bool:
        """Fold one batch; True when pending notes of this run may remain."""
        from workspacectl.engine.memory.draft import draft_for

        conn, now = self.conn, clock.now_iso()
        with transaction(conn, locks=[memory_lock(*self.owner)]):   # this owner's memory alone
            doc = store.ensure_document(conn, *self.owner, now)
            if self.upto is None:
                self.upto = store.last_note_rowid(conn, doc["id"])
            notes = store.pending_notes(conn, doc["id"], limit, self.upto)
            self.version = doc["version"]
            if not notes:
                return False
            started = time.monotonic()
            # The draft of the batch before is reused when nobody changed the guide since.
            kept = self.draft
            draft = kept if kept is not None and kept.text() == doc["guide"] else draft_for(self.policy, doc["guide"])
            self.draft = None  # until this batch commits
            outcome: dict[str, list] = {"folded": [], "dropped": [], "held": []}
            file_bytes = 0
            for note in notes:
                outcome[_fold_note(conn, doc["id"], draft, note, now)].append(note["id"])
                file_bytes += note["file_size"] or 0
                if time.monotonic() - started >= BATCH_SECONDS or file_bytes >= BATCH_FILE_BYTES:
                    break
            if outcome["folded"]:
                self.version += 1
                store.update_guide(conn, doc["id"], draft.text(), self.version, now)
            if outcome["folded"] or outcome["dropped"]:
                owner_type, member_id = self.owner
                record_event(conn, "memory.folded", subject_id=member_id or owner_type,
                             data={"ownerType": owner_type, "membershipId": member_id, "version": self.version,
                                   "folded": len(outcome["folded"]), "dropped": len(outcome["dropped"])})
        self.draft = draft
        for k, ids in outcome.items():
            self.done[k] += ids
        handled = sum(map(len, outcome.values()))
        return handled > 0 and (handled < len(notes) or len(notes) == limit)

    def result(self) -> dict:
        owner_type, member_id = self.owner
        return {"ownerType": owner_type, "membershipId": member_id, "version": self.version, **self.done}


def fold_pending_notes(conn: Conn, owner: Owner, policy: FoldingPolicy | None = None, *, batch_notes: int = BATCH_NOTES,
                       max_batches: int | None = None) -> dict:
    """Fold one owner's pending notes, oldest first, in batches (see the module docstring). A note
    that would change nothing (its text already in the guide and its file, if any, already
    stored) or whose file collides with another file's folder is dropped; one that would take
    the guide past GUIDE_MAX_BYTES is held; the others are folded. Each batch that folds
    anything bumps the version once. max_batches stops early (the rest stay pending)."""
    run = _Run(conn, owner, policy or _choose_policy(conn))
    batches = 0
    with checkpoints_by_hand(conn):
        while True:
            more = run.batch(batch_notes)
            batches += 1
            paused = time.monotonic()
            checkpoint(conn)  # holds no lock: other writers go ahead meanwhile, so it counts as pause
            if not more or (max_batches is not None and batches >= max_batches):
                break
            time.sleep(max(0.0, BATCH_PAUSE - (time.monotonic() - paused)))
    return run.result()


def owners_with_pending(conn: Conn) -> list[Owner]:
    return [(row["owner_type"], row["member_id"]) for row in store.documents_with_pending(conn)]


def fold_all_pending(conn: Conn) -> list[dict]:
    """Every owner with pending notes (the server's timer)."""
    policy = _choose_policy(conn)
    return [fold_pending_notes(conn, owner, policy) for owner in owners_with_pending(conn)]


_FOLD_RESULT = obj({"ownerType": text(enum=list(OWNER_TYPES)), "membershipId": nullable(STR),
                    "version": INT, "folded": array(STR), "dropped": array(STR), "held": array(STR)},
                   required="all")


@route("POST", "/v1/memory/agent/run", scope=SESSION,
       body=obj({}, description="Empty; no fields."),
       body_required=False,
       responses={200: obj({"owners": array(_FOLD_RESULT)}, required="all")},
       summary="Run the memory agent now on organization memory and the caller's own.")
def run_memory_agent(ctx: Ctx) -> dict:
    """Run the memory agent now: organization memory and the caller's own membership memory;
    for an owner or admin, every owner with pending notes too."""
    v.body_dict(ctx)
    owners: list[Owner] = [("organization", None), ("membership", ctx.caller.member_id)]
    if ctx.caller.is_admin:
        owners += [o for o in owners_with_pending(ctx.db) if o not in owners]
    policy = _choose_policy(ctx.db)
    return {"owners": [fold_pending_notes(ctx.db, owner, policy) for owner in owners]}
