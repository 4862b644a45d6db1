"""Semantic vectors of operation search (issue 13): kept with the catalog, used by the ranking.

Each operation's vector is made when it is imported and stored in its service's set of
operation_search_vector_sets (m022: one row per model and service, int8 steps as bytes, keyed by
the model that made them); a re-import replaces it, a delete removes it; a workspace from before vectors gets them on its first search; another model's
vectors (another wsctl version on the same workspace) are left alone, not rebuilt in turn. Phrases sharing no word with the operation they mean are answered
through the vectors, the same on every door.
"""
from __future__ import annotations

import json
import textwrap

import pytest

from tests.catalog.test_search import QUUXPAY, QUUXPAY_V2, ZORBLY, import_toml, op_ids, search
from tests.conftest import workspace_db
from workspacectl.engine.catalog import embedding
from workspacectl.engine.catalog import search as catalog_search

MELODIA = textwrap.dedent("""
    service = "melodia"
    name = "Melodia"
    description = "Odds and ends."
    credentialType = "apiKey"
    [[operations]]
    name = "play-track"
    summary = "Start playback of a song"
    method = "PUT"
    path = "/player/play"
    [[operations]]
    name = "charge-card"
    summary = "Charge a credit card"
    method = "POST"
    path = "/charges"
    [[operations]]
    name = "send-sms"
    summary = "Send an SMS to a phone number"
    method = "POST"
    path = "/sms"
    [[operations]]
    name = "archive-folder"
    summary = "Archive a folder of documents"
    method = "POST"
    path = "/folders/{id}/archive"
""")

# phrase -> the operation it means; no phrase shares a word (or a stem) with its operation
MEANINGS = {"take a payment": "melodia.charge-card", "listen to music": "melodia.play-track",
            "text my mom": "melodia.send-sms", "put away old files": "melodia.archive-folder"}


def _db(backend):
    return workspace_db(backend.workspace)


def _vectors(db, service: str, model: str | None = None) -> dict[str, bytes]:
    row = db.execute("SELECT op_ids, vectors FROM operation_search_vector_sets WHERE service = ? AND model = ?",
                     (service, model or catalog_search.model_id())).fetchone()
    if row is None:
        return {}
    op_ids, vectors, dims = json.loads(row[0]), bytes(row[1]), embedding.dims()
    assert len(vectors) == dims * len(op_ids) and op_ids == sorted(op_ids)
    return {op_id: vectors[i * dims:(i + 1) * dims] for i, op_id in enumerate(op_ids)}


def _models(db) -> dict[str, int]:
    return dict(db.execute("SELECT model, sum(operations) FROM operation_search_vector_sets GROUP BY model"))


def _copy_sets(db, model: str) -> None:
    """This version's sets again under another model's name (as that version would have made them)."""
    db.execute("INSERT INTO operation_search_vector_sets (model, service, operations, op_ids, vectors, scales) "
               "SELECT ?, service, operations, op_ids, vectors, scales FROM operation_search_vector_sets "
               "WHERE model = ?", (model, catalog_search.model_id()))


def _new_generation(db) -> None:
    """What every write of the index does: a process that found the vectors complete counts them
    again only at a new generation."""
    db.execute("UPDATE operation_search_meta SET value = value || 'x' WHERE key = 'vectors_generation'")


def _generation(db) -> str:
    return db.execute("SELECT value FROM operation_search_meta WHERE key = 'vectors_generation'").fetchone()[0]


def test_import_stores_replaces_and_removes_vectors(backend):
    import_toml(backend, ZORBLY)
    import_toml(backend, QUUXPAY)
    db = _db(backend)
    zorbly, quuxpay = _vectors(db, "zorbly"), _vectors(db, "quuxpay")
    assert sorted(zorbly) == ["zorbly.create-widget", "zorbly.delete-widget", "zorbly.get-widget",
                              "zorbly.list-widgets", "zorbly.update-widget"]
    assert len(quuxpay) == 4
    assert {len(v) for v in [*zorbly.values(), *quuxpay.values()]} == {embedding.dims()}
    assert len(set(zorbly.values())) == 5       # each operation its own vector

    import_toml(backend, QUUXPAY_V2)            # refund-charge becomes issue-credit
    after = _vectors(db, "quuxpay")
    assert "quuxpay.refund-charge" not in after and "quuxpay.issue-credit" in after
    assert after["quuxpay.create-widget"] == quuxpay["quuxpay.create-widget"]
    assert _vectors(db, "zorbly") == zorbly     # another service's import leaves these alone

    assert backend.api("DELETE", "/v1/admin/catalog/quuxpay").status == 204
    assert _vectors(db, "quuxpay") == {}
    assert _vectors(db, "zorbly") == zorbly
    db.close()


def test_phrases_without_a_shared_word_find_their_operation(backend):
    import_toml(backend, MELODIA)
    for phrase, op_id in MEANINGS.items():
        assert op_ids(search(backend, phrase, service="melodia"))[0] == op_id, phrase


def test_the_lexical_half_alone_cannot_answer_them(tmp_path):
    """The test above can fail: without the vectors these phrases find nothing right."""
    from workspacectl.engine.catalog import services
    from workspacectl.engine.catalog.importer import parse_document
    from workspacectl.engine.workspaces.folder import Workspace

    ws, _ = Workspace.create(tmp_path / "ws", name="t", owner_name="O", owner_email="o@example.com")
    conn = ws.conn()
    services.replace_service(conn, parse_document(MELODIA, "toml"), source="import")
    for phrase, op_id in MEANINGS.items():
        lexical = [op for op, _ in catalog_search.search(conn, phrase, service="melodia", mode="lexical")]
        assert lexical[:1] != [op_id], phrase
        assert next(op for op, _ in catalog_search.search(conn, phrase, service="melodia")) == op_id
    conn.close()


def test_a_workspace_from_before_vectors_gets_them_on_its_first_search(backend):
    import_toml(backend, ZORBLY)
    import_toml(backend, MELODIA)
    db = _db(backend)
    before = _vectors(db, "melodia")
    # as a workspace made before m015 looks once migrated: no vectors
    db.execute("DELETE FROM operation_search_vector_sets")
    db.execute("DELETE FROM operation_search_meta WHERE key = 'vectors_generation'")
    assert op_ids(search(backend, "take a payment", service="melodia"))[0] == "melodia.charge-card"
    assert _vectors(db, "melodia") == before
    n_ops = db.execute("SELECT count(*) FROM operations").fetchone()[0]
    assert _models(db) == {catalog_search.model_id(): n_ops}
    assert catalog_search.model_id().startswith(embedding.model_id())
    db.close()


OLDER = "an-older-model"


def _as_an_older_version_left_it(db) -> None:
    """Another model's vectors of every operation, as a wsctl version with another model leaves
    them after its searches (its own rows, keyed by its model)."""
    _copy_sets(db, OLDER)
    db.execute("INSERT INTO operation_search_meta (key, value) VALUES (?, '2026-01-01T00:00:00.000000Z')",
               (f"vectors_built:{OLDER}",))


def test_another_models_vectors_are_left_alone_and_not_rebuilt_in_turn(backend):
    """Two versions with different models on one workspace: each searches with its own rows;
    neither rebuilds the other's, so alternating searches write nothing after the first."""
    import_toml(backend, ZORBLY)
    import_toml(backend, MELODIA)
    db = _db(backend)
    ours = {s: _vectors(db, s) for s in ("zorbly", "melodia")}
    _as_an_older_version_left_it(db)
    older = {s: _vectors(db, s, OLDER) for s in ("zorbly", "melodia")}
    n_ops = db.execute("SELECT count(*) FROM operation_search_docs").fetchone()[0]
    assert _models(db) == {catalog_search.model_id(): n_ops, OLDER: n_ops}
    generation = _generation(db)
    for _ in range(3):
        assert op_ids(search(backend, "listen to music", service="melodia"))[0] == "melodia.play-track"
    assert _generation(db) == generation        # nothing was rebuilt
    assert {s: _vectors(db, s, OLDER) for s in older} == older
    assert {s: _vectors(db, s) for s in ours} == ours

    # a catalog change removes the service's vectors of every model (the other version's are
    # stale now); this version makes only that service's again, the rest stays as it was
    import_toml(backend, QUUXPAY)
    assert _vectors(db, "quuxpay", OLDER) == {} and len(_vectors(db, "quuxpay")) == 4
    assert {s: _vectors(db, s, OLDER) for s in older} == older
    # the other version's rows of a service it has not made again are missing, so that version
    # would make only those: what it needs is what a model's set lacks
    missing = db.execute("SELECT DISTINCT d.service FROM operation_search_docs d WHERE NOT EXISTS "
                         "(SELECT 1 FROM operation_search_vector_sets v WHERE v.model = ? AND v.service = d.service)",
                         (OLDER,)).fetchall()
    assert [r[0] for r in missing] == ["quuxpay"]
    db.close()


def test_this_models_missing_vectors_are_made_for_their_services_only(backend):
    import_toml(backend, ZORBLY)
    import_toml(backend, MELODIA)
    db = _db(backend)
    melodia = _vectors(db, "melodia")
    # as after another version's import of zorbly: this model's zorbly set is gone
    db.execute("DELETE FROM operation_search_vector_sets WHERE service = 'zorbly' AND model = ?",
               (catalog_search.model_id(),))
    _new_generation(db)     # as that import's write of the index does
    # a mark on melodia's set: made again, it would lose it
    db.execute("UPDATE operation_search_vector_sets SET op_ids = op_ids || ' ' WHERE service = 'melodia'")
    marked = db.execute("SELECT op_ids FROM operation_search_vector_sets WHERE service = 'melodia'").fetchone()[0]
    assert op_ids(search(backend, "make a widget", service="zorbly"))[0] == "zorbly.create-widget"
    assert len(_vectors(db, "zorbly")) == 5
    assert db.execute("SELECT op_ids FROM operation_search_vector_sets WHERE service = 'melodia'").fetchone()[0] \
        == marked
    assert _vectors(db, "melodia") == melodia
    db.close()


def test_at_most_kept_models_sets_stay(backend):
    import_toml(backend, MELODIA)
    db = _db(backend)
    n = _models(db)[catalog_search.model_id()]
    for i, model in enumerate(["m-oldest", "m-old", "m-newer"]):
        _copy_sets(db, model)
        db.execute("INSERT INTO operation_search_meta (key, value) VALUES (?, ?)",
                   (f"vectors_built:{model}", f"2026-01-0{i + 1}T00:00:00.000000Z"))
    # this version's set is missing: its search makes it again and keeps KEPT_MODELS sets
    db.execute("DELETE FROM operation_search_vector_sets WHERE model = ? AND service = 'melodia'",
               (catalog_search.model_id(),))
    _new_generation(db)
    assert op_ids(search(backend, "text my mom", service="melodia"))[0] == "melodia.send-sms"
    assert catalog_search.KEPT_MODELS == 3
    assert _models(db) == {catalog_search.model_id(): n, "m-old": n, "m-newer": n}
    db.close()


def test_vectors_of_m015_are_left_for_an_older_wsctl(backend):
    """A wsctl from before m021 reads operation_vectors and names its model in the meta; this
    version writes neither (so that one never finds another model named there), and empties a
    service's rows there when the catalog changes (so that one rebuilds them once)."""
    import_toml(backend, MELODIA)
    import_toml(backend, ZORBLY)
    db = _db(backend)
    docs = db.execute("SELECT op_id, service FROM operation_search_docs").fetchall()
    for op_id, service in docs:
        db.execute("INSERT INTO operation_vectors (op_id, service, vector) VALUES (?, ?, ?)",
                   (op_id, service, bytes(2 * embedding.dims())))
    db.execute("INSERT INTO operation_search_meta (key, value) VALUES ('vector_model', 'minilm-before-m021')")
    assert op_ids(search(backend, "take a payment", service="melodia"))[0] == "melodia.charge-card"
    assert db.execute("SELECT count(*) FROM operation_vectors").fetchone()[0] == len(docs)
    assert db.execute("SELECT value FROM operation_search_meta WHERE key = 'vector_model'").fetchone()[0] \
        == "minilm-before-m021"
    import_toml(backend, QUUXPAY)
    backend.api("DELETE", "/v1/admin/catalog/zorbly")
    left = {r[0] for r in db.execute("SELECT DISTINCT service FROM operation_vectors")}
    assert "melodia" in left and "zorbly" not in left and "quuxpay" not in left
    assert db.execute("SELECT count(*) FROM operation_vectors").fetchone()[0] == len(docs) - 5
    db.close()


def test_an_older_wsctl_reindexing_a_service_leaves_no_stale_set(backend):
    """A wsctl from before m022 knows only m021's table: re-importing a service it deletes the
    service's indexed rows and writes its own vectors there, never touching the sets. The
    trigger of m022 drops that service's sets (every model's) with its rows, so this version's
    next search makes the set again; it writes nothing into m021's table, and empties a service's
    rows there when the catalog changes."""
    import_toml(backend, ZORBLY)
    import_toml(backend, MELODIA)
    db = _db(backend)
    melodia, zorbly = _vectors(db, "melodia"), _vectors(db, "zorbly")
    _copy_sets(db, OLDER)
    assert db.execute("SELECT count(*) FROM operation_model_vectors").fetchone()[0] == 0
    # what an older version's delete_service_docs does to the index's rows of melodia
    db.execute("DELETE FROM operation_search WHERE rowid IN "
               "(SELECT rowid FROM operation_search_docs WHERE service = 'melodia')")
    db.execute("DELETE FROM operation_search_docs WHERE service = 'melodia'")
    assert _vectors(db, "melodia") == {} and _vectors(db, "melodia", OLDER) == {}
    assert _vectors(db, "zorbly") == zorbly and _vectors(db, "zorbly", OLDER) == zorbly
    # the catalog is as before: this version's next search indexes melodia again, vectors too
    assert op_ids(search(backend, "take a payment", service="melodia"))[0] == "melodia.charge-card"
    assert _vectors(db, "melodia") == melodia and _vectors(db, "melodia", OLDER) == {}
    assert db.execute("SELECT count(*) FROM operation_model_vectors").fetchone()[0] == 0
    db.execute("INSERT INTO operation_model_vectors (model, op_id, service, vector, scale, sumsq) "
               "SELECT 'm021-model', op_id, service, ?, 1.0, 0 FROM operation_search_docs",
               (bytes(embedding.dims()),))
    import_toml(backend, QUUXPAY)
    backend.api("DELETE", "/v1/admin/catalog/zorbly")
    left = {r[0] for r in db.execute("SELECT DISTINCT service FROM operation_model_vectors")}
    assert "melodia" in left and "zorbly" not in left and "quuxpay" not in left
    db.close()


def test_plain_dot_products_are_the_float_sums():
    """embedding.dot_all's integer sums over whole columns give each row's dot product as the
    plain float sum does, to ~1e-7, at the ends of the stored range too (no field overflows)."""
    import random

    rng = random.Random(13)
    dims = embedding.dims()
    rows = [bytes([1] * dims), bytes([255] * dims), bytes([128] * dims),
            bytes(rng.choice((1, 255)) for _ in range(dims)),
            *(bytes(rng.randrange(1, 256) for _ in range(dims)) for _ in range(40))]
    scales = [rng.uniform(0.001, 0.02) for _ in rows]
    spread = [rng.gauss(0, 1) for _ in range(dims)]
    norm = sum(x * x for x in spread) ** 0.5
    for query in ([x / norm for x in spread], [1.0] + [0.0] * (dims - 1), [-1.0] + [0.0] * (dims - 1),
                  [dims ** -0.5] * dims, [-dims ** -0.5] * dims):
        got = embedding.dot_all(query, b"".join(rows), scales)
        want = [s * sum(q * (u - embedding.OFFSET) for q, u in zip(query, row)) for row, s in zip(rows, scales)]
        assert len(got) == len(rows)
        assert max(abs(a - b) for a, b in zip(got, want)) < 1e-6
    assert embedding.dot_all([0.0] * dims, b"".join(rows), scales) == [0.0] * len(rows)
    assert embedding.dot_all([1.0] * dims, b"", []) == []


@pytest.mark.parametrize("text", ["", "   ", "???", "zzqxv", "\u00e9t\u00e9 caf\u00e9", "x" * 300, "a " * 200])
def test_embedding_of_odd_text_is_finite_and_unit_or_zero(text):
    import numpy as np

    v = embedding.embed(text)
    assert v.shape == (embedding.dims(),) and np.isfinite(v).all()
    norm = float(np.linalg.norm(v))
    assert norm == 0.0 or abs(norm - 1.0) < 1e-3


def test_a_phrase_of_letter_soup_has_no_vector_and_no_answer(backend):
    import_toml(backend, MELODIA)
    assert not embedding.embed("zzqx qxzv").any()
    assert search(backend, "zzqx qxzv") == []


def test_wordpiece_cuts_words_as_the_model_vocabulary_does():
    pieces = embedding.word_pieces
    assert len(pieces("payment")) == 1
    assert len(pieces("stargazers")) > 1            # cut into known pieces, none lost
    assert pieces("caf\u00e9") == pieces("cafe")     # accents folded as BERT's uncased tokenizer does
    assert pieces("\u4e2d\u6587") == ()              # nothing known: no vector, no failure


def test_plain_python_and_numpy_similarities_agree(tmp_path):
    """A one-shot search takes the dot products in plain Python, a server with numpy: the same
    figures (to float rounding) and the same nearest operations."""
    from workspacectl.engine.catalog import search_vectors, services
    from workspacectl.engine.catalog.importer import parse_document
    from workspacectl.engine.workspaces.folder import Workspace

    ws, _ = Workspace.create(tmp_path / "ws", name="t", owner_name="O", owner_email="o@example.com")
    conn = ws.conn()
    for doc in (MELODIA, ZORBLY, QUUXPAY, MELODIA.replace('"melodia"', '"melodia2"')):
        services.replace_service(conn, parse_document(doc, "toml"), source="import")
    generation = catalog_search.ensure_current(conn)
    for phrase in [*MEANINGS, "make a widget", "refund"]:
        plain = search_vectors.similarities(conn, phrase, catalog_search.model_id(), generation, plain=True)
        matrix = search_vectors.similarities(conn, phrase, catalog_search.model_id(), generation, plain=False)
        assert plain is not None and matrix is not None
        assert plain.vs.matrix is None and matrix.vs.matrix is not None
        assert plain.op_ids == matrix.op_ids
        assert max(abs(a - float(b)) for a, b in zip(plain.sims, matrix.sims)) < 1e-5
        for services_ in (None, ["melodia", "melodia2"]):
            assert plain.nearest(6, services_) == matrix.nearest(6, services_), phrase
    conn.close()


def test_a_token_row_is_the_same_looked_up_in_the_text_or_in_the_dict():
    """A one-shot search finds its few tokens' rows in the vocabulary's text; past a few dozen
    look-ups the table builds a dict: both answer the same, for tokens and for anything else."""
    by_text, by_dict = embedding._Table(), embedding._Table()
    by_dict.LOOKUPS_BEFORE_DICT = 0
    tokens = (embedding.DATA / "tokens.txt").read_text(encoding="utf-8").split()
    for word in (tokens[0], tokens[1], tokens[-1], "the", "##ing", "payment", "zzqx", "", "##", "a b", "\n",
                 f"{tokens[0]}\n{tokens[1]}", " the"):
        assert by_text.index(word) == by_dict.index(word), repr(word)
    assert by_text.index(tokens[-1]) == len(tokens) - 1 and by_text.index("payment") is not None
    assert by_text._vocab is None and by_dict._vocab is not None
