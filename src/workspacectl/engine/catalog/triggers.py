"""Trigger providers: the kinds of trigger that can start a workflow (seed; CONTRACT §9).

`GET /v1/triggers?q=` lists them; q matches name, service and description case-insensitively
(every word of q must match one of them). Poll ids read <service>-<event>.
"""
from __future__ import annotations

import itertools
import sqlite3

from workspacectl.engine.catalog.render import trigger_json
from workspacectl.engine.pagination import page, page_args
from workspacectl.engine.registry import Ctx, route
from workspacectl.engine.schema_blocks import PAGE, page_of, query, ref, text
from workspacectl.engine.store import catalog as store
from workspacectl.engine.validate import bad
from workspacectl.errors import ApiError

MAX_QUERY = 200


@route("GET", "/v1/triggers", scope="triggers:manage",
       query=[query("q", text(0, MAX_QUERY),
                    "Words matched in name, service and description, case-insensitively."), *PAGE],
       responses={200: page_of("triggers", ref("Trigger"))})
def list_triggers(ctx: Ctx) -> dict:
    """Every trigger provider, optionally filtered by q."""
    q = ctx.query.get("q") or ""
    if len(q) > MAX_QUERY:
        raise bad(f"Query parameter 'q' must be at most {MAX_QUERY} characters.")
    limit, after = page_args(ctx, list)
    words = [w.casefold() for w in q.split()[:20]]
    rows = list(itertools.islice((r for r in store.iter_triggers(ctx.db, after) if _matches(r, words)), limit + 1))
    return page("triggers", rows, limit, store.trigger_sort_key, trigger_json)


def _matches(row: sqlite3.Row, words: list[str]) -> bool:
    """Every word is in the name, service or description, case-insensitively for any script
    (casefold: 'STRASSE' finds 'Straße'). Done here rather than in SQL, whose lower() differs
    between SQLite (ASCII only) and PostgreSQL (by collation); the list is a few hundred rows."""
    if not words:
        return True
    text = "\n".join((row["name"] or "", row["service"] or row["id"], row["description"] or "")).casefold()
    return all(w in text for w in words)


@route("GET", "/v1/triggers/{triggerId}", scope="triggers:manage",
       responses={200: ref("TriggerDetail")})
def get_trigger(ctx: Ctx) -> dict:
    """One trigger provider by its triggerId."""
    row = store.get_trigger(ctx.db, ctx.params["triggerId"])
    if row is None:
        raise ApiError("not_found", f"No trigger provider '{ctx.params['triggerId'][:120]}'. "
                                    "Run `wsctl trigger list` to see them.")
    return trigger_json(row, with_config=True)
