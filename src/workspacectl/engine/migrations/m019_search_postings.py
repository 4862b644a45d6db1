"""m019_search_postings: per-term postings of the operation search index, PostgreSQL only.

SQLite's FTS5 keeps doclists: for a query it reads only the rows of the query's terms. The
PostgreSQL index (m003) found the rows with its GIN index but then scored every match from the
row's `term_counts` (a TOASTed jsonb[] read once per term and column): a phrase with common-ish
terms matched ~1,500 of 3,481 operations and cost ~150 ms. `operation_search_postings` is the
doclist: one row per (term, operation) with the term's count in each FTS column and the row's
length, kept by a trigger from `term_counts` (so the store writes the index as before), read
through its primary key by store/catalog_search.match, which sums bm25 per operation over these
small rows and reads the text columns of the best `limit` only. `operation_search_lengths` (same
trigger) holds each row's length alone, so the row count and average length the formula needs
are a scan of a narrow table, not of operation_search's wide rows. Nothing changes on SQLite.
"""
from workspacectl.engine.db.conn import Conn


def up(conn: Conn) -> None:
    pass


POSTGRES_SQL = """
CREATE TABLE operation_search_postings (
    term TEXT COLLATE "C" NOT NULL,
    rowid BIGINT NOT NULL REFERENCES operation_search(rowid) ON DELETE CASCADE,
    ntokens BIGINT NOT NULL,
    n_name INTEGER NOT NULL,
    n_summary INTEGER NOT NULL,
    n_path INTEGER NOT NULL,
    n_tags INTEGER NOT NULL,
    n_body INTEGER NOT NULL,
    n_params INTEGER NOT NULL,
    PRIMARY KEY (term, rowid)
);
CREATE INDEX operation_search_postings_rowid ON operation_search_postings(rowid);
-- each row's length alone: bm25's row count and average length are a scan of this narrow
-- table, not of operation_search's wide rows (a counter row updated per insert would bloat:
-- an import writes thousands of versions of it in one transaction)
CREATE TABLE operation_search_lengths (
    rowid BIGINT PRIMARY KEY REFERENCES operation_search(rowid) ON DELETE CASCADE,
    ntokens BIGINT NOT NULL
);

CREATE FUNCTION wsctl_search_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        DELETE FROM operation_search_postings WHERE rowid = OLD.rowid;
        DELETE FROM operation_search_lengths WHERE rowid = OLD.rowid;
    END IF;
    INSERT INTO operation_search_postings
        (term, rowid, ntokens, n_name, n_summary, n_path, n_tags, n_body, n_params)
    SELECT t.term, NEW.rowid, NEW.ntokens,
           COALESCE((NEW.term_counts[1] ->> t.term)::int, 0), COALESCE((NEW.term_counts[2] ->> t.term)::int, 0),
           COALESCE((NEW.term_counts[3] ->> t.term)::int, 0), COALESCE((NEW.term_counts[4] ->> t.term)::int, 0),
           COALESCE((NEW.term_counts[5] ->> t.term)::int, 0), COALESCE((NEW.term_counts[6] ->> t.term)::int, 0)
    FROM (SELECT DISTINCT jsonb_object_keys(c) AS term FROM unnest(NEW.term_counts) AS c) t;
    INSERT INTO operation_search_lengths (rowid, ntokens) VALUES (NEW.rowid, NEW.ntokens);
    RETURN NULL;
END $$;
CREATE TRIGGER operation_search_postings AFTER INSERT OR UPDATE ON operation_search
    FOR EACH ROW EXECUTE FUNCTION wsctl_search_postings();

-- the rows already indexed
INSERT INTO operation_search_lengths (rowid, ntokens) SELECT rowid, ntokens FROM operation_search;
INSERT INTO operation_search_postings (term, rowid, ntokens, n_name, n_summary, n_path, n_tags, n_body, n_params)
SELECT t.term, s.rowid, s.ntokens,
       COALESCE((s.term_counts[1] ->> t.term)::int, 0), COALESCE((s.term_counts[2] ->> t.term)::int, 0),
       COALESCE((s.term_counts[3] ->> t.term)::int, 0), COALESCE((s.term_counts[4] ->> t.term)::int, 0),
       COALESCE((s.term_counts[5] ->> t.term)::int, 0), COALESCE((s.term_counts[6] ->> t.term)::int, 0)
FROM operation_search s
CROSS JOIN LATERAL (SELECT DISTINCT jsonb_object_keys(c) AS term FROM unnest(s.term_counts) AS c) t;
"""
