"""Static sentence vectors for operation search: MiniLM distilled to one vector per WordPiece
token (bench/distil_embeddings.py; embedding_data/MODEL.md says what and under which licence).

    embed(text) -> float32 [DIMS], unit length (zeros when no token is known)
    embed_many(texts) -> float32 [n, DIMS]
    model_id()  changes whenever the shipped vectors do (stored vectors made by another are rebuilt)

A text is split as search_text.words splits it (camelCase, snake_case, paths), each word
lower-cased, accents removed, and cut into WordPiece tokens (greedy longest match, as BERT's
tokenizer does) over the shipped vocabulary; its vector is the mean of its tokens' vectors,
normalised. No torch, no tokenizer library: numpy and this module.
"""
from __future__ import annotations

import hashlib
import os
import threading
import unicodedata
from functools import lru_cache
from pathlib import Path

# One BLAS thread: a search is one matrix-vector product, which a single core does in well under
# a millisecond over 3,481 rows (4 ms over 100,000); OpenBLAS's thread pool costs 8 ms of CPU and,
# on a busy machine, 60 ms of waiting for each one (measured, bench/README.md). Set before numpy
# is first imported, which only this module does; a caller's own setting wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from workspacectl.engine.catalog.search_text import words  # noqa: E402  (after the thread settings, as numpy)

DATA = Path(__file__).resolve().parent / "embedding_data"
MAX_WORD_CHARS = 60
MAX_TOKENS = 256

_lock = threading.Lock()
_table: tuple[dict[str, int], "_Rows"] | None = None


def _load() -> tuple[dict[str, int], "_Rows"]:
    global _table
    if _table is None:
        with _lock:
            if _table is None:
                tokens = (DATA / "tokens.txt").read_text(encoding="utf-8").split()
                # Mapped, not read: a phrase touches a handful of rows, so a local search
                # does not pay for reading 7 MB.
                _table = ({t: i for i, t in enumerate(tokens)},
                          _Rows(np.load(DATA / "vectors.npy", mmap_mode="r"), np.load(DATA / "scales.npy")))
    return _table


class _Rows:
    """int8 rows and their float32 scales; rows[ids] -> float32 vectors."""

    def __init__(self, q, scales):
        self.q, self.scales = q, scales
        self.shape = q.shape

    def __getitem__(self, ids):
        return np.asarray(self.q[ids], dtype=np.float32) * self.scales[ids][:, None]


@lru_cache(maxsize=1)
def model_id() -> str:
    """Names the shipped vectors; stored operation vectors made under another are rebuilt."""
    # MODEL.md carries the sha256 of tokens.txt, vectors.npy and scales.npy: hashing it is hashing them,
    # without reading 6 MB on every start.
    return "minilm-l6-static-" + hashlib.sha256((DATA / "MODEL.md").read_bytes()).hexdigest()[:12]


def dims() -> int:
    return _load()[1].shape[1]


def _fold(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")


@lru_cache(maxsize=65536)
def word_pieces(word: str) -> tuple[int, ...]:
    """WordPiece token rows of one lower-case word; () when it cannot be cut into known pieces."""
    vocab = _load()[0]
    word = _fold(word)
    if not word or len(word) > MAX_WORD_CHARS:
        return ()
    out, start = [], 0
    while start < len(word):
        end, piece = len(word), None
        while end > start:
            sub = word[start:end] if start == 0 else "##" + word[start:end]
            if sub in vocab:
                piece = vocab[sub]
                break
            end -= 1
        if piece is None:
            return ()
        out.append(piece)
        start = end
    return tuple(out)


def _letter_soup(word: str, pieces: tuple[int, ...]) -> bool:
    """A word the vocabulary can only spell letter by letter ("zzqx") means nothing: more than
    half of its pieces are single characters."""
    return len(pieces) > 1 and sum(1 for p in pieces if len(_piece_text(p)) == 1) * 2 > len(pieces)


def _piece_text(row: int) -> str:
    return _tokens()[row].removeprefix("##")


@lru_cache(maxsize=1)
def _tokens() -> list[str]:
    return (DATA / "tokens.txt").read_text(encoding="utf-8").split()


def token_rows(text: str) -> list[int]:
    """Token rows of a text; words spelt only letter by letter are left out."""
    rows: list[int] = []
    for w in words(text):
        pieces = word_pieces(w)
        if not _letter_soup(w, pieces):
            rows.extend(pieces)
        if len(rows) >= MAX_TOKENS:
            break
    return rows[:MAX_TOKENS]


def embed(text: str) -> np.ndarray:
    return embed_many([text])[0]


def embed_many(texts: list[str]) -> np.ndarray:
    matrix = _load()[1]
    out = np.zeros((len(texts), matrix.shape[1]), dtype=np.float32)
    for i, text in enumerate(texts):
        rows = token_rows(text)
        if rows:
            v = matrix[rows].mean(axis=0)
            norm = float(np.linalg.norm(v))
            if norm > 0:
                out[i] = v / norm
    return out


def to_blob(vector: np.ndarray) -> bytes:
    """float16 bytes: half the size, and far more precision than a cosine ranking needs."""
    return vector.astype("<f2").tobytes()


def from_blobs(blobs: list[bytes]) -> np.ndarray:
    if not blobs:
        return np.zeros((0, dims()), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype="<f2").reshape(len(blobs), -1).astype(np.float32)
