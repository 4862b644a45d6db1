"""Misspelt words in a search phrase, put right from the catalog's own vocabulary.

    suspects(words, known=()) -> the words corrections() may put right
    neighbour_stems(suspects) -> the stems whose frequencies corrections() reads
    corrections(terms, words, known=()) -> {misspelt word: correction}   (terms: store.TermReader)

A word is taken for misspelt only when nothing knows it: it is not a word of the vectors'
vocabulary (engine/catalog/embedding.py), not in `known` (the services' names), and its stem is
in no indexed operation. It is then replaced by the word one edit away (a letter left out,
added, changed, or two swapped: Norvig's edits1) whose stem the most operations use, or by a
service's name; a word
with no such neighbour stays as typed. General language knowledge, not a table: the catalog
decides what a word should have been ("coment" -> "comment", "stirpe" -> "stripe").
"""
from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from workspacectl.engine.catalog import embedding
from workspacectl.engine.catalog.search_text import STOP_WORDS, stem
from workspacectl.engine.store import catalog_search as store

MIN_LETTERS = 4       # shorter words have too many neighbours to guess from
_LETTERS = "abcdefghijklmnopqrstuvwxyz"     # string.ascii_lowercase, without importing `string`


@lru_cache(maxsize=256)
def edits1(word: str) -> frozenset[str]:
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    return frozenset(({a + b[1:] for a, b in splits if b}
            | {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
            | {a + c + b[1:] for a, b in splits if b for c in _LETTERS}
            | {a + c + b for a, b in splits for c in _LETTERS}) - {word})


def suspects(words: list[str], known: Iterable[str] = ()) -> list[str]:
    """The words nothing knows by their spelling alone (see the module's text)."""
    known_words = set(known)
    return [w for w in dict.fromkeys(words)
            if len(w) >= MIN_LETTERS and w.isascii() and w.isalpha() and w not in STOP_WORDS
            and w not in known_words and not embedding.is_word(w)]


def neighbour_stems(suspects: list[str]) -> set[str]:
    """The suspects' stems and their neighbours' (the document frequencies corrections() reads)."""
    return {stem(w) for w in suspects} | {stem(n) for w in suspects for n in edits1(w)}


def corrections(terms: store.TermReader, words: list[str], known: Iterable[str] = ()) -> dict[str, str]:
    known_words = set(known)
    wrong = suspects(words, known_words)
    if not wrong:
        return {}
    neighbours = {w: edits1(w) for w in wrong}
    freqs: dict[str, int] = {}
    for term, _, df in terms.read(neighbour_stems(wrong)):
        freqs[term] = freqs.get(term, 0) + df

    def _uses(n: str) -> int:
        """Operations using a neighbour (a service's name counts as used once at least)."""
        return freqs.get(stem(n), 0) or (1 if n in known_words else 0)

    out = {}
    for w in wrong:
        if freqs.get(stem(w)):
            continue        # the catalog uses it: a word of its own, not a slip
        ranked = sorted(neighbours[w])
        most = max(map(_uses, ranked))
        if most:   # the most used neighbour, a word of the vocabulary first among equals
            tied = [n for n in ranked if _uses(n) == most]
            out[w] = next((n for n in tied if embedding.is_word(n)), tied[0])
    return out
