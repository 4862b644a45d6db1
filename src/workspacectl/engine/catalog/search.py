"""Ranked operation search: an FTS5 index kept with the catalog, and a light re-rank.

    reindex_service(conn, service)   the catalog store calls it inside its import transaction
    remove_service(conn, service)    ... and inside its delete
    search(conn, q, service=None, limit=20) -> [(op_id, score)], best first, score in (0, 1]

How a query is answered:
1. The phrase is analyzed like the documents (catalog_search_text), after its idioms are
   rewritten. Words naming a service in the catalog ("stripe", "github") are taken out of the
   text and become a service signal.
2. Each remaining term is a *concept*: the term, its equivalents (nearly full credit) and its
   synonyms (at a discount), weighted by idf; a verb counts half (step 4 judges it).
3. FTS5 finds candidates with bm25() weighted per column (name and summary far above the
   description). Terms in more than COMMON_FRACTION of the operations ("get", "user") are
   left out of the MATCH, which they would only slow down, but still count in step 4; so are
   the most common of the rest past MATCH_POSTINGS postings in all (a large catalog). When
   the phrase names a service, that service's best candidates are fetched too.
4. Only those candidates (CANDIDATES, or twice the limit), with the nearest operation vectors
   (SEMANTIC_CANDIDATES), are re-scored in Python by a learned re-rank: a logistic model
   (rerank.json, fitted by bench/train_rerank.py on the tuning sets, never on the holdout) over
   each candidate's features (relative bm25, how much of the phrase's weight each field covers,
   how much of the operation's name was asked for, whether its action and HTTP shape fit the
   verb asked for, the cosine and the rank in each list, the service signal, path depth...) and
   some products of two. The catalog is never scanned in Python.
"""
from __future__ import annotations

import json
import math
import os
import re
import sqlite3
from itertools import repeat
from operator import mul
from pathlib import Path
from typing import TYPE_CHECKING

from workspacectl.engine.catalog import embedding, search_vectors, spelling
from workspacectl.engine.catalog.search_text import (
    ACTION_OF_TERM,
    EQUIVALENTS,
    LIST_TERMS,
    NOISE_TERMS,
    STOP_WORDS,
    SYNONYMS,
    apply_idioms,
    clean,
    stem,
    terms,
    words,
)
from workspacectl.engine.db import OPERATIONAL_ERRORS, transaction
from workspacectl.engine.store import catalog_search as store

if TYPE_CHECKING:
    from workspacectl.engine.catalog.search_vectors import Similarities
    from workspacectl.engine.db.conn import Conn

# Bump when the analysis changes: the index is rebuilt on the next search.
ANALYZER_VERSION = "5"

# bm25 weight per FTS column, in store.FTS_COLUMNS order: name, summary, path, tags, body, params
BM25_WEIGHTS = (6.0, 4.0, 2.0, 1.5, 1.0, 0.5)
# How much a concept found in each field counts in the re-rank's coverage.
FIELD_WEIGHTS = {"name": 1.0, "summary": 0.9, "path": 0.6, "tags": 0.5, "body": 0.35, "params": 0.2}
EQUIVALENT_WEIGHT = 0.95
SYNONYM_WEIGHT = 0.6
CANDIDATES = 120
SEMANTIC_CANDIDATES = 80     # nearest vectors added to the lexical candidates ...
SEMANTIC_FLOOR = 0.6         # ... when at least this share of the nearest one's similarity
SEMANTIC_MIN = 0.0           # ... and at least this cosine
ONLY_SERVICE_SCORE = 0.5
MAX_QUERY_TERMS = 24
COMMON_FRACTION = 0.2   # terms in more than this share of documents stay out of the MATCH
# ... and the MATCH's terms together name at most this many postings (their document frequencies
# summed; the rarest term always stays): past it the most common are left out (they still count
# in the re-rank), so FTS5 scores a bounded number of rows per phrase however large the catalog.
# A phrase over the 12 shared documents (3,481 operations) sums to at most ~3,100 (1,087 phrases:
# every label set, slipped too, bench/README.md), so nothing changes there; at 100,949 a phrase
# with common verbs and their synonyms summed to ~46,000 (FTS5's bm25 ~0.7 µs a row).
MATCH_POSTINGS = 20000
BODY_CHARS = 1500

HTTP_METHOD_WORDS = {"get", "post", "put", "patch", "delete", "head", "options"}


# --- index -----------------------------------------------------------------------------------


def path_shape(path: str) -> str:
    """'item' when the path ends in a parameter (/customers/{id}), else 'collection'."""
    p = path.split("#", 1)[0].split("?", 1)[0].rstrip("/")
    p = re.sub(r"\.json$", "", p)
    return "item" if p.endswith("}") else "collection"


def action_from_method(method: str, shape: str) -> str:
    method = method.upper()
    if method == "GET":
        return "get" if shape == "item" else "list"
    if method == "DELETE":
        return "delete"
    if method == "POST":
        return "create" if shape == "collection" else "update"
    if method in ("PUT", "PATCH"):
        return "update"
    return ""


def operation_action(name: str, method: str, shape: str) -> str:
    """The action an operation's name says. A name that opens with its HTTP method
    (`post-customers`, `GET_user-scheduled_sends`) says nothing: method and path shape decide."""
    ws = words(name)
    if ws and ws[0] in HTTP_METHOD_WORDS and ws[0] == method.lower():
        return action_from_method(method, shape)
    for w in ws:
        action = ACTION_OF_TERM.get(stem(w))
        if action:
            return action
    return action_from_method(method, shape)


def _first_sentence(text: str) -> str:
    text = clean(text).strip()
    m = re.search(r"[.!?](\s|$)", text)
    return (text[: m.start()] if m else text)[:300]


def _json_list(raw: object) -> list:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _param_text(param: dict) -> str:
    """A parameter's name; for a required one also its type and the start of its description
    (the inputs an operation cannot do without say much about what it does)."""
    text = str(param.get("name", ""))
    if param.get("required") is True:
        text += f" {param.get('type', '')} {clean(str(param.get('description', '')))[:200]}"
    return text


def _analyzed(text: str) -> str:
    return " ".join(t for t in terms(text) if t not in NOISE_TERMS)


def index_columns(row: sqlite3.Row) -> dict[str, str]:
    """The analyzed text of each FTS column for one operations row."""
    summary = row["summary"] or _first_sentence(row["description"] or "")
    path = " ".join(seg for seg in re.split(r"[/.#?]", row["path"] or "") if seg and not seg.startswith("{"))
    tags = " ".join(str(t) for t in _json_list(row["tags"]) if isinstance(t, (str, int)))
    params = " ".join(_param_text(p) for p in _json_list(row["params_json"]) if isinstance(p, dict))
    body = clean(row["description"] or "")[:BODY_CHARS]
    return {"name": _analyzed(row["name"] or ""), "summary": _analyzed(summary), "path": _analyzed(path),
            "tags": _analyzed(tags), "body": _analyzed(body), "params": _analyzed(params)}


# The summary (or the name, when there is none) counts this many times in an operation's vector:
# the vector is the mean of its text's tokens, so this weighs the field that says what the
# operation does against the rest (tuning set MRR@10 0.751 at 1, 0.765 at 3, 0.774 at 5 and 8).
SUMMARY_TIMES = 5
# How much of the description an operation's vector reads (its own words: a document nobody wrote
# phrases for is known by them; bench/README.md, issue 29).
VECTOR_DESCRIPTION_CHARS = 400
# Bump when vector_text changes: stored vectors are made again on the next search.
VECTOR_TEXT_VERSION = "3"


def _real_summary(row: sqlite3.Row) -> str:
    """The summary, unless it is only the importer's stand-in ("METHOD /path") or missing."""
    summary = (row["summary"] or "").strip()
    stand_in = f"{(row['method'] or '').upper()} {row['path'] or ''}".strip()
    return "" if not summary or summary.upper() == stand_in.upper() else summary


def vector_text(row: sqlite3.Row) -> str:
    """What an operation's semantic vector is made of, all the operation's own words: service,
    name (as words, twice), summary, the first sentence of its description, its path, tags and
    the start of the description, the summary (or, when there is none, the name) weighing
    SUMMARY_TIMES (chosen on the tuning sets and the development documents, bench/README.md)."""
    summary = _real_summary(row)
    name = " ".join(words(row["name"] or ""))
    head = summary or name
    tags = " ".join(str(t) for t in _json_list(row["tags"]) if isinstance(t, (str, int)))
    return " ".join((row["service"] or "", name, name, summary, _first_sentence(row["description"] or ""),
                     row["path"] or "", tags, *[head] * (SUMMARY_TIMES - 1),
                     clean(row["description"] or "")[:VECTOR_DESCRIPTION_CHARS]))


def _new_generation() -> str:
    """A new vectors generation (a random token, what secrets.token_hex(16) makes, without
    importing `secrets` and `random` into every one-shot search)."""
    return os.urandom(16).hex()


def _index_vectors(conn: Conn, rows: list[sqlite3.Row]) -> None:
    stored = embedding.quantize(embedding.embed_many([vector_text(r) for r in rows]))
    store.insert_vectors(conn, model_id(), [(r["op_id"], r["service"], *v) for r, v in zip(rows, stored)])
    store.set_meta(conn, "vectors_generation", _new_generation())


def _index_service(conn: Conn, service: str) -> None:
    store.delete_service_docs(conn, service)
    dfs: dict[str, int] = {}
    rows = store.operations_of_service(conn, service)
    for row in rows:
        shape = path_shape(row["path"] or "")
        action = operation_action(row["name"] or "", row["method"] or "", shape)
        columns = index_columns(row)
        store.insert_doc(conn, row["op_id"], row["service"], (row["method"] or "").upper(), shape, action, columns)
        for t in {t for c in store.FTS_COLUMNS for t in columns[c].split()}:
            dfs[t] = dfs.get(t, 0) + 1
        dfs[store.DOC_COUNT_TERM] = dfs.get(store.DOC_COUNT_TERM, 0) + 1
    store.insert_service_terms(conn, service, dfs)
    _index_vectors(conn, rows)


def analyzer_number(version: str | None) -> int:
    """An analyzer version as a number to compare (-1: none, or not one this scheme wrote)."""
    try:
        return int(version or "")
    except ValueError:
        return -1


# An older wsctl takes over an index a newer analyzer built only when that analyzer has not
# searched it for this many days (it stamps the day of its first search each day): a
# workspace gone back to an older version for good gets its own index again.
ABANDONED_DAYS = 7


def _today() -> str:
    import datetime

    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")


def _abandoned(seen: str | None) -> bool:
    import datetime

    try:
        day = datetime.date.fromisoformat(seen or "")
    except ValueError:
        return True
    return (datetime.datetime.now(datetime.UTC).date() - day).days > ABANDONED_DAYS


def _stale(value: str | None) -> list[str]:
    return [s for s in _json_list(value) if isinstance(s, str)]


def _set_stale(conn: Conn, services: list[str]) -> None:
    if services:
        store.set_meta(conn, "stale_services", json.dumps(sorted(set(services))))
    else:
        store.delete_meta(conn, "stale_services")


def reindex_service(conn: Conn, service: str, analyzer: str = ANALYZER_VERSION) -> None:
    """Index (again) every operation of one service, its vectors included (this version's
    model's; the service's vectors of other models are removed: another version makes them again
    when it next searches). Joins the caller's transaction if any.
    The lexical index is tagged with the analyzer version that built it (`analyzer`: this
    code's, a parameter so tests can run two versions on one workspace). An index an older
    analyzer built is rebuilt whole instead, so no service is left behind. Into an index a newer
    analyzer built, the service is indexed with this analyzer and named stale, so that the newer
    version indexes it again (that service alone) on its next search; never rebuilt whole, so
    two versions sharing a workspace do not rebuild it in turn."""
    with transaction(conn):
        built, mine = analyzer_number(store.get_meta(conn, "analyzer_version")), analyzer_number(analyzer)
        if built < mine or (built > mine and _abandoned(store.get_meta(conn, "analyzer_seen"))):
            reindex_all(conn, analyzer)
            return
        _index_service(conn, service)
        stale = _stale(store.get_meta(conn, "stale_services"))
        if built > mine:
            _set_stale(conn, [*stale, service])
        elif service in stale:
            _set_stale(conn, [s for s in stale if s != service])


def remove_service(conn: Conn, service: str) -> None:
    with transaction(conn):
        store.delete_service_docs(conn, service)
        store.set_meta(conn, "vectors_generation", _new_generation())


def reindex_all(conn: Conn, analyzer: str = ANALYZER_VERSION) -> None:
    with transaction(conn):
        store.delete_all_docs(conn)
        for row in store.catalog_services(conn):
            _index_service(conn, row["service"])
        store.set_meta(conn, "analyzer_version", analyzer)
        store.set_meta(conn, "analyzer_seen", _today())
        store.delete_meta(conn, "stale_services")
        store.set_meta(conn, "vectors_generation", _new_generation())   # also when no service is left


# Vector sets of this many models are kept: this version's and those of the versions last seen
# building theirs (two versions sharing a workspace keep both; an abandoned model's set goes).
KEPT_MODELS = 3


def reindex_vectors(conn: Conn) -> None:
    """Make this model's vectors of every indexed operation that has none (a workspace from
    before vectors, one a version with another model used, services another version imported),
    without touching other models' vectors beyond keeping KEPT_MODELS sets."""
    model = model_id()
    with transaction(conn):
        store.delete_orphan_vectors(conn, model)
        for service in store.services_missing_vectors(conn, model):
            _index_vectors(conn, store.operations_of_service(conn, service))
        store.set_meta(conn, f"vectors_built:{model}", _now())
        models = [m for m in store.vector_models(conn) if m != model]
        if len(models) >= KEPT_MODELS:
            built = {m: store.get_meta(conn, f"vectors_built:{m}") or "" for m in models}
            for m in sorted(models, key=lambda m: (built[m], m))[:len(models) - KEPT_MODELS + 1]:
                store.delete_model_vectors(conn, m)
                store.delete_meta(conn, f"vectors_built:{m}")
            store.set_meta(conn, "vectors_generation", _new_generation())


def _now() -> str:
    import datetime

    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def model_id() -> str:
    """Names how stored vectors are made: the shipped vectors, the text each is made of and the
    stored form. Each model's vectors are rows of their own (m021)."""
    return f"{embedding.model_id()}+text{VECTOR_TEXT_VERSION}+{embedding.STORED_FORM}"


def _vectors_current(conn: Conn) -> bool:
    return store.vector_count(conn, model_id()) == store.doc_count(conn)


# (vectors generation, model) at which this process found the model's vectors complete (a few,
# for a process serving several workspaces): the vectors are not counted again until the index
# is written (every write sets a new generation).
_complete_sets: dict[tuple[str, str], None] = {}
_COMPLETE_KEPT = 8


def ensure_current(conn: Conn, analyzer: str = ANALYZER_VERSION) -> str | None:
    """Bring the index up to this version once, when it needs it; returns the vectors generation
    (see _ensure)."""
    return _ensure(conn, analyzer)[0]


def _ensure(conn: Conn, analyzer: str = ANALYZER_VERSION) -> tuple[str | None, int | None]:
    """(vectors generation, how many vectors this model has when this check counted them, else
    None). Brings the index up to this version once, when it needs it. One read when all is
    current (store.search_state). The lexical index is rebuilt when an older analyzer built it
    or it lost step with the catalog (a change that did not go through reindex_service);
    services an older version indexed into it (stale) are indexed again. An
    index a newer analyzer built is searched as it is (the phrase analyzed by this version: the
    same terms but where the analyzers differ), neither rebuilt nor caught up: that is the
    newer version's work, so two versions on one workspace do not rebuild it in turn; unless
    the newer one has not searched it for ABANDONED_DAYS. The vectors are per model: this
    model's are made once where missing. The index's own analyzer stamps the day it searched
    (at most one write a day)."""
    model = model_id()
    state = store.search_state(conn, model, [g for g, m in _complete_sets if m == model])
    built, mine = analyzer_number(state.analyzer), analyzer_number(analyzer)
    newer = built > mine and not _abandoned(state.seen)
    lexical_current = newer or (built == mine and state.docs == state.operations and not state.stale)
    if lexical_current and (state.vectors is None or state.vectors == state.docs):
        if state.vectors is not None and state.generation is not None:
            _complete_sets[(state.generation, model)] = None
            while len(_complete_sets) > _COMPLETE_KEPT:
                _complete_sets.pop(next(iter(_complete_sets)))
        if built == mine and state.seen != _today():
            _stamp_seen(conn)
        return state.generation, state.vectors
    if not lexical_current:
        with transaction(conn):
            built = analyzer_number(store.get_meta(conn, "analyzer_version"))
            if built < mine or (built > mine and _abandoned(store.get_meta(conn, "analyzer_seen"))) \
                    or (built == mine and store.doc_count(conn) != store.operation_count(conn)):
                reindex_all(conn, analyzer)
            elif built == mine:
                for service in _stale(store.get_meta(conn, "stale_services")):
                    _index_service(conn, service)
                _set_stale(conn, [])
    if not _vectors_current(conn):
        with transaction(conn):
            if not _vectors_current(conn):
                reindex_vectors(conn)
    return store.get_meta(conn, "vectors_generation"), None


def _stamp_seen(conn: Conn) -> None:
    """The day this analyzer searched its index (ABANDONED_DAYS), at most once a day. Best
    effort: a write lock held elsewhere or a store refusing the write skips it (the next search
    stamps), never failing the search it rides on."""
    try:
        with transaction(conn):
            store.set_meta(conn, "analyzer_seen", _today())
    except OPERATIONAL_ERRORS:
        pass


# --- query -----------------------------------------------------------------------------------


def _service_keys(conn: Conn, generation: str | None = None) -> list[tuple[tuple[str, ...], str]]:
    """(word sequence, service) for each way a phrase may name a service: its id and its name.
    A one-word key that is also a verb ("search", "send") would take over every phrase using
    that verb, so it does not count. Kept per index generation (a few): every change of the
    catalog's services goes through the index, which then has a new one."""
    cached = _KEYS.get(generation) if generation is not None else None
    if cached is not None:
        return cached
    keys: dict[tuple[str, ...], str] = {}
    for row in store.catalog_services(conn):
        service = row["service"]
        for key in (tuple(words(service)),
                    tuple(w for w in words(row["name"] or "") if w not in STOP_WORDS and w not in _NAME_NOISE)):
            if key and not (len(key) == 1 and stem(key[0]) in ACTION_OF_TERM):
                keys.setdefault(key, service)
    # Longest first, so "google sheets" wins over a service called "google".
    out = sorted(keys.items(), key=lambda kv: -len(kv[0]))
    if generation is not None:
        while len(_KEYS) >= _KEYS_KEPT:
            _KEYS.pop(next(iter(_KEYS)))
        _KEYS[generation] = out
    return out


_KEYS: dict[str, list[tuple[tuple[str, ...], str]]] = {}
_KEYS_KEPT = 8
_NAME_NOISE = {"api", "apis", "rest", "beta", "v1", "v2", "v3", "openapi"}


def _parse(keys: list[tuple[tuple[str, ...], str]], typed: list[str], fixed: dict[str, str]) -> tuple[list[str], list[str]]:
    """(content terms, services named) of a phrase's words, some put right (fixed)."""
    ws = [fixed.get(w, w) for w in words(apply_idioms(" ".join(fixed.get(w, w) for w in typed)))]
    named: list[str] = []
    keep = [True] * len(ws)
    for key, service in keys:
        n = len(key)
        for i in range(len(ws) - n + 1):
            if all(keep[i:i + n]) and tuple(ws[i:i + n]) == key:
                keep[i:i + n] = [False] * n
                if service not in named:
                    named.append(service)
    content = [w for w, k in zip(ws, keep) if k and w not in STOP_WORDS and len(w) > 1]
    out = list(dict.fromkeys(t for t in (stem(w) for w in content) if t not in NOISE_TERMS))
    return out[:MAX_QUERY_TERMS], named


def parse_query(conn: Conn, q: str, generation: str | None = None,
                terms: store.TermReader | None = None) -> tuple[list[str], list[str], str]:
    """A phrase -> (content terms, services it names, the phrase for the vectors), misspelt
    words put right (engine/catalog/spelling.py) in all three. `terms` gets, in one read, the
    frequencies of every term the spelling and the re-rank may ask about."""
    keys = _service_keys(conn, generation)
    known = {w for key, _ in keys for w in key}
    typed = words(clean(q))
    terms = terms or store.TermReader(conn)
    wrong = spelling.suspects(typed, known)
    ahead = {v for t in _parse(keys, typed, {})[0] for v in _variants(t)}
    if wrong:
        ahead |= {v for t in spelling.neighbour_stems(wrong) for v in _variants(t)}
    terms.read(ahead | {store.DOC_COUNT_TERM})
    fixed = spelling.corrections(terms, typed, known) if wrong else {}
    out, named = _parse(keys, typed, fixed)
    return out, named, " ".join(fixed.get(w, w) for w in typed) if fixed else q


def query_action(query_terms: list[str]) -> str:
    action = next((ACTION_OF_TERM[t] for t in query_terms if t in ACTION_OF_TERM), "")
    if action in ("", "get") and any(t in LIST_TERMS for t in query_terms):
        return "list"
    return action


# How well an operation's action answers the action asked for (1.0 when they are the same).
_ACTION_FIT = {
    ("list", "get"): 0.5, ("get", "list"): 0.6, ("search", "list"): 0.7, ("list", "search"): 0.6,
    ("get", "search"): 0.5, ("search", "get"): 0.4, ("create", "update"): 0.3, ("update", "create"): 0.3,
    ("get", "create"): 0.3,     # "get an embedding": the thing asked for is made on request
}
# No verb asked: anything but a delete is as likely.
_NO_ACTION_FIT = {"delete": 0.2}


def action_fit(asked: str, op_action: str, method: str, shape: str) -> float:
    if not asked:
        return _NO_ACTION_FIT.get(op_action, 0.5)
    fit = 1.0 if asked == op_action else _ACTION_FIT.get((asked, op_action), 0.0)
    # The HTTP shape confirms it: a list is a GET on a collection, a delete a DELETE.
    if asked == "list" and method == "GET" and shape == "collection":
        fit = max(fit, 0.8)
    if asked == "delete" and method == "DELETE":
        fit = max(fit, 0.9)
    return fit


def _idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def _concepts(query_terms: list[str], dfs: dict[str, int], n_docs: int) -> list[tuple[float, dict[str, float]]]:
    """[(weight, {term: credit})]: each query term with its equivalents and synonyms (at a
    discount); words no operation uses drop out. weight is the best variant's idf x credit."""
    concepts = []
    for t in query_terms:
        variants = {t: 1.0}
        for e in EQUIVALENTS.get(t, ()):
            variants.setdefault(e, EQUIVALENT_WEIGHT)
        for s in SYNONYMS.get(t, ()):
            variants.setdefault(s, SYNONYM_WEIGHT)
            for e in EQUIVALENTS.get(s, ()):
                variants.setdefault(e, SYNONYM_WEIGHT)
        variants = {v: c for v, c in variants.items() if dfs.get(v, 0) > 0}
        if not variants:
            continue
        # A term weighs its own idf; a word no operation uses weighs its best stand-in. A rare
        # synonym must not make a common verb weigh much.
        weight = _idf(n_docs, dfs[t]) if t in variants else max(c * _idf(n_docs, dfs[v]) for v, c in variants.items())
        if t in ACTION_OF_TERM:     # the verb is judged by action_fit; here it counts half
            weight *= 0.5
        concepts.append((weight, variants))
    return concepts


def _within_postings(terms: list[str], dfs: dict[str, int]) -> list[str]:
    """The rarest of the terms whose document frequencies sum to at most MATCH_POSTINGS (the
    rarest one in any case), in the order given."""
    if sum(dfs[t] for t in terms) <= MATCH_POSTINGS:
        return terms
    kept: set[str] = set()
    total = 0
    for t in sorted(terms, key=lambda t: (dfs[t], t)):
        if kept and total + dfs[t] > MATCH_POSTINGS:
            break
        kept.add(t)
        total += dfs[t]
    return [t for t in terms if t in kept]


def _variants(t: str) -> set[str]:
    return {t, *EQUIVALENTS.get(t, ()), *SYNONYMS.get(t, ()),
            *(e for s in SYNONYMS.get(t, ()) for e in EQUIVALENTS.get(s, ()))}


Concepts = list[tuple[float, dict[str, float]]]   # (weight, {variant: credit}) per concept of the phrase
TermIndex = dict[str, list[tuple[int, float]]]


def _term_index(concepts: Concepts) -> TermIndex:
    """term -> [(concept number, credit)], so an operation's words are looked up once each."""
    index: dict[str, list[tuple[int, float]]] = {}
    for i, (_, variants) in enumerate(concepts):
        for v, credit in variants.items():
            index.setdefault(v, []).append((i, credit))
    return index


def _coverage(found: dict[str, set[str]], concepts: Concepts, index: TermIndex, total: float) -> float:
    """Share of the phrase's weight found in the operation, each field counting as it weighs.
    found: each field's terms that are in `index`; total: the concepts' weight."""
    best = [0.0] * len(concepts)
    for f, fw in FIELD_WEIGHTS.items():
        for term in found[f]:
            for i, credit in index[term]:
                best[i] = max(best[i], fw * credit)
    return sum(weight * b for (weight, _), b in zip(concepts, best)) / total if total else 0.0


def _name_precision(name_terms: list[str], wanted: set[str]) -> float:
    """Share of the operation name's words the phrase asked for: `create-call` answers "place
    a phone call" better than `collect-fin-voice-call-by-phone-number` does."""
    if name_terms and name_terms[0] in HTTP_METHOD_WORDS:
        name_terms = name_terms[1:]
    name_terms = [t for t in name_terms if t not in STOP_WORDS]
    if not name_terms:
        return 0.0
    return sum(1 for t in name_terms if t in wanted) / len(name_terms)


class TermStats:
    """Document frequencies of some terms, overall and per service, from one indexed query."""

    def __init__(self, terms: store.TermReader, wanted: set[str]):
        self.sizes: dict[str, int] = {}                 # service -> operations indexed
        self.by_service: dict[str, dict[str, int]] = {}  # term -> {service: df}
        for term, service, df in terms.read(wanted | {store.DOC_COUNT_TERM}):
            if term == store.DOC_COUNT_TERM:
                self.sizes[service] = df
            else:
                self.by_service.setdefault(term, {})[service] = df
        self.n_docs = max(sum(self.sizes.values()), 1)
        self.df = {t: sum(per.values()) for t, per in self.by_service.items()}


def _semantic(conn: Conn, q: str, service: str | None, named: list[str], generation: str | None,
              count: int | None = None) -> tuple[Similarities, list[int]] | None:
    """(similarities of every operation to the phrase, nearest rows), or None when the catalog
    has no vectors or the phrase no known word piece. count: the model's vectors, if counted."""
    sims = search_vectors.similarities(conn, q, model_id(), generation, count=count)
    if sims is None:
        return None
    nearest: list[int] = []
    for services in ([service] if service else None, named or None):
        if services is None and service:
            continue
        nearest.extend(sims.nearest(SEMANTIC_CANDIDATES, services))
    return sims, nearest


def _rank(conn: Conn, q: str, service: str | None, limit: int, mode: str = "hybrid",
          analyzer: str = ANALYZER_VERSION) -> list[tuple[str, float, dict[str, float]]]:
    """[(op_id, score, features)] best first (limit < 0: every candidate); features are what the
    re-rank scored.
    mode: "hybrid" (lexical and nearest vectors), "lexical" or "vectors" (the bench's baselines);
    analyzer: this code's analyzer version (ensure_current)."""
    generation, count = _ensure(conn, analyzer)
    terms = store.TermReader(conn)
    query_terms, named, q = parse_query(conn, q, generation, terms)
    if service:
        named = []
    if not query_terms:     # only a service's name ("github"): its operations in catalog order
        return [(op_id, ONLY_SERVICE_SCORE, {}) for op_id in store.first_operations(conn, named, max(limit, 0))]
    semantic = _semantic(conn, q, service, named, generation, count) if mode != "lexical" else None
    if mode == "vectors":
        if semantic is None:
            return []
        sims, _ = semantic
        return [(sims.op_ids[i], float(sims.sims[i]), {}) for i in sims.nearest(limit, [service] if service else None)]
    stats = TermStats(terms, {v for t in query_terms for v in _variants(t)})
    n_docs, dfs = stats.n_docs, stats.df
    concepts = _concepts(query_terms, dfs, n_docs)
    if not concepts and semantic is None:
        return []
    candidates: dict[str, sqlite3.Row] = {}
    if concepts:
        present = list(dict.fromkeys(v for _, variants in concepts for v in variants))
        selective = [v for v in present if dfs[v] <= COMMON_FRACTION * n_docs]
        # Terms are [a-z0-9]+ by construction; quoting keeps FTS5 keywords (AND, NEAR) literal.
        expression = " OR ".join(f'"{t}"' for t in _within_postings(selective or present, dfs))
        pool = max(CANDIDATES, limit * 2)
        known = store.Known(dfs, generation)
        candidates = {r["op_id"]: r for r in store.match(conn, expression, BM25_WEIGHTS, pool,
                                                         [service] if service else None, known)}
        if named:
            for r in store.match(conn, expression, BM25_WEIGHTS, pool, named, known):
                candidates.setdefault(r["op_id"], r)
    sim_of: dict[str, float] = {}
    if semantic is not None:
        sims, nearest = semantic
        # A near vector alone makes a candidate only when it is near the nearest one: every
        # catalog has nearest operations, not always relevant ones.
        floor = max(SEMANTIC_MIN, SEMANTIC_FLOOR * max((float(sims.sims[i]) for i in nearest), default=0.0))
        extra = [sims.op_ids[i] for i in nearest if sims.op_ids[i] not in candidates and sims.sims[i] >= floor]
        for r in store.docs_by_op_ids(conn, extra):
            candidates.setdefault(r["op_id"], r)
        for op_id in candidates:
            sim_of[op_id] = max(sims.of(op_id), 0.0)
    if not candidates:
        return []
    asked = query_action(query_terms)
    wanted = {v for _, variants in concepts for v in variants}
    index = _term_index(concepts)
    best_bm25 = min(r["bm25"] for r in candidates.values())
    best_sim = max(sim_of.values(), default=0.0)
    lex_pos = {op_id: i for i, op_id in enumerate(op for op, r in candidates.items() if r["bm25"] < 0)}
    sem_pos: dict[str, int] = {}
    if semantic is not None:
        for i in semantic[1]:
            sem_pos.setdefault(semantic[0].op_ids[i], len(sem_pos))
    total = sum(weight for weight, _ in concepts)
    phrase_words = words(q)
    plural = any(len(w) > 3 and w.endswith("s") and not w.endswith("ss") and w not in STOP_WORDS
                 for w in phrase_words) or any(t in LIST_TERMS for t in query_terms)
    sibling = _sibling_cues(phrase_words)
    scored = []
    for op_id, r in candidates.items():
        fields = {f: (r[f] or "").split() for f in FIELD_WEIGHTS}
        found = {f: set(terms_).intersection(index) for f, terms_ in fields.items()}
        x = {
            "bm25": r["bm25"] / best_bm25 if best_bm25 < 0 else 0.0,
            "coverage": _coverage(found, concepts, index, total) if concepts else 0.0,
            "cov_name": _field_share(found["name"], concepts, index, total),
            "cov_summary": _field_share(found["summary"], concepts, index, total),
            "name_precision": _name_precision(fields["name"], wanted),
            "action": action_fit(asked, r["action"], r["method"], r["shape"]),
            "semantic": sim_of[op_id] / best_sim if best_sim > 0 else 0.0,
            "cosine": sim_of.get(op_id, 0.0),
            "lex_rank": 1.0 / (1 + lex_pos[op_id]) if op_id in lex_pos else 0.0,
            "sem_rank": 1.0 / (1 + sem_pos[op_id]) if op_id in sem_pos else 0.0,
            "named_service": 1.0 if named and r["service"] in named else 0.0,
            "other_service": 1.0 if named and r["service"] not in named else 0.0,
            "path_depth": min(len(fields["path"]), 6) / 6,
            "name_length": min(len(fields["name"]), 8) / 8,
            "item_singular": 1.0 if r["shape"] == "item" and not plural else 0.0,
            "collection_plural": 1.0 if r["shape"] == "collection" and plural else 0.0,
            "name_unasked": min(sum(1 for t in fields["name"] if t not in wanted and t not in HTTP_METHOD_WORDS), 6) / 6,
            "deprecated": 1.0 if any(t.startswith("deprec") or t == "legaci" for t in fields["name"]) else 0.0,
            **_sibling_features(sibling, r["shape"], fields["name"]),
        }
        action = r["action"]
        for a, key in _IS_KEYS:
            x[key] = 1.0 if action == a else 0.0
        for a, key in _NO_VERB_KEYS:
            x[key] = 1.0 if not asked and action == a else 0.0
        scored.append((op_id, _score(x), x))
    scored.sort(key=lambda s: (-s[1], s[0]))
    return scored if limit < 0 else scored[:limit]


_ACTIONS = ("list", "get", "create", "update", "delete", "search")
_IS_KEYS = tuple((a, f"is_{a}") for a in _ACTIONS)
_NO_VERB_KEYS = tuple((a, f"no_verb_{a}") for a in _ACTIONS)

# Words that say which sibling of a resource is meant (get / list of one resource, the caller's
# own or anyone's): general English, not phrase-specific.
_MINE_WORDS = frozenset(("my", "mine", "me", "i", "im", "myself", "our", "ours"))
_ONE_WORDS = frozenset(("a", "an", "one", "single", "this", "that", "specific", "particular", "details", "detail",
                        "info", "id", "by"))
_MANY_WORDS = frozenset(("all", "every", "list", "each", "several", "many", "recent"))
_SELF_NAME = ("authent", "current", "self", "own")


def _sibling_cues(phrase_words: list[str]) -> tuple[bool, bool, bool, bool]:
    """(the caller's own, one thing, many things, an id-like token) as the phrase says them."""
    ws = set(phrase_words)
    return (bool(ws & _MINE_WORDS), bool(ws & _ONE_WORDS), bool(ws & _MANY_WORDS),
            any((any(c.isdigit() for c in w) and any(c.isalpha() for c in w)) or w.isdigit() for w in phrase_words))


def _sibling_features(cues: tuple[bool, bool, bool, bool], shape: str, name: list[str]) -> dict[str, float]:
    """Sibling choice: the caller's own (a name saying "authenticated" or "current") against
    "my"; one item against "a", "this", an id; a collection against "all", "every"."""
    mine, one, many, id_like = cues
    own = any(t.startswith(_SELF_NAME) for t in name)
    item = shape == "item"
    return {
        "mine_own": 1.0 if mine and own else 0.0,
        "mine_not_own": 1.0 if mine and not own else 0.0,
        "not_mine_own": 1.0 if not mine and own else 0.0,
        "one_item": 1.0 if one and item else 0.0,
        "many_collection": 1.0 if many and not item else 0.0,
        "many_item": 1.0 if many and item else 0.0,
        "id_item": 1.0 if id_like and item else 0.0,
    }


def _field_share(terms_found: set[str], concepts: Concepts, index: TermIndex, total: float) -> float:
    """Share of the phrase's weight (idf) found in one field of the operation (terms_found: the
    field's terms that are in `index`)."""
    if not total:
        return 0.0
    found: set[int] = set()
    for term in terms_found:
        found.update(i for i, _ in index[term])
    return sum(concepts[i][0] for i in found) / total


def _load_rerank(path: Path | None = None) -> dict[str, float]:
    """The re-rank's weights (rerank.json, fitted by bench/train_rerank.py on the tuning sets)."""
    data = json.loads((path or Path(__file__).parent / "rerank.json").read_text(encoding="utf-8"))
    return {"": float(data["bias"]), **{k: float(v) for k, v in data["weights"].items()}}


RERANK = _load_rerank()
# (RERANK it was made from, bias, the single features' names and weights, the pairs' first and
# second names and weights), in RERANK's order
_parsed: tuple[dict[str, float], float, tuple[tuple[str, ...], tuple[float, ...]],
               tuple[tuple[str, ...], tuple[str, ...], tuple[float, ...]]] | None = None
_ZEROS = repeat(0.0)


def _score(x: dict[str, float]) -> float:
    """The learned re-rank: a logistic model over the candidate's features and some products
    of two ("a*b"), in (0, 1). The sums are taken in RERANK's order, w * a (* b) each: the
    same figures as a loop over RERANK would make, the products made by map in C."""
    global _parsed
    if _parsed is None or _parsed[0] is not RERANK:     # RERANK replaced (the bench's ablations)
        single = [(f, w) for f, w in RERANK.items() if f and "*" not in f and w]
        pairs = [(f.split("*", 1)[0], f.split("*", 1)[1], w) for f, w in RERANK.items() if "*" in f and w]
        _parsed = (RERANK, RERANK[""], (tuple(f for f, _ in single), tuple(w for _, w in single)),
                   (tuple(a for a, _, _ in pairs), tuple(b for _, b, _ in pairs), tuple(w for _, _, w in pairs)))
    _, z, (names, weights), (firsts, seconds, pair_weights) = _parsed
    get = x.get
    z += sum(map(mul, weights, map(get, names, _ZEROS)))
    z += sum(map(mul, map(mul, pair_weights, map(get, firsts, _ZEROS)), map(get, seconds, _ZEROS)))
    return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))


def candidate_features(conn: Conn, q: str, service: str | None = None) \
        -> list[tuple[str, dict[str, float]]]:
    """[(op_id, features)] for every candidate of a phrase (bench/train_rerank.py fits on these)."""
    return [(op_id, x) for op_id, _, x in _rank(conn, q, service, -1)]


def search(conn: Conn, q: str, service: str | None = None, limit: int = 20,
           mode: str = "hybrid", analyzer: str = ANALYZER_VERSION) -> list[tuple[str, float]]:
    """The operations best answering a capability phrase: [(op_id, score)], score in (0, 1].
    analyzer: this code's analyzer version (a parameter so tests run two versions on one workspace)."""
    return [(op_id, round(max(score, 0.001), 3))
            for op_id, score, _ in _rank(conn, q, service, limit, mode, analyzer)]
