"""The operation search index (engine/catalog/search.py keeps it in step with the catalog).

`operation_search` is an FTS5 table of *analyzed* text: catalog_search_text has already split,
lower-cased, dropped stop words and stemmed it, so FTS5's tokenizer only splits on spaces.
One column per field so bm25() can weight them: an operation's name and summary say what it
does far better than its long description or its parameter names.

`operation_search_docs` maps an FTS row to its operation and holds the few facts the re-rank
needs without reading the catalog: service, method, path shape and the action the name says.
`operation_search_terms` holds document frequencies per service (the re-rank's term weights,
and which service a phrase's words belong to).
"""
from workspacectl.engine.db import execute_script


def up(conn):
    execute_script(conn, """
    CREATE VIRTUAL TABLE operation_search USING fts5(
        name, summary, path, tags, body, params,
        tokenize = "unicode61 remove_diacritics 2"
    );
    CREATE TABLE operation_search_docs (
        rowid INTEGER PRIMARY KEY,
        op_id TEXT NOT NULL UNIQUE,
        service TEXT NOT NULL,
        method TEXT NOT NULL,
        shape TEXT NOT NULL CHECK (shape IN ('item', 'collection')),
        action TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX operation_search_docs_service ON operation_search_docs(service);
    -- in how many of a service's operations each term occurs (term '' : how many it has);
    -- summed, the idf of a term; compared, which service a phrase's words belong to
    CREATE TABLE operation_search_terms (
        term TEXT NOT NULL,
        service TEXT NOT NULL,
        df INTEGER NOT NULL,
        PRIMARY KEY (term, service)
    ) WITHOUT ROWID;
    CREATE INDEX operation_search_terms_service ON operation_search_terms(service);
    -- analyzer version the index was built with; a newer one rebuilds it on first search
    CREATE TABLE operation_search_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """)
