"""Encryption at rest: AES-256-GCM under the workspace key.

A sealed blob is ``version (1 byte) | key fingerprint (8) | nonce (12) | ciphertext + tag``.
The header and the caller's AAD (a credential id, ``oauth-client:<service>``) are both
authenticated, so a blob copied onto another row, or edited, fails to open.

Where the workspace key comes from, strongest first:

1. ``WSCTL_MASTER_KEY`` (base64 or hex of 32 bytes). wsctl cannot change it; to rotate, set
   ``WSCTL_MASTER_KEY_PREVIOUS`` to the old value and ``WSCTL_MASTER_KEY`` to a new one on
   every process, then run rotate-key: everything sealed under the old key is re-sealed.
2. The OS keyring (service ``wsctl``, user ``master-key:<workspace id>``), every call bounded
   by a timeout.
3. The file ``<workspace>/master.key``, mode 0600, made on first need.

Keyring and file hold a list of keys (one base64 key per line). The database records the
fingerprint of the current one (setting ``crypto.current_key_fp``); new blobs are sealed under
it and every process follows it, so a rotation seen by one process is seen by all. During a
rotation the new key is stored *alongside* the old one before anything is re-sealed, and the old
one is dropped only after the re-seal transaction committed and a scan found no blob still under
it: no failure at any step can leave a blob without its key.

Always call ``seal`` inside the write transaction that stores the blob (on ``ws.conn()``), so
the current-key lookup and the write are serialized against a rotation.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import os
import secrets
import threading
from contextlib import contextmanager
from pathlib import Path

from workspacectl.errors import ApiError

VERSION = 1
FP_LEN = 8
NONCE_LEN = 12
HEADER_LEN = 1 + FP_LEN
KEY_FILE = "master.key"
LOCK_FILE = "master.key.lock"
SETTING_FP = "crypto.current_key_fp"
SETTING_WS_ID = "workspace_id"
KEYRING_SERVICE = "wsctl"
KEYRING_TIMEOUT_SECONDS = 3.0
ENV_KEY = "WSCTL_MASTER_KEY"
ENV_PREVIOUS = "WSCTL_MASTER_KEY_PREVIOUS"


class _Key:
    """One 32-byte key. Its repr shows the fingerprint only."""

    __slots__ = ("_raw", "fp")

    def __init__(self, raw: bytes):
        if len(raw) != 32:
            raise ValueError("a workspace key is 32 bytes")
        self._raw = raw
        self.fp = fingerprint(raw)

    def aead(self):
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        return AESGCM(self._raw)

    def encoded(self) -> str:
        return base64.b64encode(self._raw).decode()

    def __repr__(self) -> str:
        return f"_Key(fp={self.fp.hex()})"

    __str__ = __repr__


def fingerprint(raw: bytes) -> bytes:
    return hashlib.sha256(b"wsctl-key-fingerprint\0" + raw).digest()[:FP_LEN]


def parse_key(text: str) -> _Key:
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
    return _Key(raw)


def blob_fingerprint(blob: bytes) -> bytes | None:
    """The fingerprint of the key a blob was sealed under (None if it is not a sealed blob)."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        return None
    blob = bytes(blob)
    if len(blob) < HEADER_LEN + NONCE_LEN + 16 or blob[0] != VERSION:
        return None
    return blob[1:HEADER_LEN]


# --- key sources --------------------------------------------------------------------------

def _env_keys() -> tuple[_Key | None, list[_Key]]:
    raw = os.environ.get(ENV_KEY, "").strip()
    current = parse_key(raw) if raw else None
    prev = []
    for part in os.environ.get(ENV_PREVIOUS, "").replace(",", " ").split():
        prev.append(parse_key(part))
    return current, prev


def _keyring_call(fn):
    """Run one keyring call in a thread, bounded by a timeout; None when no keyring works."""
    box: dict = {}

    def run():
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


def _parse_key_lines(text: str) -> list[_Key]:
    keys = []
    for line in text.replace(" ", "\n").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            try:
                keys.append(parse_key(line))
            except ApiError:
                continue
    return keys


class _Store:
    """Where this workspace's keys live when WSCTL_MASTER_KEY is not set: keyring or file."""

    def __init__(self, ws):
        self.ws = ws
        self.file = Path(ws.path) / KEY_FILE

    def keyring_user(self) -> str:
        return f"master-key:{workspace_id(self.ws)}"

    def read_keyring(self) -> list[_Key]:
        user = self.keyring_user()
        value, ok = _keyring_call(lambda k: k.get_password(KEYRING_SERVICE, user))
        return _parse_key_lines(value) if ok and value else []

    def read_file(self) -> list[_Key]:
        try:
            return _parse_key_lines(self.file.read_text())
        except (FileNotFoundError, PermissionError, UnicodeDecodeError):
            return []

    def read_all(self) -> tuple[list[_Key], str | None]:
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

    def write(self, keys: list[_Key], where: str | None) -> str:
        """Store the list (first = newest) in the keyring if it works, else in the 0600 file."""
        text = "\n".join(k.encoded() for k in keys) + "\n"
        if where != "file":
            user = self.keyring_user()
            _, ok = _keyring_call(lambda k: k.set_password(KEYRING_SERVICE, user, text))
            if ok:
                back = self.read_keyring()
                if [k.fp for k in back] == [k.fp for k in keys]:
                    return "keyring"
        _write_0600(self.file, text.encode())
        return "file"

    @contextmanager
    def lock(self):
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


def _write_0600(path: Path, data: bytes) -> None:
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


def workspace_id(ws) -> str:
    """A stable random id for the workspace (names its keyring entry); made on first need."""
    conn = ws.conn()
    row = conn.execute("SELECT value FROM settings WHERE key = ?", (SETTING_WS_ID,)).fetchone()
    if row:
        return row[0]
    from workspacectl.engine.ids import new_id

    conn.execute("INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)", (SETTING_WS_ID, new_id("ws")))
    return conn.execute("SELECT value FROM settings WHERE key = ?", (SETTING_WS_ID,)).fetchone()[0]


# --- the per-process cache ----------------------------------------------------------------

_lock = threading.RLock()
_cache: dict[str, dict[bytes, _Key]] = {}


def _recorded_fp(ws) -> bytes | None:
    row = ws.conn().execute("SELECT value FROM settings WHERE key = ?", (SETTING_FP,)).fetchone()
    if not row:
        return None
    try:
        return bytes.fromhex(row[0])
    except ValueError:
        return None


def _record_fp(ws, fp: bytes) -> None:
    ws.conn().execute("INSERT INTO settings (key, value) VALUES (?, ?) "
                      "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (SETTING_FP, fp.hex()))


def _known(ws, reload: bool = False) -> dict[bytes, _Key]:
    """Every key this process can reach for the workspace, by fingerprint (cached)."""
    path = str(ws.path)
    with _lock:
        if not reload and path in _cache:
            return _cache[path]
        keys: dict[bytes, _Key] = {}
        current, prev = _env_keys()
        for k in ([current] if current else []) + prev:
            keys.setdefault(k.fp, k)
        for k in _Store(ws).read_all()[0]:
            keys.setdefault(k.fp, k)
        _cache[path] = keys
        return keys


def forget_cached_keys(ws=None) -> None:
    with _lock:
        if ws is None:
            _cache.clear()
        else:
            _cache.pop(str(ws.path), None)


def _missing_key_error() -> ApiError:
    return ApiError("internal", "The workspace key that sealed stored secrets is not available to this process: "
                    f"set {ENV_KEY} to it, or run where the OS keyring or <workspace>/{KEY_FILE} holds it.")


def current_key(ws) -> _Key:
    """The key new blobs are sealed under (makes and stores one on first need)."""
    env_current, _ = _env_keys()
    if env_current is not None:
        if _recorded_fp(ws) is None:
            _record_fp(ws, env_current.fp)
        with _lock:
            _cache.setdefault(str(ws.path), {}).setdefault(env_current.fp, env_current)
        return env_current
    fp = _recorded_fp(ws)
    if fp is not None:
        key = _known(ws).get(fp) or _known(ws, reload=True).get(fp)
        if key is None:
            raise _missing_key_error()
        return key
    store = _Store(ws)
    with store.lock():
        keys, _where = store.read_all()
        if not keys:
            key = _Key(secrets.token_bytes(32))
            store.write([key], None)
            if key.fp not in {k.fp for k in store.read_all()[0]}:
                raise ApiError("internal", f"Could not store the workspace key; check that {store.file.parent} is writable.")
        else:
            key = keys[0]
        _record_fp(ws, key.fp)
    forget_cached_keys(ws)
    return key


# --- seal / unseal ------------------------------------------------------------------------

def _aad(header: bytes, aad: str) -> bytes:
    return header + aad.encode("utf-8")


def seal_with(key: _Key, aad: str, plaintext: bytes) -> bytes:
    header = bytes([VERSION]) + key.fp
    nonce = secrets.token_bytes(NONCE_LEN)
    return header + nonce + key.aead().encrypt(nonce, bytes(plaintext), _aad(header, aad))


def seal(ws, aad: str, plaintext: bytes) -> bytes:
    """Encrypt ``plaintext`` under the workspace's current key, bound to ``aad``."""
    return seal_with(current_key(ws), aad, plaintext)


def key_for_blob(ws, blob: bytes) -> _Key:
    fp = blob_fingerprint(blob)
    if fp is None:
        raise ApiError("internal", "A stored secret is damaged and cannot be read; reconnect or re-enter it.")
    key = _known(ws).get(fp) or _known(ws, reload=True).get(fp)
    if key is None:
        raise _missing_key_error()
    return key


def unseal(ws, aad: str, blob: bytes) -> bytes:
    """Decrypt a blob made by ``seal`` with the same ``aad``; refuses a tampered or moved one."""
    from cryptography.exceptions import InvalidTag

    blob = bytes(blob)
    key = key_for_blob(ws, blob)
    header, nonce, body = blob[:HEADER_LEN], blob[HEADER_LEN:HEADER_LEN + NONCE_LEN], blob[HEADER_LEN + NONCE_LEN:]
    try:
        return key.aead().decrypt(nonce, body, _aad(header, aad))
    except InvalidTag:
        raise ApiError("internal", "A stored secret failed its integrity check and cannot be read; "
                       "reconnect or re-enter it.") from None


# --- rotation -----------------------------------------------------------------------------

class Rotation:
    """A new current key, already stored next to the old ones (nothing is lost if we stop here)."""

    def __init__(self, ws, target: _Key, source: str):
        self.ws = ws
        self.target = target
        self.source = source  # "env", "keyring" or "file"

    def reseal(self, aad: str, blob: bytes) -> bytes | None:
        """The blob sealed under the target key, or None when it already is."""
        if blob_fingerprint(blob) == self.target.fp:
            return None
        return seal_with(self.target, aad, unseal(self.ws, aad, blob))

    def make_current(self) -> None:
        """Record the target as current; call inside the re-seal transaction."""
        _record_fp(self.ws, self.target.fp)

    def retire_old_keys(self, still_used: set[bytes]) -> int:
        """After the commit: drop stored keys no blob uses any more; answers how many went."""
        if self.source == "env":
            return 0
        store = _Store(self.ws)
        with store.lock():
            keys, where = store.read_all()
            keep = [k for k in keys if k.fp == self.target.fp or k.fp in still_used]
            if self.target.fp not in {k.fp for k in keep}:
                return 0  # never drop to a list without the current key
            keep.sort(key=lambda k: k.fp != self.target.fp)
            dropped = len(keys) - len(keep)
            if dropped:
                written = store.write(keep, where)
                if written == "keyring" and store.file.exists():
                    _write_0600(store.file, ("\n".join(k.encoded() for k in keep) + "\n").encode())
        forget_cached_keys(self.ws)
        return dropped


def begin_rotation(ws, sealed_fps: set[bytes]) -> Rotation:
    """Choose the new key and store it beside the old ones before anything is re-sealed.

    With WSCTL_MASTER_KEY the target is that key; there is something to do only when some blob
    is sealed under another key (WSCTL_MASTER_KEY_PREVIOUS or the old keyring/file key).
    """
    env_current, _ = _env_keys()
    if env_current is not None:
        if not (sealed_fps - {env_current.fp}) and _recorded_fp(ws) in (None, env_current.fp):
            raise ApiError("invalid_request", f"The workspace key comes from {ENV_KEY}, which wsctl cannot change. "
                           f"To rotate: set {ENV_PREVIOUS} to its current value and {ENV_KEY} to a new 32-byte "
                           "key (base64) for every wsctl process, then run rotate-key again.")
        for fp in sealed_fps - {env_current.fp}:
            if fp not in _known(ws, reload=True):
                raise _missing_key_error()
        return Rotation(ws, env_current, "env")
    current_key(ws)  # makes sure a key exists and is recorded
    store = _Store(ws)
    with store.lock():
        keys, where = store.read_all()
        new = _Key(secrets.token_bytes(32))
        written = store.write([new] + keys, where)
        if written == "keyring" and store.file.exists():
            _write_0600(store.file, ("\n".join(k.encoded() for k in [new] + keys) + "\n").encode())
        if new.fp not in {k.fp for k in store.read_all()[0]}:
            raise ApiError("internal", "Could not store the new workspace key; nothing was changed.")
    forget_cached_keys(ws)
    return Rotation(ws, new, written)
