"""Okapi BM25 over segment postings with statistics restricted to the allowed passages.

For each query term the postings of every live segment are concatenated, masked to the passages
the actor may read, and only then counted: the document frequency, the passage count and the
average length are all computed over the allowed set, so passages the actor cannot see have no
influence on any score. Scores are accumulated term by term in sorted term order into a dense
scratch array, which makes them bit-for-bit reproducible for the same visible collection.

idf = ln(1 + (N - df + 0.5) / (df + 0.5)) (Lucene's non-negative form);
tf part = tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ._access import Allowed

__all__ = ["BM25", "BM25Params"]

Postings = Sequence[tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True, slots=True)
class BM25Params:
    k1: float = 1.2
    b: float = 0.75


class BM25:
    """Scores one query at a time; owns scratch arrays reused across queries."""

    def __init__(self, params: BM25Params | None = None) -> None:
        self.params = params or BM25Params()
        self._acc = np.zeros(0, dtype=np.float64)
        self._cnt = np.zeros(0, dtype=np.uint8)
        self._lock = threading.Lock()

    def _scratch(self, size: int) -> None:
        if len(self._acc) < size:
            self._acc = np.zeros(max(size, 2 * len(self._acc)), dtype=np.float64)
            self._cnt = np.zeros(len(self._acc), dtype=np.uint8)

    def score(
        self,
        terms: Sequence[str],
        postings: Callable[[str], Postings],
        sig_of_pid: np.ndarray,
        length_of_pid: np.ndarray,
        allowed: Allowed,
        match: str,
    ) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
        """(passage ids, scores, document frequency per term) of matching allowed passages.

        All terms are masked and weighted in one vectorised pass; only the accumulation into the
        scratch array runs per term, in the given (sorted) term order.
        """
        empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        n = allowed.passages
        if not terms or n == 0:
            return *empty, {}
        parts = [postings(t) for t in terms]
        sizes = [sum(len(p) for p, _ in segs) for segs in parts]
        if sum(sizes) == 0:
            return *empty, dict.fromkeys(terms, 0)
        all_pids = np.concatenate([p for segs in parts for p, _ in segs])
        all_tfs = np.concatenate([t for segs in parts for _, t in segs])
        tid = np.repeat(np.arange(len(terms)), sizes)
        keep = allowed.mask(sig_of_pid, all_pids)
        pids, tid = all_pids[keep], tid[keep]
        tf = all_tfs[keep].astype(np.float64)
        df = np.bincount(tid, minlength=len(terms))
        dfs = dict(zip(terms, df.tolist(), strict=True))
        if match == "all" and not df.all():
            return *empty, dfs
        if len(pids) == 0:
            return *empty, dfs
        k1, b = self.params.k1, self.params.b
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        norm = k1 * (1.0 - b) + (k1 * b / allowed.avgdl) * length_of_pid[pids]
        contrib = (idf * (k1 + 1.0))[tid] * tf / (tf + norm)
        bounds = np.concatenate(([0], np.cumsum(df)))
        present = [i for i in range(len(terms)) if df[i]]
        with self._lock:
            self._scratch(len(sig_of_pid))
            acc, cnt = self._acc, self._cnt
            fresh: list[np.ndarray] = []
            for i in present:
                p = pids[bounds[i] : bounds[i + 1]]
                fresh.append(p[cnt[p] == 0])
                acc[p] += contrib[bounds[i] : bounds[i + 1]]
                cnt[p] += 1
            touched = np.concatenate(fresh) if len(fresh) > 1 else fresh[0]
            cand = touched[cnt[touched] == len(present)] if match == "all" else touched
            scores = acc[cand].copy()
            acc[touched] = 0.0
            cnt[touched] = 0
        return cand.astype(np.int64), scores, dfs
