"""The ranking core's one cache: derived arrays, least recently used first out, within a byte budget."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

__all__ = ["WeightsCache"]

#: What an entry costs besides its arrays (key, tuple, dictionary slot).
ENTRY_OVERHEAD = 128


class WeightsCache:
    """Values by key, evicted least recently used first once their bytes exceed ``budget``.

    Keys start with a kind ("weights", "order", "visible", ...) and name exactly what the value
    is a function of (a visible collection, a term), so a hit is always exact and eviction only
    costs time. The newest entry is kept even when it alone exceeds the budget.

    Thread safety: every method holds the cache's lock for its whole (short) run. Values are
    never modified once stored; a value that grows (a deeper impact order) is stored again as a
    new value. A caller may therefore keep using a value after it was evicted or replaced.
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def get(self, key: Hashable) -> Any:
        """The value of ``key`` (now the most recently used), or None."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return None
            self._entries.move_to_end(key)
            return hit[0]

    def put(self, key: Hashable, value: Any, nbytes: int) -> None:
        """Store ``value`` (counted as ``nbytes`` plus bookkeeping) under ``key``, replacing any
        older value, then evict from the least recently used end until within budget."""
        size = nbytes + ENTRY_OVERHEAD
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (value, size)
            self._bytes += size
            while self._bytes > self.budget and len(self._entries) > 1:
                self._bytes -= self._entries.popitem(last=False)[1][1]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
