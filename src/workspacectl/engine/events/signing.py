"""Standard Webhooks signatures: what a subscriber checks to know a call is ours and unchanged.

The secret is `whsec_` + base64 of 32 random bytes. Each call carries
    webhook-id         the delivery's id (the same on every retry: a subscriber drops repeats by it)
    webhook-timestamp  seconds since the epoch when this attempt was signed
    webhook-signature  "v1," + base64(HMAC-SHA256(secret bytes, "{id}.{timestamp}.{body}"))
which is what the `standardwebhooks` package (and every library of the specification) verifies.
The timestamp is the machine's real time, not the engine clock: a subscriber compares it with its
own clock (a tolerance of 5 minutes), and WSCTL_NOW_OFFSET_SECONDS must not make calls look stale.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import time

PREFIX = "whsec_"
SECRET_BYTES = 32


def new_secret() -> str:
    return PREFIX + base64.b64encode(os.urandom(SECRET_BYTES)).decode()


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret[len(PREFIX):] if secret.startswith(PREFIX) else secret)
    mac = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def headers(secret: str, msg_id: str, body: bytes, timestamp: int | None = None) -> dict[str, str]:
    ts = int(time.time()) if timestamp is None else timestamp
    return {"webhook-id": msg_id, "webhook-timestamp": str(ts), "webhook-signature": sign(secret, msg_id, ts, body),
            "content-type": "application/json", "user-agent": "wsctl-webhooks"}
