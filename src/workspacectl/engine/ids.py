"""Ids with the contract's prefixes. Time-sortable, so ORDER BY id is creation order.

Monotonic within a process (as ULIDs): ids made in the same millisecond increment the random
part instead of drawing a new one, so one process never makes them out of order.
"""
from __future__ import annotations

import os
import threading
import time

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
_RAND_BITS = 70
_lock = threading.Lock()
_last = (0, 0)


def _randbits(k: int) -> int:
    """k random bits from os.urandom, as secrets.randbits draws them (SystemRandom.getrandbits),
    without importing secrets (and random, hmac, base64) into every command that opens a workspace."""
    n = (k + 7) // 8
    return int.from_bytes(os.urandom(n), "big") >> (n * 8 - k)


def _encode(n: int, width: int) -> str:
    out = []
    for _ in range(width):
        out.append(_CROCKFORD[n & 31])
        n >>= 5
    return "".join(reversed(out))


def new_id(prefix: str) -> str:
    """prefix_ + 10 chars of milliseconds + 14 chars of a random, per-process increasing number."""
    global _last
    with _lock:
        ms = int(time.time() * 1000)
        last_ms, last_rand = _last
        if ms <= last_ms:
            ms, rand = last_ms, last_rand + 1 + _randbits(16)
            if rand >= 1 << _RAND_BITS:
                ms, rand = last_ms + 1, _randbits(_RAND_BITS - 1)
        else:
            rand = _randbits(_RAND_BITS - 1)
        _last = (ms, rand)
    return f"{prefix}_{_encode(ms, 10)}{_encode(rand, 14)}"
