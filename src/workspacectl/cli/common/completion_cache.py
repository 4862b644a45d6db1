"""A short-lived local cache of what `wsctl complete-values KIND` answers, so a <TAB> on an id or a
name answers without opening the workspace or calling the server (bench/completion.py).

- One file per (who and where, KIND): `<cache dir>/completion/<key>-<KIND>.tsv`, the
  `VALUE<TAB>DESCRIPTION` lines of ids and names (never a secret: no token, key or credential
  value is ever listed; the key is a hash), mode 0600 in a 0700 folder, written to a temp file and
  renamed.
- The key hashes what decides whose names they are: `--profile`, WSCTL_PROFILE, WSCTL_SERVER,
  WSCTL_WORKSPACE, hashes of WSCTL_TOKEN and WSCTL_API_KEY, and the config file's size and
  modification time (signing in, switching or editing a profile changes it).
- Fresh for TTL seconds. Any command that calls a route with a method other than GET (create,
  rename, delete, sign in...) drops the whole cache first (backend/base.py ON_WRITE), so the
  next completion asks again; names changed by someone else show within TTL.

Imported before Typer on the completion path (cli/main.py): it imports nothing heavy, not even
pathlib.
"""
from __future__ import annotations

import hashlib
import os
import sys
import time

TTL = 60.0   # seconds
KINDS = ("credential", "specialist", "skill", "workflow", "member", "key")


def _user_dir(kind: str) -> str:
    """platformdirs' user_cache_dir / user_config_dir of wsctl. On Linux and the BSDs (XDG) worked
    out here: platformdirs imports pathlib, which alone costs about what the rest of a cached
    completion does (pathlib, re, urllib.parse, ipaddress)."""
    home = os.environ.get("WSCTL_HOME")
    if home:
        return os.path.join(os.path.expanduser(home), "cache") if kind == "cache" else os.path.expanduser(home)
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        var, default = {"cache": ("XDG_CACHE_HOME", "~/.cache"), "config": ("XDG_CONFIG_HOME", "~/.config")}[kind]
        base = os.environ.get(var, "").strip() or os.path.expanduser(default)
        return os.path.join(base, "wsctl")
    import platformdirs

    return platformdirs.user_cache_dir("wsctl") if kind == "cache" else platformdirs.user_config_dir("wsctl")


def folder() -> str:
    return os.path.join(_user_dir("cache"), "completion")


def _digest(text: str) -> str:
    return hashlib.sha256(("wsctl completion cache\0" + text).encode("utf-8", "surrogatepass")).hexdigest()


def key(profile_flag: str | None) -> str:
    try:
        st = os.stat(os.path.join(_user_dir("config"), "config.toml"))
        config = f"{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        config = "-"
    parts = [profile_flag or "", config, *(os.environ.get(v, "") for v in
                                           ("WSCTL_PROFILE", "WSCTL_SERVER", "WSCTL_WORKSPACE", "WSCTL_HOME")),
             *(_digest(os.environ.get(v, "")) for v in ("WSCTL_TOKEN", "WSCTL_API_KEY"))]
    return _digest("\0".join(parts))[:32]


def _file(profile_flag: str | None, kind: str) -> str:
    return os.path.join(folder(), f"{key(profile_flag)}-{kind}.tsv")


def read(profile_flag: str | None, kind: str) -> list[str] | None:
    """The cached lines of KIND, or None when there are none fresh."""
    if kind not in KINDS:
        return None
    path = _file(profile_flag, kind)
    try:
        age = time.time() - os.stat(path).st_mtime
        if not 0 <= age <= TTL:
            return None
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return None


def write(profile_flag: str | None, kind: str, lines: list[str]) -> None:
    """Keep KIND's lines (never fails a completion)."""
    if kind not in KINDS:
        return
    try:
        os.makedirs(folder(), mode=0o700, exist_ok=True)
        path = _file(profile_flag, kind)
        tmp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write("".join(f"{line}\n" for line in lines))
        os.replace(tmp, path)
    except OSError:
        pass


def clear() -> None:
    """Drop every cached answer (a command is about to change something)."""
    where = folder()
    try:
        entries = os.listdir(where)
    except OSError:
        return
    for entry in entries:
        try:
            os.unlink(os.path.join(where, entry))
        except OSError:
            pass


def answer_from_cache(args: list[str]) -> bool:
    """`[--profile P] complete-values KIND [PREFIX]` answered from a fresh cache: True once printed.
    Anything else (another shape of line, no fresh entry) is False: the command runs as usual."""
    profile = None
    if args[:1] == ["--profile"] and len(args) >= 2:
        profile, args = args[1], args[2:]
    if not 2 <= len(args) <= 3 or args[0] != "complete-values":
        return False
    kind, prefix = args[1], (args[2] if len(args) == 3 else "")
    lines = read(profile, kind)
    if lines is None:
        return False
    sys.stdout.write("".join(f"{line}\n" for line in lines if line.startswith(prefix)))
    sys.stdout.flush()
    return True
