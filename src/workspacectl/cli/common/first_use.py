"""The embedded default workspace: made on first use, kept only by a command that succeeds.

A command that needs a workspace and finds none at the embedded default makes it (CONTRACT §1):
the OS user is its owner and the active profile points at it. Until that command ends the new
workspace is provisional: its maker holds an exclusive lock on the folder that holds it, so a
command starting meanwhile waits for the verdict instead of using it. `settle(ok)`, called once
the command is over, keeps and announces it when the command succeeded, or removes the
workspace, the profile entry and the folders it made when it failed: a failing command leaves
nothing behind. `keep()` settles early for a command that goes on running (`wsctl serve`).

The lock is flock(2) on the folder itself rather than a lock file, which would be left behind.
A folder removed by a rollback while others waited on it is noticed (its inode is gone) and
made again. Without fcntl (not POSIX) racing first commands are not serialized.
"""
from __future__ import annotations

import getpass
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from workspacectl.cli.common import config
from workspacectl.cli.common.paths import config_file, default_workspace
from workspacectl.errors import ApiError


@dataclass
class _Provisional:
    path: Path
    profile: str
    lock: int | None
    announce: str
    config_before: dict          # config.toml as it was (empty: there was none)
    config_bytes: bytes | None   # ... and its bytes (None: there was none)
    config_written: bytes | None = None   # the bytes this command wrote
    made_dirs: list[Path] = field(default_factory=list)   # folders this command made, deepest first


_provisional: _Provisional | None = None


def ensure_default(path: Path, profile: str) -> None:
    """The embedded workspace at `path` exists after this call: already there, or made now
    (provisionally, until `settle`)."""
    global _provisional
    from workspacectl.backend.local import create_workspace, workspace_exists

    if _provisional is not None and _provisional.path == path:
        return
    folder = path.parent
    shared = _lock(folder, exclusive=False)
    if shared is not False:
        try:  # a maker still deciding holds the lock exclusively: wait for its verdict
            if workspace_exists(path):
                return
        finally:
            _unlock(shared)
    made = _missing_dirs(folder) + _missing_dirs(config_file().parent)
    folder.mkdir(parents=True, exist_ok=True)
    lock = _lock(folder, exclusive=True)
    if workspace_exists(path):  # another command made it while this one waited
        _unlock(lock)
        return
    before = config.load()
    user = getpass.getuser() or "owner"
    _provisional = _Provisional(path, profile, lock, f"Created a new workspace at {path} (owner: {user}).",
                                before, _read(config_file()),
                                made_dirs=sorted(set(made), key=lambda p: -len(p.parts)))
    made_ws = create_workspace(path, f"{user}'s workspace", user, f"{user}@localhost")
    config.set_profile(profile, {"workspace": made_ws["workspace"], "member": made_ws["owner"]["id"]})
    _provisional.config_written = _read(config_file())


def keep() -> None:
    """Settle now as a success: for a command that keeps running once it is under way."""
    settle(ok=True)


def settle(ok: bool) -> None:
    """Keep (and announce) or remove the workspace this command made; a no-op when it made none."""
    global _provisional
    p, _provisional = _provisional, None
    if p is None:
        return
    try:
        if ok:
            print(p.announce, file=sys.stderr)
        else:
            _roll_back(p)
    except (OSError, ValueError, ApiError) as e:  # the command's own outcome stands; say what is left
        print(f"warning: could not remove the workspace made at {p.path} ({e}); remove it by hand.", file=sys.stderr)
    finally:
        _unlock(p.lock)


def not_made_yet(path: Path) -> str | None:
    """For read-only commands (`auth status`, `auth whoami`): a sentence when `path` is the
    embedded default and it is not made yet, so they report that instead of making it."""
    from workspacectl.backend.local import workspace_exists

    if workspace_exists(path) or path.expanduser().resolve() != default_workspace().expanduser().resolve():
        return None
    return (f"No workspace yet at {path}; the first command that needs one makes it with you as owner "
            "(or run `wsctl init`).")


def _roll_back(p: _Provisional) -> None:
    shutil.rmtree(p.path, ignore_errors=True)
    if _read(config_file()) == p.config_written:  # nobody wrote since: put back the very bytes
        if p.config_bytes is None:
            config_file().unlink(missing_ok=True)
        else:
            config.write_atomic(config_file(), p.config_bytes)
    else:
        _undo_profile(p)
    for d in p.made_dirs:
        try:
            d.rmdir()
        except OSError:  # not empty: something else lives there now
            pass


def _undo_profile(p: _Provisional) -> None:
    """Another command wrote config.toml meanwhile: undo only the profile entry this one set."""
    data = config.load()
    profiles = data.get("profiles", {})
    if p.profile in p.config_before.get("profiles", {}):
        profiles[p.profile] = p.config_before["profiles"][p.profile]
    else:
        profiles.pop(p.profile, None)
    if "profile" not in p.config_before and data.get("profile") == p.profile:
        data.pop("profile")
    if not profiles:
        data.pop("profiles", None)
    if data or p.config_bytes is not None:
        config.save(data)
    else:
        config_file().unlink(missing_ok=True)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _missing_dirs(folder: Path) -> list[Path]:
    out = []
    while not folder.exists() and folder != folder.parent:
        out.append(folder)
        folder = folder.parent
    return out


def _lock(folder: Path, exclusive: bool) -> int | bool | None:
    """An fd holding flock on `folder`; None without fcntl; False (shared only) when there is no
    folder. An exclusive lock makes the folder again if a rollback removed it meanwhile."""
    try:
        import fcntl
    except ImportError:
        return None
    while True:
        try:
            fd = os.open(folder, os.O_RDONLY)
        except FileNotFoundError:
            if not exclusive:
                return False
            folder.mkdir(parents=True, exist_ok=True)
            continue
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            if os.path.samestat(os.fstat(fd), os.stat(folder)):
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)   # the folder we waited on was removed by a rollback: lock the new one


def _unlock(fd: int | bool | None) -> None:
    if isinstance(fd, int) and not isinstance(fd, bool):  # None (no fcntl) and False hold nothing
        os.close(fd)
