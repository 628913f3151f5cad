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

    Keys start with a kind ("weights", "order", "visible", ...) and name what the value is
    derived from (a visible collection, a signature table, a term). Where that does not pin the
    value down (kept parts, frequency arrays) the value carries the snapshot mark it was made
    at, which its user checks. Eviction only costs time. The newest entry is kept even when it
    alone exceeds the budget.

    Thread safety: every method holds the cache's lock for its whole (short) run, and the cache
    never changes a value it holds. Its users store a value that grows (a deeper impact order)
    again as a new value, so a caller may keep using a value after it was evicted or replaced;
    the one array written after it is stored, a term's frequency array, only ever receives at
    an id the one value that id has in every snapshot (see ``_postings.frequencies``).
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        #: key -> (value, bytes counted, lineage or None)
        self._entries: OrderedDict[Hashable, tuple[Any, int, Hashable]] = OrderedDict()
        #: lineage -> the key last stored under it
        self._latest: dict[Hashable, Hashable] = {}
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

    def put(self, key: Hashable, value: Any, nbytes: int, lineage: Hashable = None) -> None:
        """Store ``value`` (counted as ``nbytes`` plus bookkeeping) under ``key``, replacing any
        older value, then evict from the least recently used end until within budget.

        ``lineage`` names what the value is the newest version of (a term's weights under one
        signature table, say): the entry stored last under the same lineage is dropped now, as
        the caller knows it will not be asked for again, rather than when it is least recently
        used. Its memory is then free for the values that replace it."""
        size = nbytes + ENTRY_OVERHEAD
        with self._lock:
            self._drop(key)
            if lineage is not None:
                older = self._latest.get(lineage)
                if older is not None:
                    self._drop(older)
                self._latest[lineage] = key
            self._entries[key] = (value, size, lineage)
            self._bytes += size
            while self._bytes > self.budget and len(self._entries) > 1:
                self._drop(next(iter(self._entries)))

    def retire(self, lineage: Hashable) -> None:
        """Drop the entry stored last under ``lineage`` now, before its successor is computed:
        once no caller holds its arrays, their memory can serve the successor's."""
        with self._lock:
            older = self._latest.pop(lineage, None)
            if older is not None:
                self._drop(older)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._latest.clear()
            self._bytes = 0

    def _drop(self, key: Hashable) -> None:
        """Remove ``key``'s entry if present (the caller holds the lock)."""
        gone = self._entries.pop(key, None)
        if gone is not None:
            self._bytes -= gone[1]
            if gone[2] is not None and self._latest.get(gone[2]) == key:
                del self._latest[gone[2]]
