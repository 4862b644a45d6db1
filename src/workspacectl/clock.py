"""The one source of "now". WSCTL_NOW_OFFSET_SECONDS shifts it (drills and expiry tests)."""
from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta


def offset_seconds() -> float:
    raw = os.environ.get("WSCTL_NOW_OFFSET_SECONDS", "").strip()
    try:
        return float(raw) if raw else 0.0
    except ValueError:
        return 0.0


def now() -> datetime:
    return datetime.now(UTC) + timedelta(seconds=offset_seconds())


def iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_iso() -> str:
    """iso(now()) without strftime (about half the time): now() is UTC, so its text ends "+00:00"."""
    return now().isoformat(timespec="seconds")[:-6] + "Z"


def parse_iso(text: str) -> datetime:
    """Parse an ISO 8601 timestamp; a naive one is taken as UTC."""
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def later(seconds: float) -> str:
    return iso(now() + timedelta(seconds=seconds))
