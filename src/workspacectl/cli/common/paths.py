"""Where wsctl keeps things: config, the embedded workspace, the fallback secrets file.

WSCTL_HOME, when set, holds all three (tests and CI use it); otherwise platformdirs decides.
"""
from __future__ import annotations

import os
from pathlib import Path


def home() -> Path | None:
    raw = os.environ.get("WSCTL_HOME")
    return Path(raw).expanduser() if raw else None


def config_dir() -> Path:
    h = home()
    if h:
        return h
    import platformdirs

    return Path(platformdirs.user_config_dir("wsctl"))


def config_file() -> Path:
    return config_dir() / "config.toml"


def secrets_file() -> Path:
    return config_dir() / "credentials.toml"


def default_workspace() -> Path:
    h = home()
    if h:
        return h / "workspace"
    import platformdirs

    return Path(platformdirs.user_data_dir("wsctl")) / "workspace"

