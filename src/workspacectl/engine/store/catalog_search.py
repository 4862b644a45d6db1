"""SQL of the operation search index (tables in migrations/m003_catalog_search.py).

Reads the catalog tables (integrations, operations); writes only the operation_search* tables.
"""
from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterable

from workspacectl.engine.db.conn import Conn, Row

FTS_COLUMNS = ("name", "summary", "path", "tags", "body", "params")
# The row of operation_search_terms whose df is the service's number of indexed operations
# (no analyzed term is empty).
DOC_COUNT_TERM = ""


def operations_of_service(conn: Conn, service: str) -> list[Row]:
    return conn.execute(
        "SELECT op_id, service, name, summary, description, method, path, tags, params_json "
        "FROM operations WHERE service = ? ORDER BY position, op_id", (service,)).fetchall()


def catalog_services(conn: Conn) -> list[Row]:
    return conn.execute("SELECT service, name FROM integrations ORDER BY service").fetchall()


def delete_service_docs(conn: Conn, service: str) -> None:
    conn.execute("DELETE FROM operation_search WHERE rowid IN "
                 "(SELECT rowid FROM operation_search_docs WHERE service = ?)", (service,))
    conn.execute("DELETE FROM operation_search_docs WHERE service = ?", (service,))
    conn.execute("DELETE FROM operation_search_terms WHERE service = ?", (service,))
    conn.execute("DELETE FROM operation_vectors WHERE service = ?", (service,))
    conn.execute("DELETE FROM operation_model_vectors WHERE service = ?", (service,))
    # the service's vector sets: deleted by m022's trigger with its indexed rows


def delete_all_docs(conn: Conn) -> None:
    conn.execute("DELETE FROM operation_search")
    conn.execute("DELETE FROM operation_search_docs")
    conn.execute("DELETE FROM operation_search_terms")
    conn.execute("DELETE FROM operation_vectors")
    conn.execute("DELETE FROM operation_model_vectors")
    conn.execute("DELETE FROM operation_search_vector_sets")


def insert_doc(conn: Conn, op_id: str, service: str, method: str, shape: str, action: str,
               columns: dict[str, str]) -> None:
    cur = conn.execute(
        "INSERT INTO operation_search_docs (op_id, service, method, shape, action) VALUES (?, ?, ?, ?, ?)",
        (op_id, service, method, shape, action))
    conn.execute(
        f"INSERT INTO operation_search (rowid, {', '.join(FTS_COLUMNS)}) VALUES (?, {', '.join('?' * len(FTS_COLUMNS))})",
        (cur.lastrowid, *(columns[c] for c in FTS_COLUMNS)))


def insert_service_terms(conn: Conn, service: str, dfs: dict[str, int]) -> None:
    conn.executemany("INSERT INTO operation_search_terms (term, service, df) VALUES (?, ?, ?)",
                     [(t, service, n) for t, n in dfs.items()])


def service_term_freqs(conn: Conn, terms: Iterable[str]) -> list[tuple[str, str, int]]:
    """(term, service, df) of some terms, in (term, service) order on both stores."""
    terms = list(dict.fromkeys(terms))
    if not terms:
        return []
    return [tuple(r) for r in conn.execute(
        f"SELECT term, service, df FROM operation_search_terms WHERE term IN ({', '.join('?' * len(terms))}) "
        f"ORDER BY term, service", terms)]


class TermReader:
    """operation_search_terms rows of the terms one search asks about, each term read once: the
    search asks first for every term it may need (one statement), later asks read only terms not
    asked before (none, mostly)."""

    def __init__(self, conn: Conn):
        self.conn = conn
        self._rows: dict[str, list[tuple[str, int]]] = {}

    def read(self, terms: Iterable[str]) -> list[tuple[str, str, int]]:
        """(term, service, df) of the terms, in (term, service) order, as service_term_freqs."""
        terms = sorted(set(terms))
        missing = [t for t in terms if t not in self._rows]
        if missing:
            for t in missing:
                self._rows[t] = []
            for term, service, df in service_term_freqs(self.conn, missing):
                self._rows[term].append((service, df))
        return [(t, service, df) for t in terms for service, df in self._rows[t]]


class SearchState:
    """What search_state reads. (Plain classes in this module, not NamedTuples: making its three
    NamedTuple classes cost ~1.3 ms of every one-shot search's start.)"""

    __slots__ = ("analyzer", "docs", "generation", "operations", "seen", "stale", "vectors")

    def __init__(self, analyzer: str | None, docs: int, operations: int, vectors: int | None,
                 generation: str | None, stale: str | None, seen: str | None):
        self.analyzer = analyzer      # the analyzer version that built the lexical index
        self.docs = docs              # indexed operations
        self.operations = operations  # catalog operations
        self.vectors = vectors        # the model's vectors (None: not counted, see search_state)
        self.generation = generation  # vectors generation: set anew by every write of the index
        self.stale = stale            # services an older analyzer indexed into a newer index (JSON list)
        self.seen = seen              # the day the index's own analyzer last searched it (YYYY-MM-DD)


def search_state(conn: Conn, model: str, complete_at: list[str]) -> SearchState:
    """What every search checks before it reads the index, in one statement. The vectors are
    counted only when the generation is none of `complete_at` (generations at which the caller
    found `model`'s set complete: every write of the index sets a new one); None then. Counting
    them sums the `operations` of the model's sets, a row per service (m022), without reading
    their vectors."""
    marks = ", ".join("?" * len(complete_at)) or "NULL"
    row = conn.execute(
        "SELECT (SELECT value FROM operation_search_meta WHERE key = 'analyzer_version'), "
        "(SELECT count(*) FROM operation_search_docs), (SELECT count(*) FROM operations), "
        "CASE WHEN (SELECT value FROM operation_search_meta WHERE key = 'vectors_generation') "
        f"IN ({marks}) THEN NULL "
        "ELSE (SELECT coalesce(sum(operations), 0) FROM operation_search_vector_sets WHERE model = ?) END, "
        "(SELECT value FROM operation_search_meta WHERE key = 'vectors_generation'), "
        "(SELECT value FROM operation_search_meta WHERE key = 'stale_services'), "
        "(SELECT value FROM operation_search_meta WHERE key = 'analyzer_seen')",
        (*complete_at, model)).fetchone()
    return SearchState(*row)


def operation_count(conn: Conn) -> int:
    return conn.execute("SELECT count(*) FROM operations").fetchone()[0]


def doc_count(conn: Conn) -> int:
    return conn.execute("SELECT count(*) FROM operation_search_docs").fetchone()[0]


class Known:
    """What the caller of match() has read already: each term's document count over the whole
    index (operation_search_terms summed over services) and the index's generation (the
    vectors_generation meta, changed with every write of the index)."""

    __slots__ = ("dfs", "generation")

    def __init__(self, dfs: dict[str, int], generation: str | None):
        self.dfs, self.generation = dfs, generation


def match(conn: Conn, expression: str, weights: tuple[float, ...], limit: int,
          services: list[str] | None = None, known: Known | None = None) -> list[Row]:
    """The best `limit` rows for an FTS5 expression by weighted bm25 (lower is better)."""
    if getattr(conn, "dialect", "sqlite") == "postgres":
        return _match_postgres(conn, expression, weights, limit, services, known)
    join, args = "", []
    if services:
        # joined with the matches as the outer loop (CROSS JOIN keeps that order), not `rowid IN
        # (...)`: FTS5 would then test the MATCH row by row for each rowid listed (seconds at 100,000)
        join = (f" CROSS JOIN operation_search_docs f ON f.rowid = operation_search.rowid "
                f"AND f.service IN ({', '.join('?' * len(services))})")
        args += services
    args.append(expression)
    weight_args = ", ".join(str(float(w)) for w in weights)
    # The best `limit` rowids first, then the text of those only: ordering the joined rows read
    # every match's text into the sorter (~35% of a search's time at 100,000 operations). Ties
    # in rowid order, as FTS5 yields them (and as the PostgreSQL half orders them).
    return conn.execute(
        f"SELECT d.op_id, d.service, d.method, d.shape, d.action, "
        f"s.name, s.summary, s.path, s.tags, s.body, s.params, b.bm25 "
        f"FROM (SELECT operation_search.rowid AS rowid, bm25(operation_search, {weight_args}) AS bm25 "
        f"      FROM operation_search{join} WHERE operation_search MATCH ? "
        f"      ORDER BY bm25, operation_search.rowid LIMIT ?) b "
        f"JOIN operation_search_docs d ON d.rowid = b.rowid JOIN operation_search s ON s.rowid = b.rowid "
        f"ORDER BY b.bm25, b.rowid",
        (*args, limit)).fetchall()


# FTS5's bm25 constants (sqlite fts5_aux.c)
BM25_K1 = 1.2
BM25_B = 0.75


# index generation (a random token each write of the index sets) -> (rows, tokens) of
# operation_search_lengths: a scan of every indexed row, the same until the index is written
# again (a few kept, for a process serving several workspaces).
_LENGTHS: dict[str, tuple[int, int]] = {}
_LENGTHS_KEPT = 8


def _index_lengths(conn: Conn, generation: str | None) -> tuple[int, int] | None:
    key = generation
    if key is not None and key in _LENGTHS:
        return _LENGTHS[key]
    row = conn.execute("SELECT count(*), sum(ntokens) FROM operation_search_lengths").fetchone()
    if not row[0]:
        return None
    lengths = (int(row[0]), int(row[1]))
    if key is not None:
        while len(_LENGTHS) >= _LENGTHS_KEPT:
            _LENGTHS.pop(next(iter(_LENGTHS)))
        _LENGTHS[key] = lengths
    return lengths


def _match_postgres(conn: Conn, expression: str, weights: tuple[float, ...], limit: int,
                    services: list[str] | None, known: Known | None = None) -> list:
    """The PostgreSQL half of match(): FTS5's bm25 (idf from the terms' document counts, the
    column-weighted term frequency, the row's length against the average) summed per operation
    over the query terms' postings (m019: FTS5's doclists), best `limit` first, and only those
    rows' text read; so the same candidates come back with the same scores as on SQLite and the
    shared re-rank orders them alike. Per-term parts are added in query order."""
    terms = list(dict.fromkeys(t.strip('"') for t in expression.split(" OR ")))
    terms = [t for t in terms if t.isalnum()]
    if not terms:
        return []
    if known is not None:
        # the terms' document counts as the caller read them, and the index's size, read once
        # per index generation
        lengths = _index_lengths(conn, known.generation)
        if lengths is None:
            return []
        n_rows, n_tokens = lengths
        hits = {t: known.dfs.get(t, 0) for t in terms}
    else:
        rows = conn.execute(   # the index's size and each term's document count, in one round trip
            f"SELECT t.docs, t.tokens, v.term, (SELECT sum(df) FROM operation_search_terms st "
            f"WHERE st.term = v.term COLLATE \"C\") "
            f"FROM (SELECT count(*) AS docs, sum(ntokens) AS tokens FROM operation_search_lengths) t "
            f"CROSS JOIN (VALUES {', '.join(['(?)'] * len(terms))}) AS v(term) WHERE t.docs > 0", terms).fetchall()
        if not rows:
            return []
        n_rows, n_tokens = rows[0][0], rows[0][1]
        hits = {r[2]: r[3] or 0 for r in rows}
    idf = [max(math.log((n_rows - hits.get(t, 0) + 0.5) / (hits.get(t, 0) + 0.5)), 1e-6) for t in terms]
    query = ", ".join(f"({i}, ?, {idf[i]!r}::float8)" for i in range(len(terms)))
    freq = " + ".join(f"{float(w)}::float8 * p.n_{c}" for w, c in zip(weights, FTS_COLUMNS))
    avg = float(n_tokens) / n_rows
    norm = f"{BM25_K1}::float8 * (1 - {BM25_B}::float8 + {BM25_B}::float8 * p.ntokens / {avg!r}::float8)"
    where, args = "", list(terms)
    if services:
        where = f" AND p.rowid IN (SELECT rowid FROM operation_search_docs WHERE service IN ({', '.join('?' * len(services))}))"
        args += services
    # Each OFFSET 0 keeps its subquery whole: the postings are read term by term through the
    # primary key (the planner would rather hash-join a scan of them all), and each posting's f
    # and norm are computed once.
    return conn.execute(
        f"SELECT d.op_id, d.service, d.method, d.shape, d.action, "
        f"s.name, s.summary, s.path, s.tags, s.body, s.params, b.bm25 "
        f"FROM (SELECT x.rowid, -sum(x.idf * (x.f * {BM25_K1 + 1}::float8) / (x.f + x.norm) ORDER BY x.ord) AS bm25 "
        f"      FROM (SELECT q.ord, q.idf, p.rowid, ({freq}) AS f, {norm} AS norm "
        f"            FROM (VALUES {query}) AS q(ord, term, idf) CROSS JOIN LATERAL "
        f"                 (SELECT * FROM operation_search_postings p "
        f"                  WHERE p.term = q.term COLLATE \"C\"{where} OFFSET 0) p OFFSET 0) x "
        f"      GROUP BY x.rowid ORDER BY bm25, x.rowid LIMIT ?) b "
        f"JOIN operation_search_docs d ON d.rowid = b.rowid JOIN operation_search s ON s.rowid = b.rowid "
        f"ORDER BY b.bm25, b.rowid", (*args, limit)).fetchall()


def first_operations(conn: Conn, services: list[str], limit: int) -> list[str]:
    """The first `limit` opIds of some services, in catalog order."""
    if not services:
        return []
    return [r[0] for r in conn.execute(
        f"SELECT op_id FROM operations WHERE service IN ({', '.join('?' * len(services))}) "
        f"ORDER BY service = ? DESC, service, position LIMIT ?", (*services, services[0], limit))]


def operations_by_ids(conn: Conn, op_ids: list[str]) -> dict[str, Row]:
    if not op_ids:
        return {}
    rows = conn.execute(
        f"SELECT op_id, service, name, summary, method, path FROM operations "
        f"WHERE op_id IN ({', '.join('?' * len(op_ids))})", op_ids)
    return {r["op_id"]: r for r in rows}


def service_exists(conn: Conn, service: str) -> bool:
    return conn.execute("SELECT 1 FROM integrations WHERE service = ?", (service,)).fetchone() is not None


def get_meta(conn: Conn, key: str) -> str | None:
    row = conn.execute("SELECT value FROM operation_search_meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(conn: Conn, key: str, value: str) -> None:
    conn.execute("INSERT INTO operation_search_meta (key, value) VALUES (?, ?) "
                 "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))


def delete_meta(conn: Conn, key: str) -> None:
    conn.execute("DELETE FROM operation_search_meta WHERE key = ?", (key,))


# --- vectors (operation_search_vector_sets, migrations/m022: one row per model and service; m021's
# operation_model_vectors and m015's operation_vectors are only emptied where the catalog changes,
# for an older wsctl sharing the workspace) ----------------------------------------------------


class VectorSet:
    """One model's stored vectors, the sets of every service read in service order and each in
    op_id order: opIds, their services, their vectors (`dims` bytes each, in that order) and
    scales (embedding.quantize's columns)."""

    __slots__ = ("op_ids", "scales", "services", "vectors")

    def __init__(self, op_ids: list[str], services: list[str], vectors: bytes, scales: list[float]):
        self.op_ids, self.services, self.vectors, self.scales = op_ids, services, vectors, scales


def insert_vectors(conn: Conn, model: str, rows: list[tuple[str, str, bytes, float]]) -> None:
    """rows: (op_id, service, vector bytes, scale) made by `model` (embedding.quantize), every
    indexed operation of each service they name: each service's set is written whole, replacing
    the one it had."""
    by_service: dict[str, list[tuple[str, bytes, float]]] = {}
    for op_id, service, vector, scale in sorted(rows):
        by_service.setdefault(service, []).append((op_id, vector, scale))
    for service, items in by_service.items():
        conn.execute(
            "INSERT INTO operation_search_vector_sets (model, service, operations, op_ids, vectors, scales) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (model, service) DO UPDATE SET operations = excluded.operations, "
            "op_ids = excluded.op_ids, vectors = excluded.vectors, scales = excluded.scales",
            (model, service, len(items), json.dumps([op_id for op_id, _, _ in items]),
             b"".join(vector for _, vector, _ in items), struct.pack(f"<{len(items)}d", *(sc for _, _, sc in items))))


def delete_model_vectors(conn: Conn, model: str) -> None:
    conn.execute("DELETE FROM operation_search_vector_sets WHERE model = ?", (model,))


def vector_count(conn: Conn, model: str) -> int:
    return conn.execute("SELECT coalesce(sum(operations), 0) FROM operation_search_vector_sets WHERE model = ?",
                        (model,)).fetchone()[0]


def vector_models(conn: Conn) -> list[str]:
    return [r[0] for r in conn.execute("SELECT DISTINCT model FROM operation_search_vector_sets")]


def services_missing_vectors(conn: Conn, model: str) -> list[str]:
    """Services with indexed operations and no set of `model` (a set is whole or missing)."""
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT d.service FROM operation_search_docs d WHERE NOT EXISTS "
        "(SELECT 1 FROM operation_search_vector_sets v WHERE v.model = ? AND v.service = d.service) "
        "ORDER BY d.service", (model,))]


def delete_orphan_vectors(conn: Conn, model: str) -> None:
    """`model`'s sets of services with no operation indexed."""
    conn.execute("DELETE FROM operation_search_vector_sets WHERE model = ? AND NOT EXISTS "
                 "(SELECT 1 FROM operation_search_docs d WHERE d.service = operation_search_vector_sets.service)",
                 (model,))


def all_vectors(conn: Conn, model: str) -> VectorSet:
    """Every set `model` made, in service order (one row per service)."""
    op_ids: list[str] = []
    services: list[str] = []
    vectors: list[bytes] = []
    scales: list[float] = []
    for service, n, ids, vecs, scs in conn.execute(
            "SELECT service, operations, op_ids, vectors, scales FROM operation_search_vector_sets "
            "WHERE model = ? ORDER BY service", (model,)):
        op_ids += json.loads(ids)
        services += [service] * n
        vectors.append(bytes(vecs))
        scales += struct.unpack(f"<{n}d", scs)
    return VectorSet(op_ids, services, b"".join(vectors), scales)


def docs_by_op_ids(conn: Conn, op_ids: list[str]) -> list[Row]:
    """The rows store.match answers, for given operations (bm25 0: they were not matched)."""
    if not op_ids:
        return []
    return conn.execute(
        f"SELECT d.op_id, d.service, d.method, d.shape, d.action, "
        f"s.name, s.summary, s.path, s.tags, s.body, s.params, 0.0 AS bm25 "
        f"FROM operation_search_docs d JOIN operation_search s ON s.rowid = d.rowid "
        f"WHERE d.op_id IN ({', '.join('?' * len(op_ids))})", op_ids).fetchall()
