"""postgresql:// workspace URLs: recognised, and shown or stored without their password.

Pure string work (no psycopg), so the CLI can name a PostgreSQL workspace without importing it.
"""
from __future__ import annotations

import urllib.parse

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(location: object) -> bool:
    return isinstance(location, str) and location.startswith(POSTGRES_SCHEMES)


def _password_as(url: str, replacement: str) -> str:
    """The URL with its password replaced by `replacement` (":***" or nothing); an unparsable URL
    is shown as postgresql://*** whole, since it might hold a password anywhere."""
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:
        return "postgresql://***"
    if password is None:
        return url
    user, host = parts.netloc.rsplit("@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user.split(':', 1)[0]}{replacement}@{host}"))


def redacted(url: str) -> str:
    """The URL with its password shown as ***: the only form a message, log or status shows."""
    return _password_as(url, ":***")


def without_password(url: str) -> str:
    """The URL with no password at all: what a profile may store (libpq reads the password from
    PGPASSWORD or ~/.pgpass)."""
    return _password_as(url, "")


def shown(location: str) -> str:
    """A workspace location as messages show it (a folder as is, a URL without its password)."""
    return redacted(location) if is_postgres_url(location) else location
