"""A project's look: its `icon` (one emoji) and `workerColor` (a colour name), with the defaults a
project answers when none was set (the seed types both as strings, never null)."""
from __future__ import annotations

from workspacectl.engine import validate as v

DEFAULT_ICON = "🤖"
DEFAULT_COLOR = "blue"
MAX_ICON = 32        # characters: the longest emoji sequences (a family with skin tones) are ~11
MAX_COLOR = 40


def icon(body: dict) -> str | None:
    """The `icon` of a body: absent (v._MISSING kept out: None means "not given"), null (back to
    the default), or exactly one emoji: one grapheme cluster that is an emoji, flags, keycaps,
    skin tones and ZWJ sequences included (the `emoji` package's list, Unicode's emoji data)."""
    value = v.string(body, "icon", required=False, min_len=0, max_len=MAX_ICON)
    if value is None:
        return None
    import emoji

    if not emoji.is_emoji(value):
        shown = repr(value[:MAX_ICON])
        raise v.bad(f"'icon' must be one emoji (such as 🎧 or 👩🏽‍💻), not {shown}; "
                    "send null for the default.")
    return value


def worker_color(body: dict) -> str | None:
    """The `workerColor`: null (the default), or a colour name: 1 to 40 letters (any script),
    spaces or hyphens (`teal`, `dark blue`, `rosé`)."""
    value = v.string(body, "workerColor", required=False, min_len=0, max_len=MAX_COLOR)
    if value is None:
        return None
    if not value.strip() or not all(c.isalpha() or c in " -" for c in value):
        raise v.bad(f"'workerColor' must be a colour name of letters, spaces or hyphens (such as teal or "
                    f"dark blue), not {value[:MAX_COLOR]!r}; send null for the default.")
    return value.strip()
