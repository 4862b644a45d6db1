"""SQL lives here, one module per area, so another store (PostgreSQL) can follow."""
from __future__ import annotations

from workspacectl.engine.db.conn import Conn

# Full Unicode case folding turns one character into at most 3 (checked over every code point in
# tests/cli/test_name_lookup.py), so a name that folds to N characters has N/3 to N of them.
MAX_FOLD_GROWTH = 3
NAME_SCAN_BATCH = 500


def name_clause(column: str, named: tuple[str, str] | None) -> tuple[str, dict]:
    """A list's `?name=` filter (engine/pagination.name_filter): the SQL to add after a WHERE, and
    its named parameters. Neither store folds case beyond ASCII (PostgreSQL's text columns use the
    "C" collation), so SQL only keeps the names whose length could fold to the wanted one, and
    fetch_named compares with Python's casefold(): the same answer on both stores."""
    if named is None:
        return "", {}
    folded = len(named[1])
    return (f" AND length({column}) BETWEEN :name_shortest AND :name_longest",
            {"name_shortest": -(-folded // MAX_FOLD_GROWTH), "name_longest": folded})


def fetch_named(conn: Conn, sql: str, args: dict, named: tuple[str, str] | None, batch: int = NAME_SCAN_BATCH) -> list:
    """The rows of a list query (id order, after `:after`, at most `:limit`), keeping only those
    whose `name` casefolds to the filter's when there is one: the query runs again from the last
    id it returned, `batch` rows at a time, until `:limit` rows match or none are left."""
    if named is None:
        return conn.execute(sql, args).fetchall()
    want, folded = args["limit"], named[1]
    step = dict(args, limit=batch)
    found: list = []
    while True:
        rows = conn.execute(sql, step).fetchall()
        found += [r for r in rows if (r["name"] or "").casefold() == folded]
        if len(found) >= want or len(rows) < batch:
            return found[:want]
        step["after"] = rows[-1]["id"]
