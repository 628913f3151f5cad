"""Okapi BM25 over segment postings with statistics restricted to the allowed passages.

For each query term the postings of every live segment are concatenated, masked to the passages
the actor may read, and only then counted: the document frequency, the passage count and the
average length are all computed over the allowed set, so passages the actor cannot see have no
influence on any score. Scores are accumulated term by term in sorted term order into a dense
scratch array, which makes them bit-for-bit reproducible for the same visible collection.

idf = ln(1 + (N - df + 0.5) / (df + 0.5)) (Lucene's non-negative form);
weight = idf * (k1 + 1) * tf / (tf + k1 * (1 - b) + k1 * b * dl / avgdl).

Weighted postings are cached per (store generation, allowed set, term): within one generation
and one visible set they are a pure function of the data, so reuse is exact. This is what a
global-statistics engine precomputes at index time, computed here lazily per visible set.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ._access import Allowed

__all__ = ["BM25", "BM25Params"]

Postings = Sequence[tuple[np.ndarray, np.ndarray]]
_EMPTY_P = np.zeros(0, dtype=np.int32)
_EMPTY_W = np.zeros(0, dtype=np.float64)


@dataclass(frozen=True, slots=True)
class BM25Params:
    k1: float = 1.2
    b: float = 0.75


class BM25:
    """Scores one query at a time; owns scratch arrays and the weighted-postings cache."""

    def __init__(self, params: BM25Params | None = None, cache_bytes: int = 128 << 20) -> None:
        self.params = params or BM25Params()
        self._acc = np.zeros(0, dtype=np.float64)
        self._cnt = np.zeros(0, dtype=np.uint8)
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[object, bytes, str], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._cache_gen: object = None
        self._cache_bytes = 0
        self._max_cache_bytes = cache_bytes

    def _scratch(self, size: int) -> None:
        if len(self._acc) < size:
            self._acc = np.zeros(max(size, 2 * len(self._acc)), dtype=np.float64)
            self._cnt = np.zeros(len(self._acc), dtype=np.uint8)

    def weighted(
        self,
        term: str,
        postings: Callable[[str], Postings],
        sig_of_pid: np.ndarray,
        length_of_pid: np.ndarray,
        allowed: Allowed,
        generation: object,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(allowed passage ids containing ``term``, their BM25 weight for it)."""
        key = (generation, allowed.key, term)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        parts = postings(term)
        if parts:
            pids = np.concatenate([p for p, _ in parts]) if len(parts) > 1 else parts[0][0]
            tfs = np.concatenate([t for _, t in parts]) if len(parts) > 1 else parts[0][1]
            keep = allowed.mask(sig_of_pid, pids)
            pids = pids[keep]
            tf = tfs[keep].astype(np.float64)
        if not parts or len(pids) == 0:
            out = (_EMPTY_P, _EMPTY_W)
        else:
            k1, b = self.params.k1, self.params.b
            n, df = allowed.passages, len(pids)
            idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
            norm = k1 * (1.0 - b) + (k1 * b / allowed.avgdl) * length_of_pid[pids]
            out = (pids, (idf * (k1 + 1.0)) * tf / (tf + norm))
        self._remember(key, out, generation)
        return out

    def _remember(self, key: tuple[object, bytes, str], value: tuple[np.ndarray, np.ndarray],
                  generation: object) -> None:
        with self._lock:
            if generation != self._cache_gen:
                self._cache.clear()
                self._cache_bytes = 0
                self._cache_gen = generation
            self._cache[key] = value
            self._cache_bytes += value[0].nbytes + value[1].nbytes + 128
            while self._cache_bytes > self._max_cache_bytes and len(self._cache) > 1:
                _, (p, w) = self._cache.popitem(last=False)
                self._cache_bytes -= p.nbytes + w.nbytes + 128

    def score(
        self,
        terms: Sequence[str],
        postings: Callable[[str], Postings],
        sig_of_pid: np.ndarray,
        length_of_pid: np.ndarray,
        allowed: Allowed,
        match: str,
        generation: object = None,
    ) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
        """(passage ids, scores, document frequency per term) of matching allowed passages."""
        if not terms or allowed.passages == 0:
            return _EMPTY_P.astype(np.int64), _EMPTY_W, {}
        per_term = [
            self.weighted(t, postings, sig_of_pid, length_of_pid, allowed, generation) for t in terms
        ]
        dfs = {t: len(p) for t, (p, _) in zip(terms, per_term, strict=True)}
        present = [pw for pw in per_term if len(pw[0])]
        if not present or (match == "all" and len(present) < len(terms)):
            return _EMPTY_P.astype(np.int64), _EMPTY_W, dfs
        with self._lock:
            self._scratch(len(sig_of_pid))
            acc, cnt = self._acc, self._cnt
            fresh: list[np.ndarray] = []
            for p, w in present:
                fresh.append(p[cnt[p] == 0])
                acc[p] += w
                cnt[p] += 1
            touched = np.concatenate(fresh) if len(fresh) > 1 else fresh[0]
            cand = touched[cnt[touched] == len(present)] if match == "all" else touched
            scores = acc[cand]
            acc[touched] = 0.0
            cnt[touched] = 0
        return cand.astype(np.int64), scores, dfs
