"""Static sentence vectors for operation search: MiniLM distilled to one vector per WordPiece
token (bench/distil_embeddings.py), then those vectors fine-tuned on the domain as the mean this
module takes (bench/train_embeddings.py); embedding_data/MODEL.md says what and under which licence.

    embed_query(text) -> tuple of floats [DIMS], unit length, or None when no token is known
    embed(text) / embed_many(texts) -> float32 numpy arrays (zeros when no token is known)
    quantize(matrix) -> stored rows (int8 steps as bytes, scale); dequantize back
    dot_all(query, vectors, scales) -> [cosine of the query to each stored vector]  (no numpy)
    model_id()  changes whenever the shipped vectors do (stored vectors made by another are rebuilt)

A text is split as search_text.words splits it (camelCase, snake_case, paths), each word
lower-cased, accents removed, and cut into WordPiece tokens (greedy longest match, as BERT's
tokenizer does) over the shipped vocabulary; its vector is the mean of its tokens' vectors,
normalised. No torch, no tokenizer library.

numpy is imported only where many vectors are made or kept (import, a server's cached matrix):
a phrase's vector and one pass over a small catalog's stored vectors are plain Python, so a
one-shot `wsctl catalog search` does not pay for importing numpy (bench/README.md).
"""
from __future__ import annotations

import ast
import hashlib
import math
import mmap
import os
import struct
import threading
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from itertools import accumulate
from pathlib import Path
from typing import Any

from workspacectl.engine.catalog.search_text import words

DATA = Path(__file__).resolve().parent / "embedding_data"
MAX_WORD_CHARS = 60
MAX_TOKENS = 256

_lock = threading.Lock()
_table: _Table | None = None


def numpy() -> Any:
    """numpy, with one BLAS thread: a search is one matrix-vector product, which a single core
    does in well under a millisecond over 3,481 rows (4 ms over 100,000); OpenBLAS's thread pool
    costs 8 ms of CPU and, on a busy machine, 60 ms of waiting for each one (measured,
    bench/README.md). Set before numpy is first imported; a caller's own setting wins."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    import numpy as np

    return np


def _npy(path: Path) -> tuple[Any, int, tuple[int, ...], str]:
    """(memory map of an .npy file, offset of its data, shape, dtype descr), read without numpy."""
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if mm[:6] != b"\x93NUMPY":
        raise ValueError(f"{path.name}: not an .npy file")
    if mm[6] == 1:
        (n,), start = struct.unpack_from("<H", mm, 8), 10
    else:
        (n,), start = struct.unpack_from("<I", mm, 8), 12
    header = ast.literal_eval(mm[start:start + n].decode("latin-1"))
    if header.get("fortran_order"):
        raise ValueError(f"{path.name}: Fortran order")
    return mm, start + n, tuple(header["shape"]), header["descr"]


class _Table:
    """The shipped vocabulary and its vectors: int8 rows and a float32 scale each, mapped, not
    read (a phrase touches a handful of rows).

    A token's row is looked up in the vocabulary's text itself (its line number) for the first
    LOOKUPS_BEFORE_DICT tokens: a one-shot search asks for a few, and a dict of all 27,558 costs
    more CPU to build and free than ~60 such look-ups (bench/README.md, cli_startup). Past that (an
    import embedding thousands of texts, a server) the dict is built once and used."""

    LOOKUPS_BEFORE_DICT = 48
    BLOCK = 16384

    def __init__(self) -> None:
        text = (DATA / "tokens.txt").read_bytes()     # UTF-8, searched as it is (not decoded)
        self._lines = b"\n" + text   # each token between two newlines; the newlines before it count its row
        # newlines before each BLOCK bytes of the text: a row is counted from its block's start,
        # not from the text's (~0.1 ms a look-up otherwise)
        self._before = list(accumulate((self._lines.count(b"\n", i, i + self.BLOCK)
                                        for i in range(0, len(self._lines), self.BLOCK)), initial=0))
        self.count = self._before[-1] - 1
        self._vocab: dict[str, int] | None = None
        self._lookups = 0
        self.mm, self.offset, shape, descr = _npy(DATA / "vectors.npy")
        if descr != "|i1" or len(shape) != 2 or shape[0] != self.count:
            raise ValueError("vectors.npy: expected int8 [tokens, dims]")
        self.dims = shape[1]
        self._row = struct.Struct(f"{self.dims}b")
        # the scales are read where a row is (a phrase needs a handful of the 27,558)
        self._scales, self._scales_offset, shape, descr = _npy(DATA / "scales.npy")
        if descr != "<f4" or shape != (self.count,):
            raise ValueError("scales.npy: expected float32 [tokens]")

    def index(self, token: str) -> int | None:
        """The row of a token of the vocabulary, None for any other string."""
        if self._vocab is None:
            if self._lookups < self.LOOKUPS_BEFORE_DICT:
                self._lookups += 1
                try:
                    key = b"\n" + token.encode("utf-8") + b"\n" if token and "\n" not in token else b""
                except UnicodeEncodeError:      # a lone surrogate: in no vocabulary
                    key = b""
                at = self._lines.find(key) if key else -1
                if at < 0:
                    return None
                block = at // self.BLOCK
                return self._before[block] + self._lines.count(b"\n", block * self.BLOCK, at)
            tokens = self._lines.decode("utf-8").split()
            self._vocab = dict(zip(tokens, range(len(tokens))))
        return self._vocab.get(token)

    def row(self, i: int) -> tuple[int, ...]:
        return self._row.unpack_from(self.mm, self.offset + i * self.dims)

    def scale(self, i: int) -> float:
        return _SCALE.unpack_from(self._scales, self._scales_offset + 4 * i)[0]

    def matrix(self) -> Any:
        """The whole table as a numpy int8 [tokens, dims] view and float32 scales (for embed_many)."""
        np = numpy()
        q = np.frombuffer(self.mm, dtype=np.int8, count=self.count * self.dims,
                          offset=self.offset).reshape(self.count, self.dims)
        return q, np.frombuffer(self._scales, dtype="<f4", count=self.count, offset=self._scales_offset)


_SCALE = struct.Struct("<f")


def _load() -> _Table:
    global _table
    if _table is None:
        with _lock:
            if _table is None:
                _table = _Table()
    return _table


@lru_cache(maxsize=1)
def model_id() -> str:
    """Names the shipped vectors; stored operation vectors made under another are rebuilt."""
    # MODEL.md carries the sha256 of tokens.txt, vectors.npy and scales.npy: hashing it is hashing them,
    # without reading 6 MB on every start.
    return "minilm-l6-static-" + hashlib.sha256((DATA / "MODEL.md").read_bytes()).hexdigest()[:12]


def dims() -> int:
    return _load().dims


def _fold(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")


def word_pieces(word: str) -> tuple[int, ...]:
    """WordPiece token rows of one lower-case word; () when it cannot be cut into known pieces."""
    return _cut(word)[0]


@lru_cache(maxsize=65536)
def _cut(word: str) -> tuple[tuple[int, ...], int]:
    """(word_pieces(word), how many of those pieces are a single letter)."""
    table = _load()
    word = _fold(word)
    if not word or len(word) > MAX_WORD_CHARS:
        return (), 0
    out, start, letters = [], 0, 0
    while start < len(word):
        end, piece = len(word), None
        while end > start:
            piece = table.index(word[start:end] if start == 0 else "##" + word[start:end])
            if piece is not None:
                break
            end -= 1
        if piece is None:
            return (), 0
        out.append(piece)
        letters += end - start == 1
        start = end
    return tuple(out), letters


def is_word(word: str) -> bool:
    """A whole word of the vocabulary (not a word piece)."""
    return _load().index(word) is not None


def _letter_soup(word: str) -> bool:
    """A word the vocabulary can only spell letter by letter ("zzqx") means nothing: more than
    half of its pieces are single characters."""
    pieces, letters = _cut(word)
    return len(pieces) > 1 and letters * 2 > len(pieces)


def token_rows(text: str) -> list[int]:
    """Token rows of a text; words spelt only letter by letter are left out."""
    rows: list[int] = []
    for w in words(text):
        pieces = word_pieces(w)
        if not _letter_soup(w):
            rows.extend(pieces)
        if len(rows) >= MAX_TOKENS:
            break
    return rows[:MAX_TOKENS]


def embed_query(text: str) -> tuple[float, ...] | None:
    """A phrase's unit vector in plain Python (a few rows of the table), or None."""
    rows = token_rows(text)
    if not rows:
        return None
    table = _load()
    total = [0.0] * table.dims
    for i in rows:
        scale = table.scale(i)
        total = [t + scale * x for t, x in zip(total, table.row(i))]
    norm = math.sqrt(math.fsum(t * t for t in total))
    if norm == 0:
        return None
    return tuple(t / norm for t in total)


def embed(text: str) -> Any:
    """A phrase's vector as a float32 numpy array (zeros when no token is known)."""
    np = numpy()
    v = embed_query(text)
    return np.zeros(dims(), dtype=np.float32) if v is None else np.asarray(v, dtype=np.float32)


def embed_many(texts: list[str]) -> Any:
    """float32 [n, dims], one unit row per text (zeros when no token is known)."""
    np = numpy()
    q, scales = _load().matrix()
    out = np.zeros((len(texts), q.shape[1]), dtype=np.float32)
    for i, text in enumerate(texts):
        rows = token_rows(text)
        if rows:
            v = (q[rows].astype(np.float32) * scales[rows][:, None]).mean(axis=0)
            norm = float(np.linalg.norm(v))
            if norm > 0:
                out[i] = v / norm
    return out


# A stored vector: int8 steps of one scale per row, each step offset by OFFSET to a byte (1..255).
OFFSET = 128
STEPS = 127
# Names the stored form; part of search.model_id(), so vectors stored in another form are made again.
STORED_FORM = "q8"


def quantize(matrix: Any) -> list[tuple[bytes, float]]:
    """float32 [n, dims] -> per row (bytes, scale): row ~= scale * (bytes - OFFSET)."""
    np = numpy()
    peak = np.abs(matrix).max(axis=1) if len(matrix) else np.zeros(0, dtype=np.float32)
    scales = np.where(peak > 0, peak / STEPS, 1.0).astype(np.float64)
    steps = np.clip(np.rint(matrix / scales[:, None]), -STEPS, STEPS).astype(np.int64) + OFFSET
    return [(row.astype(np.uint8).tobytes(), float(sc)) for row, sc in zip(steps, scales)]


def dequantize(vectors: bytes, scales: Sequence[float]) -> Any:
    """float32 [n, dims] from stored rows (their bytes one after another, and their scales), for a
    process that keeps the matrix."""
    np = numpy()
    if not scales:
        return np.zeros((0, dims()), dtype=np.float32)
    steps = np.frombuffer(vectors, dtype=np.uint8).reshape(len(scales), -1)
    return ((steps.astype(np.float64) - OFFSET) * np.asarray(scales, dtype=np.float64)[:, None]).astype(np.float32)


# dot_all's field: the bytes of one sum in its big integers (see there)
FIELD_BYTES = 5


def dot_all(query: Sequence[float], vectors: bytes, scales: Sequence[float]) -> list[float]:
    """The query's dot product with each stored row (rows of `dims` bytes one after another, and
    their scales: quantize's columns), in plain Python, for a one-shot search over a few thousand
    rows (cheaper than importing numpy, ~90 ms of CPU).

    Exact integer sums, a whole column of the rows at a time: the query's coordinates become
    integers (x * 2**bits rounded, bits >= 25 for a unit query: the cosines are off by at most
    ~2e-7, ~1e-8 typically, less than numpy's float32 product), each column's bytes are spread
    one to a FIELD_BYTES-byte field of one big integer (the rows' fields side by side), which is
    multiplied by the column's coordinate and added up: one multiplication and one addition of
    big integers per dimension, all in C (math.dist over each row's bytes cost ~1.5x, a product
    per row and dimension in Python ~20x). `bits` is chosen so that no field's sum can leave its
    field (|sum| <= 128 * (sum(|q|) * 2**bits + dims / 2) < 2**(8 * FIELD_BYTES - 1)), each
    field starting at half its range."""
    dims = len(query)
    n = len(vectors) // dims if dims else 0
    l1 = math.fsum(map(abs, query))
    if not n or not l1:
        return [0.0] * n
    width = FIELD_BYTES
    bits = 8 * width - 10 - math.frexp(l1)[1]
    ints = [round(math.ldexp(x, bits)) for x in query]
    half = 1 << (8 * width - 1)
    total = int.from_bytes((half - OFFSET * sum(ints)).to_bytes(width, "little") * n, "little")
    field = bytearray(width * n)
    for i, k in enumerate(ints):
        if k:
            field[::width] = vectors[i::dims]
            total += int.from_bytes(field, "little") * k
    raw = total.to_bytes(width * n, "little")
    wide = bytearray(8 * n)
    for j in range(width):
        wide[j::8] = raw[j::width]
    unit = math.ldexp(1.0, -bits)
    return [s * ((f - half) * unit) for s, f in zip(scales, struct.unpack(f"<{n}Q", wide))]
