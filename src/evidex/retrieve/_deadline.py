"""The vector leg's deadline and the keyword fallback.

Hybrid search needs the query's embedding and a vector search. Either can be slow (a loaded
machine, a model server that stalls) or impossible (a keyword-only store). The keyword ranking
is always available, so hybrid search then returns it instead of waiting or failing, and says
so: ``SearchResults.fallback`` names what happened, and the evidence level is computed from the
keyword signals alone (no similarity).

The query is embedded on a worker thread so a caller can stop waiting for it: a thread cannot
be cancelled, so an embedding that missed its deadline still finishes in the background and
fills the query-vector cache (the same question next time is fast). The vector search itself
runs on the caller's thread (it reads the caller's snapshot); it starts only when time is left
and its result is discarded when it finished past the deadline, so a hybrid result is either
all within the deadline or the keyword ranking. The answer-bearing decision's quote vectors
(``answer._pipeline._quotes_within``) get a deadline of the same length of their own: past it the
quotes are read by their words alone, and the answer's trace says so.

Loading a model is not the vector leg being slow: the first query embedding of each model in a
process runs without deadline and the deadline starts after it, so a cold process (every
``evidex search``) does not answer its first question by keywords only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

__all__ = ["Deadline", "Fallback", "embed_within", "within"]

T = TypeVar("T")

#: Shared by every search of the process; sized like the default pool (the work is native code
#: that releases the GIL).
_POOL = ThreadPoolExecutor(thread_name_prefix="evidex-query-embed")
_warm: set[str] = set()
_warm_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Fallback:
    """Why a hybrid search returned the keyword ranking."""

    #: "no_vectors" (the store has no embedding model) or "vector_timeout".
    reason: str
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"fallback": "keyword", "reason": self.reason, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class Deadline:
    """When the vector leg must be done, on ``time.monotonic``'s clock."""

    at: float
    timeout_ms: int

    @classmethod
    def start(cls, timeout_ms: int) -> Deadline:
        return cls(time.monotonic() + timeout_ms / 1000, timeout_ms)

    def left(self) -> float:
        return self.at - time.monotonic()

    def missed(self, what: str) -> Fallback:
        return Fallback("vector_timeout", f"{what} did not finish within retrieval.vector."
                                          f"timeout_ms ({self.timeout_ms} ms)")


def embed_within(model_id: str, embed: Callable[[], np.ndarray], timeout_ms: int | None
                 ) -> tuple[np.ndarray | Fallback, Deadline | None]:
    """The query vector from ``embed`` (or the fallback when it is not ready in time) and the
    deadline the vector search must meet. Without ``timeout_ms`` it simply waits; the first
    query of a model in the process waits too, and its deadline starts after it."""
    if timeout_ms is None:
        return embed(), None
    with _warm_lock:
        warm = model_id in _warm
    if not warm:
        vec = embed()
        with _warm_lock:
            _warm.add(model_id)
        return vec, Deadline.start(timeout_ms)
    deadline = Deadline.start(timeout_ms)
    return within(deadline, "the query embedding", embed), deadline


def within(deadline: Deadline, what: str, work: Callable[[], T]) -> T | Fallback:
    """``work()``'s result when it is ready before ``deadline``, else the fallback naming
    ``what`` missed it. ``work`` runs on the shared pool and must not read the caller's
    snapshot: one that misses its deadline still finishes in the background (filling the
    caches it writes to, so the same work is fast next time)."""
    future = _POOL.submit(work)
    try:
        return future.result(timeout=max(0.0, deadline.left()))
    except FutureTimeout:
        future.cancel()  # still queued: never runs; running: finishes into the cache
        return deadline.missed(what)
