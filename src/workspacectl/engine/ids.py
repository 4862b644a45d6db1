"""Ids with the contract's prefixes. Time-sortable, so ORDER BY id is creation order."""
from __future__ import annotations

import secrets
import time

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def _encode(n: int, width: int) -> str:
    out = []
    for _ in range(width):
        out.append(_CROCKFORD[n & 31])
        n >>= 5
    return "".join(reversed(out))


def new_id(prefix: str) -> str:
    """prefix_ + 10 chars of milliseconds + 14 random chars (70 bits)."""
    ms = int(time.time() * 1000)
    return f"{prefix}_{_encode(ms, 10)}{_encode(secrets.randbits(70), 14)}"
