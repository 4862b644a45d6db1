"""The semantic half of operation search: how near each operation's stored vector is to a phrase.

    similarities(conn, phrase, model, generation) -> Similarities | None   (None: no vectors, or no known word)
    Similarities.nearest(k, services=None) -> rows, nearest first

Two ways to the same figures (they differ only in float rounding, ~1e-6):
- a process that searches again (a server) keeps every operation's vector as one numpy float32
  matrix per vectors generation, and a phrase is one matrix-vector product;
- a process's first search over a catalog of at most PLAIN_MAX operations (a one-shot `wsctl
  catalog search`) reads the stored vectors and takes the dot products in plain Python
  (embedding.dot_all: exact integer sums over whole columns of the stored bytes, ~1.5 µs a
  row), which costs less than importing numpy (~90 ms of CPU) and building the matrix.
Both read only the vectors of this version's model (search.model_id()), one row per service
(m022).
"""
from __future__ import annotations

import heapq
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from workspacectl.engine.catalog import embedding
from workspacectl.engine.store import catalog_search as store

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

PLAIN_MAX = 8000


class VectorSet:
    """The stored vectors' operations in row order, and (numpy way) their float32 matrix."""

    def __init__(self, stored: store.VectorSet, matrix: bool):
        self.op_ids: list[str] = stored.op_ids
        self.row_of = dict(zip(self.op_ids, range(len(self.op_ids))))
        self.services: list[str] = stored.services
        self.stored = stored        # the plain way's vectors and scales
        self.matrix: Any = embedding.dequantize(stored.vectors, stored.scales) if matrix else None
        self._service_array: Any = None   # numpy array of self.services, made on first use

    def rows_of_services(self, services: list[str]) -> Any:
        if self.matrix is None:
            wanted = set(services)
            return [i for i, s in enumerate(self.services) if s in wanted]
        np = embedding.numpy()
        if self._service_array is None:
            self._service_array = np.array(self.services)
        return np.flatnonzero(np.isin(self._service_array, services))


class Similarities:
    def __init__(self, vs: VectorSet, sims: Sequence[float]):
        self.vs, self.sims = vs, sims
        self.op_ids, self.row_of = vs.op_ids, vs.row_of
        self._nearest: dict[tuple[int, tuple[str, ...]], list[int]] = {}

    def of(self, op_id: str) -> float:
        i = self.row_of.get(op_id)
        return float(self.sims[i]) if i is not None else 0.0

    def nearest(self, k: int, services: list[str] | None = None) -> list[int]:
        """The k rows nearest the phrase (among some services' rows), ties in row order."""
        key = (k, tuple(services or ()))
        if key not in self._nearest:
            self._nearest[key] = self._find_nearest(k, services)
        return list(self._nearest[key])

    def _find_nearest(self, k: int, services: list[str] | None) -> list[int]:
        rows = self.vs.rows_of_services(services) if services else None
        if self.vs.matrix is None:
            pool = range(len(self.sims)) if rows is None else rows
            # nlargest is sorted(..., reverse=True)[:k]: stable, so ties stay in row order
            return heapq.nlargest(k, pool, key=self.sims.__getitem__)
        np = embedding.numpy()
        sims = self.sims if rows is None else self.sims[rows]
        k = min(k, len(sims))
        if k == 0:
            return []
        kth = np.partition(sims, len(sims) - k)[len(sims) - k]
        top = np.flatnonzero(sims >= kth)
        top = top[np.lexsort((top, -sims[top]))][:k]
        return [int(i) for i in (top if rows is None else rows[top])]


# (generation: a random token written with every change of vectors, model) -> VectorSet with its
# matrix; a few kept, for a process serving several workspaces.
_CACHE: dict[tuple[str, str], VectorSet] = {}
_CACHE_SIZE = 4
_lock = threading.Lock()
_searched = False     # has this process searched before? (then it will again: keep the matrix)


def _matrix_set(conn: Conn, key: tuple[str, str]) -> VectorSet:
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    with _lock:
        cached = _CACHE.get(key)
        if cached is None:
            cached = VectorSet(store.all_vectors(conn, key[1]), matrix=True)
            while len(_CACHE) >= _CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[key] = cached
    return cached


def similarities(conn: Conn, phrase: str, model: str, generation: str | None,
                 plain: bool | None = None, count: int | None = None) -> Similarities | None:
    """The phrase against `model`'s stored vectors (search.model_id()); generation: the vectors
    generation the caller read (store.search_state). plain: True for plain Python, False for the
    numpy matrix, None to choose (see above). count: how many vectors the model has, when the
    caller knows (the index check counted them), else counted here if needed."""
    global _searched
    if generation is None:
        return None
    query = embedding.embed_query(phrase)
    if query is None:
        return None
    key = (generation, model)
    first, _searched = not _searched, True
    if plain is None:
        plain = key not in _CACHE and first and \
            (count if count is not None else store.vector_count(conn, key[1])) <= PLAIN_MAX
    if plain:
        vs = VectorSet(store.all_vectors(conn, key[1]), matrix=False)
        return Similarities(vs, embedding.dot_all(query, vs.stored.vectors, vs.stored.scales)) if vs.op_ids else None
    vs = _matrix_set(conn, key)
    if not vs.op_ids:
        return None
    np = embedding.numpy()
    return Similarities(vs, vs.matrix @ np.asarray(query, dtype=np.float32))
