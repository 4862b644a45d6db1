"""Catalog search on a PostgreSQL workspace answers what it answers on SQLite (issue 11 item 2):
the same top 5, in the same order, for every labelled phrase over the 12 shared documents. Only
the candidate lookup differs (FTS5's bm25 there; the postings of m019 summed with the same
formula here); the re-rank is shared code."""
from __future__ import annotations

from tests.search_labels import LABELS, import_shared_corpus_through_the_route, openapi_files
from tests.vault_helpers import open_ws


def _top5(conn) -> dict[str, list[str]]:
    from workspacectl.engine.catalog import search as catalog_search

    return {phrase: [op for op, _ in catalog_search.search(conn, phrase, limit=10)][:5] for phrase, _, _ in LABELS}


def test_top_five_equal_sqlite_for_every_labelled_phrase(shared_corpus, pg_workspace, monkeypatch):
    assert len(openapi_files()) == 12, "the shared OpenAPI documents are not there (set WSCTL_OPENAPI_DIR)"
    sqlite_ws, pg_ws = open_ws(shared_corpus[0]), open_ws(pg_workspace)
    try:
        answers = import_shared_corpus_through_the_route(pg_ws)
        assert {status for status, _ in answers.values()} <= {200, 201}, answers
        conn = pg_ws.conn()
        # the postings the trigger kept through the imports and the built-in services' deletion
        # are exactly the (term, operation) pairs of the index
        want = conn.execute("SELECT count(*) FROM operation_search s CROSS JOIN LATERAL "
                            "(SELECT DISTINCT jsonb_object_keys(c) FROM unnest(s.term_counts) AS c) t").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM operation_search_postings").fetchone()[0] == want > 0

        expected, got = _top5(sqlite_ws.conn()), _top5(conn)
        differ = {p: (expected[p], got[p]) for p in expected if expected[p] != got[p]}
        assert not differ, differ
        assert len(expected) == len(LABELS) >= 60

        # a MATCH over at most MATCH_POSTINGS postings (a large catalog's bound, made small here
        # so these phrases reach it) leaves the same terms out on both stores
        from workspacectl.engine.catalog import search as catalog_search

        monkeypatch.setattr(catalog_search, "MATCH_POSTINGS", 150)
        capped, got = _top5(sqlite_ws.conn()), _top5(conn)
        assert capped != expected       # the bound was reached, and changed some answers
        differ = {p: (capped[p], got[p]) for p in capped if capped[p] != got[p]}
        assert not differ, differ
    finally:
        sqlite_ws.conn().close()
        pg_ws.conn().close()
