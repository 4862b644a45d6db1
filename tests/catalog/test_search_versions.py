"""Two wsctl versions with different analyzers on one workspace (issue 13: the index must not flap).

The door under test (local CLI and engine, `wsctl serve` on SQLite and on PostgreSQL) runs this
code's analyzer version; the other version is the same search run in this process on the same
store with its analyzer version given by parameter (catalog_search.search(..., analyzer=)). A
rebuild of the lexical index shows as new rowids of the operations indexed (rows deleted and
inserted again); a service indexed again alone leaves the other services' rows as they were.
"""
from __future__ import annotations

import datetime
import textwrap

import pytest

from tests.catalog.test_search import QUUXPAY_V2, import_toml, op_ids, search
from tests.conftest import workspace_db
from workspacectl.engine.catalog import search as catalog_search
from workspacectl.engine.workspaces import open_workspace

THIS = catalog_search.ANALYZER_VERSION
NEWER = str(int(THIS) + 1)
OLDER = str(int(THIS) - 1)

# sorts before every other service: a whole rebuild (services indexed in name order) moves the
# rowids of every service after it
AARDVARK = textwrap.dedent("""
    service = "aaardvark"
    name = "Aaardvark"
    description = "Burrows."
    credentialType = "apiKey"
    [[operations]]
    name = "dig-burrow"
    summary = "Dig a burrow"
    method = "POST"
    path = "/burrows"
    [[operations]]
    name = "fill-burrow"
    summary = "Fill a burrow in"
    method = "DELETE"
    path = "/burrows/{id}"
""")


@pytest.fixture
def toys(backend):
    from tests.catalog.test_search import QUUXPAY, ZORBLY

    import_toml(backend, ZORBLY)
    import_toml(backend, QUUXPAY)
    return backend


class Store:
    """The door's workspace seen from this process: meta and index rows read directly, and the
    other version's search run on it."""

    def __init__(self, backend):
        self.db = workspace_db(backend.workspace)
        self.ws = open_workspace(str(backend.workspace))

    def meta(self, key: str):
        row = self.db.execute("SELECT value FROM operation_search_meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def rowids(self, service: str) -> dict:
        return dict(self.db.execute("SELECT op_id, rowid FROM operation_search_docs WHERE service = ?",
                                    (service,)).fetchall())

    def search(self, q: str, analyzer: str, **kw) -> list[str]:
        return [op for op, _ in catalog_search.search(self.ws.conn(), q, analyzer=analyzer, **kw)]

    def close(self):
        self.ws.conn().close()
        self.db.close()


@pytest.fixture
def store(toys):
    s = Store(toys)
    yield s
    s.close()


def test_an_older_version_searches_a_newer_index_without_rebuilding_it(toys, store):
    assert op_ids(search(toys, "refund a charge"))[0] == "quuxpay.refund-charge"
    assert store.meta("analyzer_version") == THIS
    built = store.rowids("zorbly")

    # the newer version takes the index over, once
    assert store.search("refund a charge", NEWER)[0] == "quuxpay.refund-charge"
    assert store.meta("analyzer_version") == NEWER
    newer_rows = store.rowids("zorbly")
    assert newer_rows.keys() == built.keys() and newer_rows != built

    # then both search in turn (the door on every way in, the CLI too): nobody rebuilds
    for _ in range(3):
        assert op_ids(search(toys, "refund a charge"))[0] == "quuxpay.refund-charge"
        assert op_ids(search(toys, "remove a widget", service="zorbly"))[0] == "zorbly.delete-widget"
        assert store.search("delete a widget", NEWER)[0] == "zorbly.delete-widget"
    r = toys.wsctl("catalog", "search", "refund a charge", "--json")
    assert r.json["operations"][0]["opId"] == "quuxpay.refund-charge"
    assert store.meta("analyzer_version") == NEWER
    assert store.rowids("zorbly") == newer_rows
    assert store.meta("stale_services") is None

    # the older version imports: the service is indexed with its analyzer (both find it at once)
    # and named stale; no rebuild
    import_toml(toys, QUUXPAY_V2)
    import_toml(toys, AARDVARK)
    assert store.meta("analyzer_version") == NEWER
    assert store.meta("stale_services") == '["aaardvark", "quuxpay"]'
    assert store.rowids("zorbly") == newer_rows
    assert op_ids(search(toys, "issue store credit"))[0] == "quuxpay.issue-credit"
    assert op_ids(search(toys, "dig a burrow"))[0] == "aaardvark.dig-burrow"

    # the newer version's next search indexes those services again, those alone, once
    quux = store.rowids("quuxpay")
    assert store.search("issue store credit", NEWER)[0] == "quuxpay.issue-credit"
    assert store.meta("stale_services") is None
    assert store.rowids("zorbly") == newer_rows
    caught_up = store.rowids("quuxpay")
    assert caught_up.keys() == quux.keys() and caught_up != quux
    for _ in range(2):
        assert store.search("dig a burrow", NEWER)[0] == "aaardvark.dig-burrow"
        assert op_ids(search(toys, "fill a burrow in"))[0] == "aaardvark.fill-burrow"
    assert store.rowids("quuxpay") == caught_up and store.rowids("zorbly") == newer_rows

    # a service the older version removes is gone for both
    assert toys.api("DELETE", "/v1/admin/catalog/aaardvark").status == 204
    assert "aaardvark" not in {h["service"] for h in search(toys, "dig a burrow", limit=100)}
    assert not [op for op in store.search("dig a burrow", NEWER, limit=100) if op.startswith("aaardvark.")]
    assert store.meta("analyzer_version") == NEWER and store.rowids("zorbly") == newer_rows


def test_this_version_keeps_its_index_from_an_older_one(toys, store):
    assert op_ids(search(toys, "refund a charge"))[0] == "quuxpay.refund-charge"
    built = store.rowids("zorbly")
    for _ in range(3):
        assert store.search("refund a charge", OLDER)[0] == "quuxpay.refund-charge"
        assert op_ids(search(toys, "delete a widget"))[0] == "zorbly.delete-widget"
    assert store.meta("analyzer_version") == THIS
    assert store.rowids("zorbly") == built
    # the older version's import is caught up by this version's next search, alone
    catalog_search.reindex_service(store.ws.conn(), "quuxpay", analyzer=OLDER)
    assert store.meta("stale_services") == '["quuxpay"]'
    assert op_ids(search(toys, "refund a charge"))[0] == "quuxpay.refund-charge"
    assert store.meta("stale_services") is None and store.meta("analyzer_version") == THIS
    assert store.rowids("zorbly") == built


def test_an_index_its_newer_version_abandoned_is_taken_over(toys, store):
    """A workspace gone back to an older version for good: once the newer analyzer has not
    searched for ABANDONED_DAYS, the older one builds its own index again."""
    assert store.search("refund a charge", NEWER)[0] == "quuxpay.refund-charge"
    assert store.meta("analyzer_version") == NEWER
    assert store.meta("analyzer_seen") == datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    long_ago = (datetime.datetime.now(datetime.UTC)
                - datetime.timedelta(days=catalog_search.ABANDONED_DAYS + 1)).strftime("%Y-%m-%d")
    store.db.execute("UPDATE operation_search_meta SET value = ? WHERE key = 'analyzer_seen'", (long_ago,))
    assert op_ids(search(toys, "refund a charge"))[0] == "quuxpay.refund-charge"
    assert store.meta("analyzer_version") == THIS
    built = store.rowids("zorbly")
    assert op_ids(search(toys, "delete a widget"))[0] == "zorbly.delete-widget"
    assert store.rowids("zorbly") == built


def test_the_daily_stamp_never_fails_a_search(toys, monkeypatch):
    """The stamp is the one write a current index's search makes (once a day): with the write
    lock held elsewhere the search still answers, unstamped, and the next one stamps."""
    if toys.door == "postgres":
        pytest.skip("holds SQLite's write lock from a second connection")
    import sqlite3

    assert op_ids(search(toys, "refund a charge"))[0] == "quuxpay.refund-charge"
    db = sqlite3.connect(str(toys.workspace / "workspace.db"), isolation_level=None)
    db.execute("UPDATE operation_search_meta SET value = '2000-01-01' WHERE key = 'analyzer_seen'")
    monkeypatch.setenv("WSCTL_BUSY_TIMEOUT_MS", "50")
    ws = open_workspace(str(toys.workspace))
    try:
        db.execute("BEGIN IMMEDIATE")
        assert next(op for op, _ in catalog_search.search(ws.conn(), "refund a charge")) == "quuxpay.refund-charge"
        db.execute("ROLLBACK")
        assert db.execute("SELECT value FROM operation_search_meta WHERE key = 'analyzer_seen'").fetchone()[0] \
            == "2000-01-01"
        catalog_search.search(ws.conn(), "refund a charge")
        assert db.execute("SELECT value FROM operation_search_meta WHERE key = 'analyzer_seen'").fetchone()[0] \
            == datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    finally:
        ws.conn().close()
        db.close()
