"""Secrets: made at random, shown once, stored as SHA-256, never printed by repr()."""
from __future__ import annotations

import hashlib
import secrets
import string

BASE62 = string.digits + string.ascii_letters


class Secret:
    """Holds a secret value; its repr and str never show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and secrets.compare_digest(self._value, other._value)

    def __hash__(self) -> int:
        return hash(sha256_hex(self._value))


def random_base62(n: int) -> str:
    return "".join(secrets.choice(BASE62) for _ in range(n))


def new_secret(prefix: str, length: int = 40) -> str:
    return prefix + random_base62(length)


def sha256_hex(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()
