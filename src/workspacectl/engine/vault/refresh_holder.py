"""Who holds a token-refresh lease, and whether that process is gone.

A lease's owner is `host|boot|pid|start|random`: the machine's name, its boot id, the holder's
process id and that process's start time (clock ticks since boot, /proc/PID/stat field 22, so a
reused pid is not mistaken for the holder), and a random part per refresh. A process on the same
machine and boot can tell a dead holder at once: no such process, a zombie, or another process
with that pid.

On PostgreSQL the holder also holds a session-level advisory lock for the credential's refresh,
taken before it claims the lease and given up after it released it: PostgreSQL drops it with the
holder's connection, so a caller on any machine that gets the lock while the lease is still held
knows the holder is gone. (SQLite has no such lock: its processes share one machine, where the pid
check suffices.) A lease of a holder that names no process (written before these owners existed)
is waited out, at most token_refresh.LEASE_SECONDS.
"""
from __future__ import annotations

import functools
import os
import secrets
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

_SEP = "|"


@functools.lru_cache(maxsize=1)
def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return "?"


def _start_ticks(pid: int) -> str | None:
    """The process's start time and whether it is a zombie: ("ticks", zombie) from /proc, or None
    when the process does not exist; ("?", False) where /proc cannot say (not Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except FileNotFoundError:
        return None
    except OSError:
        return "?"
    fields = stat[stat.rfind(")") + 2:].split()   # after "pid (comm) ": state is field 3, start time 22
    if not fields or fields[0] in ("Z", "X"):
        return None
    return fields[19] if len(fields) > 19 else "?"


@functools.lru_cache(maxsize=1)
def _me() -> str:
    pid = os.getpid()
    return _SEP.join((socket.gethostname().replace(_SEP, "_"), _boot_id(), str(pid), _start_ticks(pid) or "?"))


def new_owner() -> str:
    """A lease owner naming this process (and one refresh of it)."""
    if _me().split(_SEP)[2] != str(os.getpid()):   # a forked child: its own identity
        _me.cache_clear()
    return f"{_me()}{_SEP}{secrets.token_hex(6)}"


def is_gone(owner: str | None) -> bool:
    """True when `owner` names a process of this machine and boot that no longer runs."""
    parts = (owner or "").split(_SEP)
    if len(parts) != 5:
        return False   # an owner written before holders were named, or unreadable: wait it out
    host, boot, pid, start, _ = parts
    me = _me().split(_SEP)
    if host != me[0] or boot != me[1] or boot == "?" or not pid.isdigit():
        return False
    if pid == str(os.getpid()):
        return start != me[3]   # this very process holds it (another thread): alive
    now = _start_ticks(int(pid))
    if now is None:
        return True
    return now != "?" and start not in ("?", now)


def unnamed_owner() -> str:
    """An owner naming no process (its lease can only run out)."""
    return "lease-" + secrets.token_hex(12)


def names_holder(owner: str | None) -> bool:
    """True for an owner written by new_owner() (its holder takes the PostgreSQL session lock)."""
    return len((owner or "").split(_SEP)) == 5


_LOCK = "SELECT pg_try_advisory_lock(hashtext('wsctl-token-refresh'), hashtext(?))"
_UNLOCK = "SELECT pg_advisory_unlock(hashtext('wsctl-token-refresh'), hashtext(?))"


def has_session_locks(conn: Conn) -> bool:
    return getattr(conn, "dialect", None) == "postgres"


def session_lock(conn: Conn, cred_id: str) -> bool:
    """PostgreSQL: take this session's lock of the credential's refresh without waiting; True when
    taken, False when another session holds it."""
    return bool(conn.execute(_LOCK, (cred_id,)).fetchone()[0])


def session_unlock(conn: Conn, cred_id: str) -> None:
    try:
        conn.execute(_UNLOCK, (cred_id,)).fetchone()
    except Exception:   # a lost connection took the lock with it
        pass
