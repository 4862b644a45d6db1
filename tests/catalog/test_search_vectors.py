"""Semantic vectors of operation search (issue 13): kept with the catalog, used by the ranking.

Each operation's vector is made when it is imported and stored in operation_vectors (float16
bytes); a re-import replaces it, a delete removes it; a workspace from before vectors gets
them on its first search. Phrases sharing no word with the operation they mean are answered
through the vectors, the same on every door.
"""
from __future__ import annotations

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


def _vectors(db, service: str) -> dict[str, bytes]:
    return dict(db.execute("SELECT op_id, vector FROM operation_vectors WHERE service = ?", (service,)))


def test_import_stores_replaces_and_removes_vectors(backend):
    import_toml(backend, ZORBLY)
    import_toml(backend, QUUXPAY)
    db = _db(backend)
    zorbly, quuxpay = _vectors(db, "zorbly"), _vectors(db, "quuxpay")
    assert sorted(zorbly) == ["zorbly.create-widget", "zorbly.delete-widget", "zorbly.get-widget",
                              "zorbly.list-widgets", "zorbly.update-widget"]
    assert len(quuxpay) == 4
    assert {len(v) for v in [*zorbly.values(), *quuxpay.values()]} == {2 * embedding.dims()}
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
    from workspacectl.engine.catalog.importer import parse_document
    from workspacectl.engine.catalog import services
    from workspacectl.engine.workspaces.folder import Workspace

    ws, _ = Workspace.create(tmp_path / "ws", name="t", owner_name="O", owner_email="o@example.com")
    conn = ws.conn()
    services.replace_service(conn, parse_document(MELODIA, "toml"), source="import")
    for phrase, op_id in MEANINGS.items():
        lexical = [op for op, _ in catalog_search.search(conn, phrase, service="melodia", mode="lexical")]
        assert lexical[:1] != [op_id], phrase
        assert [op for op, _ in catalog_search.search(conn, phrase, service="melodia")][0] == op_id
    conn.close()


def test_a_workspace_from_before_vectors_gets_them_on_its_first_search(backend):
    import_toml(backend, ZORBLY)
    import_toml(backend, MELODIA)
    db = _db(backend)
    before = _vectors(db, "melodia")
    # as a workspace made before m015 looks once migrated: no vectors, no model named
    db.execute("DELETE FROM operation_vectors")
    db.execute("DELETE FROM operation_search_meta WHERE key IN ('vector_model', 'vectors_generation')")
    assert op_ids(search(backend, "take a payment", service="melodia"))[0] == "melodia.charge-card"
    assert _vectors(db, "melodia") == before
    n_ops = db.execute("SELECT count(*) FROM operations").fetchone()[0]
    assert db.execute("SELECT count(*) FROM operation_vectors").fetchone()[0] == n_ops
    model = db.execute("SELECT value FROM operation_search_meta WHERE key = 'vector_model'").fetchone()[0]
    assert model == catalog_search.model_id() and model.startswith(embedding.model_id())
    db.close()


def test_vectors_another_model_made_are_made_again(backend):
    import_toml(backend, MELODIA)
    db = _db(backend)
    before = _vectors(db, "melodia")
    db.execute("UPDATE operation_search_meta SET value = 'an-older-model' WHERE key = 'vector_model'")
    db.execute("UPDATE operation_vectors SET vector = ?", (bytes(2 * embedding.dims()),))
    assert op_ids(search(backend, "listen to music", service="melodia"))[0] == "melodia.play-track"
    assert _vectors(db, "melodia") == before
    db.close()


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
    catalog_search.ensure_current(conn)
    for phrase in [*MEANINGS, "make a widget", "refund"]:
        plain = search_vectors.similarities(conn, phrase, plain=True)
        matrix = search_vectors.similarities(conn, phrase, plain=False)
        assert plain is not None and matrix is not None
        assert plain.vs.matrix is None and matrix.vs.matrix is not None
        assert plain.op_ids == matrix.op_ids
        assert max(abs(a - float(b)) for a, b in zip(plain.sims, matrix.sims)) < 1e-5
        for services_ in (None, ["melodia", "melodia2"]):
            assert plain.nearest(6, services_) == matrix.nearest(6, services_), phrase
    conn.close()
