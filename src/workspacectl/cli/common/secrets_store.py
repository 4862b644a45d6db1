"""Client-side secret storage: the OS keyring (service "wsctl"), every call bounded by a timeout;
after one call times out the process stops asking the keyring, so a command waits at most once.

Where no keyring backend works (headless CI), secrets go to credentials.toml next to the
config, mode 0600, and one warning is printed on stderr per process.
"""
from __future__ import annotations

import sys
import threading
import tomllib
from collections.abc import Callable
from typing import Any

from workspacectl.cli.common.config import write_atomic
from workspacectl.cli.common.paths import secrets_file

SERVICE = "wsctl"
TIMEOUT_SECONDS = 3.0
_warned = False
_hung = False  # a keyring call timed out: do not wait on it again in this process
_UNSET = object()


class KeyringUnavailable(Exception):
    pass


def _bounded(fn: Callable[..., Any], *args: str) -> Any:
    """Run a keyring call in a thread; give up after TIMEOUT_SECONDS (a hung D-Bus, a locked vault)."""
    global _hung
    if _hung:
        raise KeyringUnavailable("timed out earlier")
    box: dict = {}

    def run() -> None:
        try:
            import keyring
            from keyring.backends import fail

            if isinstance(keyring.get_keyring(), fail.Keyring):
                raise KeyringUnavailable("no keyring backend")
            box["value"] = fn(keyring, *args)
        except Exception as e:  # any backend failure means: use the file
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(TIMEOUT_SECONDS)
    if t.is_alive():
        _hung = True
        raise KeyringUnavailable("timed out")
    if "error" in box:
        raise KeyringUnavailable(str(box.get("error", "timed out")))
    return box.get("value")


def _warn_once() -> None:
    global _warned
    if not _warned:
        _warned = True
        print(f"warning: no usable OS keyring; storing secrets in {secrets_file()} (mode 0600)", file=sys.stderr)


def _read_file() -> dict:
    try:
        with secrets_file().open("rb") as f:
            return tomllib.load(f)
    except (FileNotFoundError, tomllib.TOMLDecodeError):
        return {}


def _write_file(data: dict) -> None:
    import tomli_w

    write_atomic(secrets_file(), tomli_w.dumps(data).encode(), 0o600)


def lookup(name: str) -> tuple[str | None, str]:
    """(secret, where it came from: "keyring", "credentials file" or "none")."""
    try:
        value = _bounded(lambda k, n: k.get_password(SERVICE, n), name)
        if value is not None:
            return value, "keyring"
    except KeyringUnavailable:
        pass
    value = _read_file().get(name)
    return (value, "credentials file") if value else (None, "none")


def get(name: str) -> str | None:
    return lookup(name)[0]


def set(name: str, value: str) -> str:
    """Store a secret; answer where it went ("keyring" or the file path)."""
    try:
        _bounded(lambda k, n, v: k.set_password(SERVICE, n, v), name, value)
        return "keyring"
    except KeyringUnavailable:
        _warn_once()
        data = _read_file()
        data[name] = value
        _write_file(data)
        return str(secrets_file())


def delete(name: str) -> None:
    try:
        _bounded(lambda k, n: k.delete_password(SERVICE, n), name)
    except KeyringUnavailable:
        pass
    data = _read_file()
    if name in data:
        del data[name]
        _write_file(data)
