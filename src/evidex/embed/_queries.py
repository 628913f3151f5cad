"""Query embeddings, cached once per process.

A query embedding costs more CPU than the search that uses it, so repeated questions must not
pay it twice. The cache is
shared by every ``KnowledgeBase`` in the process, not kept per handle: the service holds several
store handles per worker, and a per-handle cache made each handle embed the same popular question
again. Keys are (model id, exact query text): vectors of different models never meet, and the
model sees the text as typed, so two spellings are two keys.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["QueryVectorCache", "query_vectors"]

Vector = npt.NDArray[np.float32]


class QueryVectorCache:
    """Bounded least-recently-used map (model id, text) -> unit float32 vector.

    Thread-safe. The model runs outside the lock, so a slow embedding never blocks lookups of
    other queries; two threads that miss on the same text at once both embed it, and the results
    are identical. Stored vectors are read-only because every caller shares them.
    """

    def __init__(self, capacity: int = 4096) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._items: OrderedDict[tuple[str, str], Vector] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, model_id: str, text: str,
            embed: Callable[[Sequence[str]], Vector]) -> Vector:
        key = (model_id, text)
        with self._lock:
            vec = self._items.get(key)
            if vec is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return vec
            self.misses += 1
        return self._put(key, embed([text])[0])

    def __getitem__(self, key: tuple[str, str]) -> Vector:
        with self._lock:
            return self._items[key]

    def _put(self, key: tuple[str, str], vec: npt.ArrayLike) -> Vector:
        arr = np.array(vec, dtype=np.float32)  # a private copy: callers may reuse their buffer
        arr.flags.writeable = False
        with self._lock:
            self._items[key] = arr
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return arr

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


#: The process-wide cache every ``KnowledgeBase`` uses unless given its own.
query_vectors = QueryVectorCache()
