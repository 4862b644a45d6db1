"""config.toml: profiles. Read with tomllib, written with tomli-w, replaced atomically.

    profile = "default"            # the profile used when none is named
    [profiles.default]
    workspace = "/path/to/ws"      # a local profile: the workspace folder and the member it acts as
    member = "um_..."
    [profiles.prod]
    server = "https://wsctl.example.com"   # a remote profile; its token is in the keyring
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from workspacectl.cli.common.paths import config_file
from workspacectl.errors import ApiError


def load() -> dict:
    path = config_file()
    try:
        f = path.open("rb")
    except FileNotFoundError:
        return {}
    import tomllib  # only with a config file: a bare --help or a WSCTL_WORKSPACE command does without

    with f:
        try:
            return tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise ApiError("invalid_request", f"{path} is not valid TOML ({e}). Fix or remove it.") from None


def save(data: dict) -> None:
    import tomli_w

    write_atomic(config_file(), tomli_w.dumps(data).encode(), 0o600)


def write_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path, mode) as f:
        f.write(data)


@contextmanager
def atomic_output(path: Path, mode: int = 0o600) -> Iterator[BinaryIO]:
    """A binary file in path's folder that lands at path by rename when the block succeeds and is
    removed when it fails: readers see the old file or the whole new one, never a part."""
    # the temp name is cut short: beside a 255-byte name (a pulled skill file may have one), the
    # full name plus prefix and suffix would pass NAME_MAX
    import tempfile  # only to write

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:40]}.", suffix=".part")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def profile_name(flag: str | None, data: dict) -> str:
    return flag or os.environ.get("WSCTL_PROFILE") or data.get("profile") or "default"


def get_profile(data: dict, name: str) -> dict:
    return dict(data.get("profiles", {}).get(name, {}))


def set_profile(name: str, values: dict, make_default: bool = False) -> bool:
    """Write a profile; it becomes the active one when asked or when no profile is active yet.
    Answers whether it is the active one."""
    data = load()
    data.setdefault("profiles", {})[name] = {k: v for k, v in values.items() if v is not None}
    if make_default or "profile" not in data:
        data["profile"] = name
    save(data)
    return data["profile"] == name
