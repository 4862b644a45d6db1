"""The workspace key and where it is kept: the environment, the OS keyring, or a 0600 file.

`Key` is one 32-byte AES key whose repr shows only its fingerprint. `KeyStore` reads and writes
the list of keys of one workspace (keyring first, every call bounded by a timeout, else the file
`<workspace>/master.key`). crypto.py decides which key seals what; this module only finds keys.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import os
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from types import ModuleType

    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from workspacectl.engine.workspaces.folder import Workspace

FP_LEN = 8
KEY_FILE = "master.key"
LOCK_FILE = "master.key.lock"
SETTING_WS_ID = "workspace_id"
KEYRING_SERVICE = "wsctl"
KEYRING_TIMEOUT_SECONDS = 3.0
ENV_KEY = "WSCTL_MASTER_KEY"
ENV_PREVIOUS = "WSCTL_MASTER_KEY_PREVIOUS"
ENV_KEY_FILE = "WSCTL_MASTER_KEY_FILE"   # a file holding the key, for replicas given it as a mounted secret


class Key:
    """One 32-byte key. Its repr shows the fingerprint only."""

    __slots__ = ("_raw", "fp")

    def __init__(self, raw: bytes):
        if len(raw) != 32:
            raise ValueError("a workspace key is 32 bytes")
        self._raw = raw
        self.fp = fingerprint(raw)

    def aead(self) -> AESGCM:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        return AESGCM(self._raw)

    def encoded(self) -> str:
        return base64.b64encode(self._raw).decode()

    def __repr__(self) -> str:
        return f"Key(fp={self.fp.hex()})"

    __str__ = __repr__


def fingerprint(raw: bytes) -> bytes:
    return hashlib.sha256(b"wsctl-key-fingerprint\0" + raw).digest()[:FP_LEN]


def parse_key(text: str) -> Key:
    """A key given as hex (64 digits) or base64 (standard or URL-safe) of 32 bytes."""
    t = text.strip()
    raw = None
    if len(t) == 64:
        try:
            raw = bytes.fromhex(t)
        except ValueError:
            raw = None
    if raw is None:
        try:
            raw = base64.b64decode(t.replace("-", "+").replace("_", "/") + "=" * (-len(t) % 4), validate=True)
        except (binascii.Error, ValueError):
            raw = None
    if raw is None or len(raw) != 32:
        raise ApiError("invalid_request", "The workspace key must be 32 bytes written as base64 or hex; "
                       "make one with `python -c \"import os,base64;print(base64.b64encode(os.urandom(32)).decode())\"`.")
    return Key(raw)




def env_keys() -> tuple[Key | None, list[Key]]:
    raw = os.environ.get(ENV_KEY, "").strip()
    if not raw and os.environ.get(ENV_KEY_FILE):
        try:
            raw = Path(os.environ[ENV_KEY_FILE]).expanduser().read_text().strip()
        except (OSError, UnicodeDecodeError) as e:
            raise ApiError("unauthenticated", f"Cannot read the workspace key file {ENV_KEY_FILE}="
                           f"{os.environ[ENV_KEY_FILE]} ({getattr(e, 'strerror', None) or e}); fix the path or its permissions.") from None
    current = parse_key(raw) if raw else None
    prev = []
    for part in os.environ.get(ENV_PREVIOUS, "").replace(",", " ").split():
        prev.append(parse_key(part))
    return current, prev


T = TypeVar("T")


def keyring_call(fn: Callable[[ModuleType], T]) -> tuple[T | None, bool]:
    """Run one keyring call (fn(the keyring module)) in a thread, bounded by a timeout: (its answer,
    True), or (None, False) when no keyring works."""
    box: dict = {}

    def run() -> None:
        try:
            import keyring
            from keyring.backends import fail

            if isinstance(keyring.get_keyring(), fail.Keyring):
                box["unavailable"] = True
                return
            box["value"] = fn(keyring)
        except Exception:  # a broken backend is the same as none: the file is used
            box["unavailable"] = True

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(KEYRING_TIMEOUT_SECONDS)
    if t.is_alive() or box.get("unavailable"):
        return None, False
    return box.get("value"), True


def parse_key_lines(text: str) -> list[Key]:
    keys = []
    for line in text.replace(" ", "\n").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            try:
                keys.append(parse_key(line))
            except ApiError:
                continue
    return keys


class KeyStore:
    """Where this workspace's keys live when WSCTL_MASTER_KEY is not set: keyring or file."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.file = Path(ws.path) / KEY_FILE

    def keyring_user(self) -> str:
        return f"master-key:{workspace_id(self.ws)}"

    def read_keyring(self) -> list[Key]:
        user = self.keyring_user()
        value, ok = keyring_call(lambda k: k.get_password(KEYRING_SERVICE, user))
        return parse_key_lines(value) if ok and value else []

    def read_file(self) -> list[Key]:
        try:
            return parse_key_lines(self.file.read_text())
        except (FileNotFoundError, PermissionError, UnicodeDecodeError):
            return []

    def read_all(self) -> tuple[list[Key], str | None]:
        """Keys of both places (keyring first); answers also where the first ones were found."""
        ring = self.read_keyring()
        file = self.read_file()
        where = "keyring" if ring else ("file" if file else None)
        seen, out = set(), []
        for k in ring + file:
            if k.fp not in seen:
                seen.add(k.fp)
                out.append(k)
        return out, where

    def write(self, keys: list[Key], where: str | None) -> str:
        """Store the list (first = newest) in the keyring if it works, else in the 0600 file."""
        text = "\n".join(k.encoded() for k in keys) + "\n"
        if where != "file":
            user = self.keyring_user()
            _, ok = keyring_call(lambda k: k.set_password(KEYRING_SERVICE, user, text))
            if ok:
                back = self.read_keyring()
                if [k.fp for k in back] == [k.fp for k in keys]:
                    return "keyring"
        write_0600(self.file, text.encode())
        return "file"

    @contextmanager
    def lock(self) -> Iterator[None]:
        path = Path(self.ws.path) / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX)
            except ImportError:  # no flock on this platform: creation relies on the DB record
                pass
            yield
        finally:
            os.close(fd)


def write_0600(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def workspace_id(ws: Workspace) -> str:
    """A stable random id for the workspace (names its keyring entry); made on first need."""
    conn = ws.conn()
    row = conn.execute("SELECT value FROM settings WHERE key = ?", (SETTING_WS_ID,)).fetchone()
    if row:
        return row[0]
    from workspacectl.engine.ids import new_id

    conn.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT DO NOTHING", (SETTING_WS_ID, new_id("ws")))
    return conn.execute("SELECT value FROM settings WHERE key = ?", (SETTING_WS_ID,)).fetchone()[0]
