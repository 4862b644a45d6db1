"""GET /v1/events: the cursor-paged feed of what happened.

Oldest first by default, so a follower keeps the answer's `cursor` and asks again for what came
after it (`wsctl events --follow`, `wsctl vault run --watch`); `order=desc` is newest first (what
`wsctl events` shows). Filters: `type` (comma-separated types, `credential.*` for a family),
`subject` (comma-separated subject ids).

Who sees what: an owner or admin every event; any other member only the credential events of the
credentials it owns or is granted now (so `vault run --watch` works for everyone, and nothing
about others' keys, skills or members is shown). A platform key needs vault:read and sees what
its creator sees; a personal key is refused by the scope table. A key limited to named credentials
(engine/vault/key_limits.py) sees only the events of those credentials, its creator's role aside.

Cursors are event seqs: `nextCursor` continues in the order asked (null on the last page);
`cursor` is always where a follower resumes oldest-first: after the newest event of the answer;
on the last page, after the newest event in the feed when the request began (the events its
filters skipped are not scanned again); with no cursor and order=desc, after the newest event in
the feed.
"""
from __future__ import annotations

from workspacectl.engine import pagination
from workspacectl.engine.events.record import EVENT_TYPES, event_json
from workspacectl.engine.registry import Ctx, route
from workspacectl.engine.schema_blocks import PAGE, STR, array, nullable, obj, query, ref, text
from workspacectl.engine.store import events as store
from workspacectl.engine.validate import bad

MAX_FILTERS = 50
FAMILIES = tuple(sorted({t.split(".")[0] for t in EVENT_TYPES}))


def _list(ctx: Ctx, name: str) -> list[str]:
    raw = ctx.query.get(name) or ""
    items = [x.strip() for x in raw.split(",") if x.strip()]
    if len(items) > MAX_FILTERS:
        raise bad(f"Query parameter '{name}' takes at most {MAX_FILTERS} comma-separated values.")
    return items


def type_filter(values: list[str]) -> tuple[list[str], list[str]]:
    """(exact types, prefixes) of a `type` filter; 400 naming the known types for anything else."""
    types, prefixes = [], []
    for t in values:
        if t in EVENT_TYPES:
            types.append(t)
        elif t.endswith(".*") and t[:-2] in FAMILIES:
            prefixes.append(t[:-1])
        else:
            raise bad(f"Unknown event type '{t[:100]}'. Types: {', '.join(EVENT_TYPES)} (or a family such as "
                      "credential.*).")
    return types, prefixes


_FEED_QUERY = [
    query("type", STR, f"Comma-separated event types or families (credential.*), at most {MAX_FILTERS}."),
    query("subject", STR, f"Comma-separated subject ids, at most {MAX_FILTERS}."),
    query("order", text(enum=["asc", "desc"]), "asc: oldest first (default; follow with `cursor`), desc: newest first."),
    *PAGE,
]


@route("GET", "/v1/events", scope="vault:read",
       query=_FEED_QUERY,
       responses={200: obj({
           "events": array(ref("Event")), "nextCursor": nullable(STR),
           "cursor": text(description="Where a follower resumes, oldest first: pass it as `cursor` later.")},
           required="all")},
       summary="The event feed: what happened (credentials, keys, members, skills, memory), cursor-paged.")
def list_events(ctx: Ctx) -> dict:
    limit, position = pagination.page_args(ctx, int)
    order = ctx.query.get("order") or "asc"
    if order not in ("asc", "desc"):
        raise bad("Query parameter 'order' is asc (oldest first, the default) or desc (newest first).")
    types, prefixes = type_filter(_list(ctx, "type"))
    subjects = _list(ctx, "subject")
    newest_first = order == "desc"
    # Read first: every event up to it has committed (seqs are drawn in commit order, record.py), so
    # once the rows after the position are all read, a follower may resume from here, past the
    # events its filters skip, instead of scanning them again at every poll.
    end = store.last_event_seq(ctx.db)
    rows = store.list_events(ctx.db, after=None if newest_first else position,
                             before=position if newest_first else None, limit=limit + 1, types=types,
                             prefixes=prefixes, subjects=subjects,
                             visible_to=None if ctx.caller.is_admin and ctx.caller.credentials is None
                             else ctx.caller.member_id, newest_first=newest_first, only=ctx.caller.credentials)
    body = pagination.page("events", rows, limit, lambda r: r["seq"], event_json)
    shown = rows[:limit]
    if newest_first:
        resume = end if position is None else max([r["seq"] for r in shown] + [position - 1])
    elif body["nextCursor"] is None:
        resume = max([end, position or 0] + [r["seq"] for r in shown])
    else:
        resume = max(r["seq"] for r in shown)
    body["cursor"] = pagination.encode_cursor(max(resume, 0))
    return body
