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

Finding keys (environment, keyring, file) is crypto/keys.py; this module decides which seals what.

Always call ``seal`` inside the write transaction that stores the blob (on ``ws.conn()``), so
the current-key lookup and the write are serialized against a rotation.
"""
from __future__ import annotations

import secrets
import threading
from typing import TYPE_CHECKING

from workspacectl.engine.crypto.keys import (  # noqa: F401  (part of this API)
    ENV_KEY,
    ENV_PREVIOUS,
    FP_LEN,
    KEY_FILE,
    Key,
    KeyStore,
    env_keys,
    fingerprint,
    parse_key,
    workspace_id,
    write_0600,
)
from workspacectl.engine.db import must_not_wait
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.workspaces.folder import Workspace

VERSION = 1
NONCE_LEN = 12
HEADER_LEN = 1 + FP_LEN
SETTING_FP = "crypto.current_key_fp"


def blob_fingerprint(blob: bytes) -> bytes | None:
    """The fingerprint of the key a blob was sealed under (None if it is not a sealed blob)."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        return None
    blob = bytes(blob)
    if len(blob) < HEADER_LEN + NONCE_LEN + 16 or blob[0] != VERSION:
        return None
    return blob[1:HEADER_LEN]


# --- the per-process cache ----------------------------------------------------------------

_lock = threading.RLock()
_cache: dict[str, dict[bytes, Key]] = {}


def _recorded_fp(ws: Workspace) -> bytes | None:
    row = ws.conn().execute("SELECT value FROM settings WHERE key = ?", (SETTING_FP,)).fetchone()
    if not row:
        return None
    try:
        return bytes.fromhex(row[0])
    except ValueError:
        return None


def _record_fp(ws: Workspace, fp: bytes) -> None:
    ws.conn().execute("INSERT INTO settings (key, value) VALUES (?, ?) "
                      "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (SETTING_FP, fp.hex()))


def _known(ws: Workspace, reload: bool = False) -> dict[bytes, Key]:
    """Every key this process can reach for the workspace, by fingerprint (cached)."""
    path = str(ws.path)
    if not reload and (cached := _cache.get(path)) is not None:
        return cached
    must_not_wait("loading the workspace's keys")   # from the keyring or a file, under a lock
    with _lock:
        if not reload and path in _cache:
            return _cache[path]
        keys: dict[bytes, Key] = {}
        current, prev = env_keys()
        for k in ([current] if current else []) + prev:
            keys.setdefault(k.fp, k)
        for k in KeyStore(ws).read_all()[0]:
            keys.setdefault(k.fp, k)
        _cache[path] = keys
        return keys


def forget_cached_keys(ws: Workspace | None = None) -> None:
    with _lock:
        if ws is None:
            _cache.clear()
        else:
            _cache.pop(str(ws.path), None)


def _missing_key_error() -> ApiError:
    return ApiError("internal", "The workspace key that sealed stored secrets is not available to this process: "
                    f"set {ENV_KEY} to it, or run where the OS keyring or <workspace>/{KEY_FILE} holds it.")


def require_key(ws: Workspace) -> None:
    """Refuse to go on without the key that sealed the stored secrets (a replica given the wrong
    key, or none): one clear line, exit 3, before anything is served or sealed."""
    fp = _recorded_fp(ws)
    if fp is None or fp in _known(ws) or fp in _known(ws, reload=True):
        return
    given = env_keys()[0]
    said = f" ({ENV_KEY} has key {given.fp.hex()})" if given is not None else ""
    raise ApiError("unauthenticated", f"This process does not have the key of workspace {ws.shown} "
                   f"(its secrets are sealed under key {fp.hex()}){said}: set {ENV_KEY} or {ENV_KEY}_FILE "
                   "to the key every replica of it uses.")


def current_key(ws: Workspace) -> Key:
    """The key new blobs are sealed under (makes and stores one on first need)."""
    env_current, _ = env_keys()
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
    store = KeyStore(ws)
    with store.lock():
        keys, _where = store.read_all()
        if not keys:
            key = Key(secrets.token_bytes(32))
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


def seal_with(key: Key, aad: str, plaintext: bytes) -> bytes:
    header = bytes([VERSION]) + key.fp
    nonce = secrets.token_bytes(NONCE_LEN)
    return header + nonce + key.aead().encrypt(nonce, bytes(plaintext), _aad(header, aad))


def seal(ws: Workspace, aad: str, plaintext: bytes) -> bytes:
    """Encrypt ``plaintext`` under the workspace's current key, bound to ``aad``."""
    return seal_with(current_key(ws), aad, plaintext)


def key_for_blob(ws: Workspace, blob: bytes) -> Key:
    fp = blob_fingerprint(blob)
    if fp is None:
        raise ApiError("internal", "A stored secret is damaged and cannot be read; reconnect or re-enter it.")
    key = _known(ws).get(fp) or _known(ws, reload=True).get(fp)
    if key is None:
        raise _missing_key_error()
    return key


def unseal(ws: Workspace, aad: str, blob: bytes) -> bytes:
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

    def __init__(self, ws: Workspace, target: Key, source: str) -> None:
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
        store = KeyStore(self.ws)
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
                    write_0600(store.file, ("\n".join(k.encoded() for k in keep) + "\n").encode())
        forget_cached_keys(self.ws)
        return dropped


def begin_rotation(ws: Workspace, sealed_fps: set[bytes]) -> Rotation:
    """Choose the new key and store it beside the old ones before anything is re-sealed.

    With WSCTL_MASTER_KEY the target is that key; there is something to do only when some blob
    is sealed under another key (WSCTL_MASTER_KEY_PREVIOUS or the old keyring/file key).
    """
    env_current, _ = env_keys()
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
    store = KeyStore(ws)
    with store.lock():
        keys, where = store.read_all()
        new = Key(secrets.token_bytes(32))
        written = store.write([new, *keys], where)
        if written == "keyring" and store.file.exists():
            write_0600(store.file, ("\n".join(k.encoded() for k in [new, *keys]) + "\n").encode())
        if new.fp not in {k.fp for k in store.read_all()[0]}:
            raise ApiError("internal", "Could not store the new workspace key; nothing was changed.")
    forget_cached_keys(ws)
    return Rotation(ws, new, written)
