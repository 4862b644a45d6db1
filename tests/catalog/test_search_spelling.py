"""Misspelt words in a search phrase are put right from the catalog's own vocabulary
(engine/catalog/spelling.py), through every door; words the catalog uses stay as typed."""
from __future__ import annotations

import pytest

from tests.catalog.test_search import QUUXPAY, ZORBLY, import_toml, op_ids, search
from workspacectl.engine.catalog.spelling import edits1


def test_edits1_are_the_words_one_slip_away():
    near = edits1("gist")
    assert {"gst", "igst", "gits", "gisty", "list"} <= near
    assert "gist" not in near and "tsig" not in near
    assert all(abs(len(n) - 4) <= 1 for n in near) and not any(n.startswith("tsi") for n in near)


@pytest.mark.parametrize("phrase, misspelt", [
    ("refund a chrage", "refund a charge"),        # two letters swapped
    ("delete a widgt", "delete a widget"),         # one left out
    ("zorbyl widgets", "zorbly widgets"),          # the service's name
])
def test_a_misspelt_word_answers_as_the_right_one_does(backend, phrase, misspelt):
    import_toml(backend, ZORBLY)
    import_toml(backend, QUUXPAY)
    right = op_ids(search(backend, misspelt, limit=5))
    assert right and op_ids(search(backend, phrase, limit=5)) == right


def test_words_the_catalog_uses_are_never_corrected(backend):
    """"quuxpay" and "widgets" are nobody's English, but the catalog's: they stay as typed, so
    a widget search does not drift to a neighbour ("gadgets" is one letter from nothing here)."""
    import_toml(backend, ZORBLY)
    import_toml(backend, QUUXPAY)
    assert op_ids(search(backend, "quuxpay widget", limit=1)) == ["quuxpay.create-widget"]
    assert op_ids(search(backend, "zorbly list widgets", limit=1)) == ["zorbly.list-widgets"]


def test_a_word_with_no_neighbour_in_the_catalog_stays_unknown(backend):
    import_toml(backend, ZORBLY)
    assert search(backend, "qxzvw", service="zorbly") == []
