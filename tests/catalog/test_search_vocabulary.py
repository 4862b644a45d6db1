"""The shipped vocabulary's lookups (engine/catalog/embedding.py _Table): a token found in the
vocabulary's text answers the row the full dict answers, before and after the table switches to
the dict (after FIND_MISSES misses), and word pieces and letter soup come out the same both ways."""
from __future__ import annotations

from workspacectl.engine.catalog import embedding

WORDS = ["message", "refund", "repository", "webhook", "stargazers", "zzqx", "xyzzyplugh", "café", "日本",
         "a", "send", "channel", "##ing", "##s", "", "payment", "pull", "requests", "gist", "coment"]


def _pieces(table: embedding._Table, word: str) -> list[str]:
    """WordPiece cut of a word with one table, as embedding.word_pieces cuts it."""
    out, start = [], 0
    while start < len(word):
        end, piece = len(word), None
        while end > start:
            piece = table.find(word[start:end] if start == 0 else "##" + word[start:end])
            if piece is not None:
                break
            end -= 1
        if piece is None:
            return []
        out.append(table.token(piece))
        start = end
    return out


def test_found_in_the_text_as_in_the_dict():
    by_text, by_dict = embedding._Table(), embedding._Table()
    vocab = by_dict.vocab
    assert by_text.n == len(vocab) == len(by_dict.tokens)
    sample = [by_dict.tokens[i] for i in (0, 1, 2, 100, 1000, 5000, 20000, by_text.n - 2, by_text.n - 1)]
    for token in sample:
        assert by_text.find(token) == vocab[token]
        assert by_text.token(vocab[token]) == token
    assert by_text._vocab is None            # hits alone never build the dict
    for word in WORDS:
        assert _pieces(by_text, word) == _pieces(by_dict, word), word
    for i in range(embedding._Table.FIND_MISSES + 1):
        assert by_text.find(f"qqq{i}zzz") is None
    assert by_text._vocab is not None        # too many misses: the dict answers from now on
    for word in WORDS:
        assert _pieces(by_text, word) == _pieces(by_dict, word), word
    assert by_text.find("message") == vocab["message"] and by_text.find("no\nsuch") is None


def test_word_pieces_and_letter_soup_unchanged():
    assert embedding.word_pieces("message") and embedding.is_word("message")
    assert not embedding.is_word("refund") and embedding.word_pieces("refund")
    assert embedding.token_rows("zzqx") == []
    assert embedding.embed_query("zzqx qqzx") is None
    assert embedding.embed_query("send a message") is not None
