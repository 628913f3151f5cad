"""Okapi BM25 over segment postings, with statistics restricted to the allowed passages.

For each query term the postings of every live segment are concatenated, masked to the passages
the actor may read, and only then counted: the document frequency, the passage count and the
average length are all computed over the allowed set, so passages the actor cannot see have no
influence on any score. Each passage's weights are added in query term order starting from 0.0
on every path, which makes scores bit-for-bit reproducible for the same visible collection.

    idf    = ln(1 + (N - df + 0.5) / (df + 0.5))                (Lucene's non-negative form)
    weight = idf * (k1 + 1) * tf / (tf + k1 * (1 - b) + k1 * b * dl / avgdl)

Weighted postings are cached per (visible collection, term): ``Allowed.key`` names the allowed
signatures with their versions and statistics, so within one key the weights are a pure function
of the data and reuse is exact, and a write the actor cannot see (another tenant, group or
visibility) leaves the actor's entries valid. This is what a global-statistics engine computes
at index time, computed here lazily per visible collection.

The ranking core, module by module:
* here: the formula (``idf``, ``length_norm``, ``term_weights``) and ``BM25``, which assembles
  one query's scores;
* ``_postings``: a term's allowed postings (masking, parts kept across writes, frequency arrays);
* ``_prune``: MaxScore, the threshold algorithm and probes, as functions over arrays;
* ``_accumulate``: exhaustive scoring; ``_cache``: the one cache of derived arrays;
* ``_tuning``: every threshold, with the reason it exists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import pairwise

import numpy as np

from ._access import Allowed
from ._accumulate import Scratch, accumulate
from ._cache import WeightsCache
from ._postings import Deaths, Part, allowed_parts, frequencies
from ._prune import Lookup, Top, maxscore, probe, single_term, threshold, top_positions
from ._tuning import TUNING, Tuning

__all__ = ["BM25", "BM25Params", "idf", "length_norm", "pair_weights", "term_weights"]

Postings = Sequence[tuple[np.ndarray, np.ndarray]]
_EMPTY_P = np.zeros(0, dtype=np.int32)
_EMPTY_W = np.zeros(0, dtype=np.float64)


@dataclass(frozen=True, slots=True)
class BM25Params:
    k1: float = 1.2
    b: float = 0.75


def idf(n: int, df: int) -> float:
    """Lucene's non-negative idf of a term in ``df`` of ``n`` passages."""
    return float(np.log(1.0 + (n - df + 0.5) / (df + 0.5)))


def length_norm(lengths: np.ndarray, avgdl: float, params: BM25Params) -> np.ndarray:
    """k1 * (1 - b) + dl * (k1 * b / avgdl) per passage length: what a term frequency is
    saturated against (a new float64 array)."""
    k1, b = params.k1, params.b
    norm = lengths.astype(np.float64)
    np.multiply(norm, k1 * b / avgdl, out=norm)
    np.add(norm, k1 * (1.0 - b), out=norm)
    return norm


def term_weights(tfs: np.ndarray, lengths: np.ndarray, term_idf: float, avgdl: float,
                 params: BM25Params, out: np.ndarray | None = None) -> np.ndarray:
    """Each posting's weight, idf * (k1 + 1) * tf / (tf + length norm): the saturated term
    frequency scaled by the term's idf (0.0 where tf is 0). Written into ``out`` if given.

    Every path computes weights here, in place and in this one order of float operations, so
    the same (tf, length, statistics) give the same bits wherever they are computed."""
    norm = length_norm(lengths, avgdl, params)
    if out is None:
        tf = tfs.astype(np.float64)
    else:
        tf = out
        np.copyto(tf, tfs, casting="unsafe")  # small integers: exactly as astype
    np.add(norm, tf, out=norm)  # tf + norm (addition commutes exactly)
    np.multiply(tf, term_idf * (params.k1 + 1.0), out=tf)
    np.divide(tf, norm, out=tf)
    return tf


def pair_weights(tf_max: int, width: int, term_idf: float, avgdl: float, params: BM25Params
                 ) -> np.ndarray:
    """``term_weights`` of every (tf, length) pair with tf <= tf_max and length < width, at
    index tf * width + length. A common word's postings share a few hundred pairs, so its
    weights are one gather from this table, with the same bits (same function, same values)."""
    tfs = np.repeat(np.arange(tf_max + 1), width)
    lengths = np.tile(np.arange(width), tf_max + 1)
    return term_weights(tfs, lengths, term_idf, avgdl, params)


class BM25:
    """Scores one query at a time against a read view's postings.

    Owns one ``WeightsCache`` (weights per visible collection and term, with their bounds and
    impact orders; visible-id arrays; kept parts; frequency arrays) and a ``Scratch`` for sparse
    accumulation. Safe to share between threads: both lock themselves, and no array a query
    reads changes under it (see ``WeightsCache``)."""

    def __init__(self, params: BM25Params | None = None, tuning: Tuning | None = None) -> None:
        self._params = params or BM25Params()
        self.tuning = tuning or TUNING
        self._cache = WeightsCache(self.tuning.cache_bytes)
        self._scratch = Scratch()

    @property
    def params(self) -> BM25Params:
        """k1 and b, fixed for this scorer's life: cached weights are keyed by visible collection
        and term only, so they are exact for one pair of parameters, this one."""
        return self._params

    def clear(self) -> None:
        """Drop every derived array: a closed handle should not keep hundreds of MB alive."""
        self._cache.clear()
        self._scratch.clear()

    def score(
        self,
        terms: Sequence[str],
        postings: Callable[[str], Postings],
        sig_of_pid: np.ndarray,
        length_of_pid: np.ndarray,
        allowed: Allowed,
        match: str,
        top: Top | None = None,
        deaths: Deaths | None = None,
    ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """(passage ids, scores) of matching allowed passages, and each term's allowed passage
        ids (sorted; their number is the term's document frequency in this visible set), which
        callers such as the evidence check take from here rather than look up again.

        With ``top`` (the caller's selection: is it full over these candidates, and its lowest
        score) only a subset of the candidates may be returned, one guaranteed to contain that
        selection (see ``_prune``). With ``deaths`` (the read view) a common term's allowed
        postings are kept per large segment across writes (see ``_postings``)."""
        if not terms or allowed.passages == 0:
            return _EMPTY_P.astype(np.int64), _EMPTY_W, dict.fromkeys(terms, _EMPTY_P)
        per_term = [self.weighted(t, postings, sig_of_pid, length_of_pid, allowed, deaths) for t in terms]
        readable = {t: p for t, (p, _) in zip(terms, per_term, strict=True)}
        named = [(t, pw) for t, pw in zip(terms, per_term, strict=True) if len(pw[0])]
        present = [pw for _, pw in named]
        if not present or (match == "all" and len(present) < len(terms)):
            return _EMPTY_P.astype(np.int64), _EMPTY_W, readable
        size = len(sig_of_pid)
        if match == "all" and len(present) > 1:
            # Every match contains the rarest term: probe the others for its passages only.
            rarest = min(present, key=lambda pw: len(pw[0]))[0]
            lookup = self._lookup(named, postings, length_of_pid, allowed, size, deaths)
            scores, hits = probe(rarest, present, lookup)
            keep = hits == len(present)
            return rarest[keep].astype(np.int64), scores[keep], readable
        if top is not None and sum(len(p) for p, _ in present) > self.tuning.prune_min_postings:
            lookup = self._lookup(named, postings, length_of_pid, allowed, size, deaths)
            pruned = self._prune(named, allowed, top, lookup)
            if pruned is not None:
                return pruned[0], pruned[1], readable
        return (*accumulate(present, size, self._scratch, self.tuning.dense_accumulate_factor), readable)

    def weighted(self, term: str, postings: Callable[[str], Postings], sig_of_pid: np.ndarray,
                 length_of_pid: np.ndarray, allowed: Allowed, deaths: Deaths | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
        """(allowed passage ids containing ``term``, sorted; their BM25 weight for it), cached
        per visible collection."""
        key = ("weights", allowed.key, term)
        hit = self._cache.get(key)
        if hit is None:
            lineage = _lineage(key, allowed)
            self._cache.retire(lineage)
            hit = self._weigh(term, postings, sig_of_pid, length_of_pid, allowed, deaths)
            self._cache.put(key, hit, hit[0].nbytes + hit[1].nbytes, lineage)
        return hit

    def _weigh(self, term: str, postings: Callable[[str], Postings], sig_of_pid: np.ndarray,
               length_of_pid: np.ndarray, allowed: Allowed, deaths: Deaths | None
               ) -> tuple[np.ndarray, np.ndarray]:
        """``weighted``, computed."""
        parts = [pt for pt in postings(term) if len(pt[0])]
        if not parts:
            return _EMPTY_P, _EMPTY_W
        # Segments are sorted runs of ids. Written and merged in id order, they cover disjoint
        # ranges, so in order of their first id they concatenate into sorted ids; otherwise a
        # stable sort merges the runs (lookups binary-search them).
        parts.sort(key=lambda pt: int(pt[0][0]))
        ordered = all(int(a[0][-1]) < int(b[0][0]) for a, b in pairwise(parts))
        if sum(len(p) for p, _ in parts) * self.tuning.visible_factor >= len(sig_of_pid):
            masked = allowed_parts(self._cache, term, parts, allowed, sig_of_pid, length_of_pid, deaths,
                                   self.tuning)
        else:
            pids = np.concatenate([p for p, _ in parts]) if len(parts) > 1 else parts[0][0]
            tfs = np.concatenate([t for _, t in parts]) if len(parts) > 1 else parts[0][1]
            at = np.flatnonzero(allowed.mask(sig_of_pid, pids))
            masked = [Part(pids.take(at), tfs.take(at))]
        df = sum(len(m.pids) for m in masked)
        if df == 0:
            return _EMPTY_P, _EMPTY_W
        term_idf = idf(allowed.passages, df)
        weights = np.empty(df, dtype=np.float64)
        pos = 0
        for m in masked:  # each part writes its slice: no per-part arrays to concatenate
            end = pos + len(m.pids)
            if m.pairs is None:
                term_weights(m.tfs, length_of_pid.take(m.pids), term_idf, allowed.avgdl, self.params,
                             out=weights[pos:end])
            else:
                table = pair_weights(m.pairs.tf_max, m.pairs.width, term_idf, allowed.avgdl, self.params)
                # mode="clip": the index is within the table by construction, and numpy would
                # otherwise write the gather to a temporary first.
                table.take(m.pairs.index, out=weights[pos:end], mode="clip")
            pos = end
        pids = np.concatenate([m.pids for m in masked]) if len(masked) > 1 else masked[0].pids
        if not ordered:
            order = np.argsort(pids, kind="stable")
            pids, weights = pids[order], weights[order]
        return pids, weights

    def _prune(self, named: list[tuple[str, tuple[np.ndarray, np.ndarray]]], allowed: Allowed,
               top: Top, lookup: Lookup) -> tuple[np.ndarray, np.ndarray] | None:
        """Candidates that hold ``top``'s selection, or None (see ``_prune``): one term from its
        largest weights; several by MaxScore, then by the threshold algorithm."""
        present = [pw for _, pw in named]
        tuning = self.tuning
        if len(named) == 1:
            t, (pids, weights) = named[0]
            return single_term(pids, weights, partial(self._impact_order, allowed, t, weights), top, tuning)

        def score_of(cand: np.ndarray) -> np.ndarray:
            return probe(cand, present, lookup)[0]

        uppers = [self._upper(allowed, t, w) for t, (_, w) in named]
        got = maxscore(present, uppers, top, score_of, tuning.maxscore_max_candidates)
        if got is None:
            orders = [partial(self._impact_order, allowed, t, w) for t, (_, w) in named]
            got = threshold(present, orders, top, score_of, tuning)
        return got

    def _upper(self, allowed: Allowed, term: str, weights: np.ndarray) -> float:
        """The term's largest weight (MaxScore's bound), cached with its weights."""
        key = ("upper", allowed.key, term)
        hit = self._cache.get(key)
        if hit is None:
            hit = float(weights.max())
            self._cache.put(key, hit, 0, _lineage(key, allowed))
        return hit

    def _impact_order(self, allowed: Allowed, term: str, weights: np.ndarray, depth: int) -> np.ndarray:
        """Positions of at least the term's ``depth`` largest weights (all if fewer), largest
        first; cached with its weights, and extended only when a deeper head is asked for (most
        queries stop at the first depth)."""
        key = ("order", allowed.key, term)
        hit = self._cache.get(key)
        if hit is not None and (len(hit) >= depth or len(hit) == len(weights)):
            return hit
        order = top_positions(weights, min(len(weights), depth), self.tuning)
        self._cache.put(key, order, order.nbytes, _lineage(key, allowed))
        return order

    def _lookup(self, named: list[tuple[str, tuple[np.ndarray, np.ndarray]]],
                postings: Callable[[str], Postings], length_of_pid: np.ndarray, allowed: Allowed,
                size: int, deaths: Deaths | None) -> Lookup:
        """Probes' shortcut: a common term's weights of many candidates computed from its
        frequency array (one gather; see ``_postings.frequencies``) instead of binary searches.
        The array is fetched on the first probe that needs it, not for every query that could."""
        made: dict[int, tuple[np.ndarray, float] | None] = {}
        mark = deaths.deaths_mark if deaths is not None else None

        def lookup(i: int, cand: np.ndarray) -> np.ndarray | None:
            if len(cand) < self.tuning.dense_min_candidates:
                return None
            if i not in made:
                t, (pids, _) = named[i]
                tfs = frequencies(self._cache, t, postings, len(pids), size, mark, self.tuning)
                made[i] = None if tfs is None else (tfs, idf(allowed.passages, len(pids)))
            got = made[i]
            if got is None:
                return None
            return term_weights(got[0].take(cand), length_of_pid.take(cand), got[1], allowed.avgdl,
                                self.params)

        return lookup


def _lineage(key: tuple[str, bytes, str], allowed: Allowed) -> tuple[str, bytes, str]:
    """What an entry keyed by a visible collection is the newest version of: the same kind of
    entry for the same term under the same signature table. Signature versions only grow, so
    an older collection of the same table never comes back."""
    return key[0], allowed.table.tobytes(), key[2]
