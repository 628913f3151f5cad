"""Exhaustive scoring of a BM25 disjunction: every passage that holds any query term.

Both ways add each passage's weights in term order starting from 0.0, so they give
bit-identical scores (and so do the probes in ``_prune``); which one is cheaper depends only on
how many postings the query has against the size of the passage-id space.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

__all__ = ["Scratch", "accumulate"]


def accumulate(present: Sequence[tuple[np.ndarray, np.ndarray]], size: int, scratch: Scratch,
               dense_factor: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, scores) of every passage in ``present`` (per term: sorted ids, their weights),
    summed in term order; ``size`` is the id space."""
    if size <= dense_factor * sum(len(p) for p, _ in present):
        return dense(present, size)
    return scratch.accumulate(present, size)


def dense(present: Sequence[tuple[np.ndarray, np.ndarray]], size: int) -> tuple[np.ndarray, np.ndarray]:
    """One ``bincount`` over the concatenated postings (it adds in array order, so in term
    order): one C loop instead of several passes per term, and a pass over the id space."""
    pids = np.concatenate([p for p, _ in present]) if len(present) > 1 else present[0][0]
    weights = np.concatenate([w for _, w in present]) if len(present) > 1 else present[0][1]
    sums = np.bincount(pids, weights, minlength=size)
    # BM25 weights are > 0, so non-zero means matched (a boolean array's positions are
    # cheaper to find than the floats' own).
    cand = (sums != 0).nonzero()[0]
    return cand.astype(np.int64, copy=False), sums[cand]


class Scratch:
    """A score array and a seen flag per passage id, for queries with few postings in a large
    id space: only the entries of the query's passages are touched.

    Ownership: the arrays are all zero between uses, and one accumulation at a time uses them,
    holding the lock from the first write to the reset of every entry it set."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._acc = np.zeros(0, dtype=np.float64)
        self._seen = np.zeros(0, dtype=np.uint8)

    def clear(self) -> None:
        with self._lock:
            self._acc = np.zeros(0, dtype=np.float64)
            self._seen = np.zeros(0, dtype=np.uint8)

    def accumulate(self, present: Sequence[tuple[np.ndarray, np.ndarray]], size: int
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Like ``dense``; ids in order of first appearance (term order, then id order)."""
        with self._lock:
            if len(self._acc) < size:
                self._acc = np.zeros(max(size, 2 * len(self._acc)), dtype=np.float64)
                self._seen = np.zeros(len(self._acc), dtype=np.uint8)
            acc, seen = self._acc, self._seen
            fresh: list[np.ndarray] = []
            for p, w in present:
                fresh.append(p[seen[p] == 0])
                acc[p] += w
                seen[p] = 1
            cand = np.concatenate(fresh) if len(fresh) > 1 else fresh[0]
            scores = acc[cand]
            acc[cand] = 0.0
            seen[cand] = 0
        return cand.astype(np.int64), scores
