"""Housekeeping: leftovers no request cleans up by itself.

    sweep(ws, now=None) -> counts     one pass, safe to run from several processes at once
    maybe_sweep(ws, now=None)         the same at most once per EVERY seconds per workspace
                                      (a settings row holds the last sweep time)

A pass removes
- skill_uploads rows past their usable lifetime (expires_at) plus GRACE, used or not, then their
  blobs with blob_store.remove_unreferenced after that commit (engine/blobs/__init__.py's rule; a blob a
  version's manifest still names stays);
- blobs/tmp/stage-* folders a killed request left: any whose flock no live process holds
  (BlobStore.remove_abandoned_stages, engine/blobs/__init__.py; `wsctl serve` also runs this when it starts), or where
  flock does not exist, those not touched for FILE_AGE seconds;
- local blobs/incoming/<token> files (uploads never validated or published) not touched for
  FILE_AGE seconds: never younger ones, another process may be writing them right now;
- expired local download copies in blobs/outbox (also swept on every local download link);
- events older than EVENT_DAYS and finished (delivered or failed) webhook deliveries older than
  DELIVERY_DAYS (m027; a pending delivery and its event always stay);
- blobs no row names whose file is older than ORPHAN_AGE (a process killed inside a commit
  publishes blobs whose rows never land: 142 MB in one drill), each re-checked under the write
  lock before it is deleted (BlobStore.collect_orphans).

File ages are compared in the clock's frame (mtime + WSCTL_NOW_OFFSET_SECONDS, as
skill_transfers does), so an offset never makes a live file look old.

Runs on `wsctl serve`'s timer thread (server/memory_timer.py) and, through maybe_sweep, after
a command of the local backend (cli/main.py), once its output is out.
"""
from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from workspacectl import clock
from workspacectl.engine.db import transaction
from workspacectl.engine.store import identity

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn
    from workspacectl.engine.workspaces.folder import Workspace

GRACE = 60 * 60            # after an upload's expires_at (itself an hour after its link was made)
FILE_AGE = 2 * 60 * 60     # stage folders and incoming files untouched this long are leftovers
ORPHAN_AGE = 60 * 60       # unreferenced blobs younger than this may be a request's, about to be recorded
EVERY = 60 * 60            # maybe_sweep: at most this often per workspace
SETTING = "housekeeping_last_sweep"
EVENT_DAYS = 90            # the event feed keeps this many days
DELIVERY_DAYS = 30         # a webhook's delivery log keeps this many days


def sweep(ws: Workspace, now: datetime | None = None) -> dict:
    # Imported here: every local command calls maybe_sweep, and a sweep is due once an hour.
    from workspacectl.engine.store import skills as skill_store

    now = now or clock.now()
    counts = {"uploads": 0, "blobs": 0, "stageFolders": 0, "incomingFiles": 0, "orphanBlobs": 0}
    conn = ws.conn()
    counts.update(_expire_events(conn, now))
    cutoff = clock.iso(now - timedelta(seconds=GRACE))
    with transaction(conn):
        shas = skill_store.delete_uploads_expired_before(conn, cutoff)
    counts["uploads"] = len(shas)
    counts["blobs"] = ws.blob_store.remove_unreferenced(shas)   # after the commit, in its own transaction

    file_cutoff = now.timestamp() - clock.offset_seconds() - FILE_AGE   # in the filesystem's frame
    root = Path(ws.blobs)
    abandoned = ws.blob_store.remove_abandoned_stages()
    if abandoned is not None:
        counts["stageFolders"] = abandoned
    else:
        for folder in _entries(root / "tmp", "stage-"):
            if folder.is_dir() and _newest(folder) < file_cutoff:
                shutil.rmtree(folder, ignore_errors=True)
                counts["stageFolders"] += 1
    from workspacectl.engine.skills import transfers

    for path in _entries(root / transfers.INCOMING):
        if path.is_file() and _newest(path) < file_cutoff and not _link_recent(path.name, now):
            path.unlink(missing_ok=True)
            counts["incomingFiles"] += 1
    transfers.sweep_outbox(root / transfers.OUTBOX)
    orphan_cutoff = now.timestamp() - clock.offset_seconds() - ORPHAN_AGE
    counts["orphanBlobs"] = ws.blob_store.collect_orphans(orphan_cutoff)
    return counts


def _expire_events(conn: Conn, now: datetime) -> dict:
    from workspacectl.engine.store import events

    with transaction(conn):
        deliveries = events.delete_finished_deliveries_before(conn, clock.iso(now - timedelta(days=DELIVERY_DAYS)))
        old = events.delete_events_before(conn, clock.iso(now - timedelta(days=EVENT_DAYS)))
    return {"events": old, "deliveries": deliveries}


def maybe_sweep(ws: Workspace, now: datetime | None = None) -> dict | None:
    """sweep() when none ran in the last EVERY seconds (any process); else None. The check is one
    read; only a due sweep takes the write lock, to claim the run."""
    now = now or clock.now()
    conn = ws.conn()
    if not _due(identity.get_setting(conn, SETTING), now):
        return None
    with transaction(conn):
        if not _due(identity.get_setting(conn, SETTING), now):   # another process claimed it meanwhile
            return None
        identity.set_setting(conn, SETTING, clock.iso(now))
    return sweep(ws, now)


def _due(last: str | None, now: datetime) -> bool:
    if not last:
        return True
    try:
        since = (now - clock.parse_iso(last)).total_seconds()
    except ValueError:
        return True
    return abs(since) >= EVERY   # far in the future too: a clock that went back must not stop sweeps


def _entries(folder: Path, prefix: str = "") -> list[Path]:
    try:
        return [p for p in folder.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return []


def _newest(path: Path) -> float:
    """The latest mtime of a file, or of a folder and its direct entries (a file being written in a
    stage folder keeps the folder young); +inf when it cannot be read (left alone)."""
    try:
        times = [path.stat().st_mtime]
        if path.is_dir():
            times += [p.stat().st_mtime for p in path.iterdir()]
        return max(times)
    except OSError:
        return float("inf")


def _link_recent(token: str, now: datetime) -> bool:
    """An incoming file's upload link expired less than FILE_AGE ago (its mtime may be an old one a
    copy preserved). The expiry is read from the token unverified: it only ever keeps a file."""
    from workspacectl.engine.skills.transfers import _unb64

    try:
        expires = json.loads(_unb64(token.split(".", maxsplit=1)[0]))[3]
        return isinstance(expires, int) and expires > now.timestamp() - FILE_AGE
    except (ValueError, TypeError, IndexError, KeyError, UnicodeError, RecursionError):
        return False

