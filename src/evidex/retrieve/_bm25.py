"""Okapi BM25 over segment postings with statistics restricted to the allowed passages.

For each query term the postings of every live segment are concatenated, masked to the passages
the actor may read, and only then counted: the document frequency, the passage count and the
average length are all computed over the allowed set, so passages the actor cannot see have no
influence on any score. Scores are accumulated term by term in sorted term order into a dense
scratch array, which makes them bit-for-bit reproducible for the same visible collection.

idf = ln(1 + (N - df + 0.5) / (df + 0.5)) (Lucene's non-negative form);
weight = idf * (k1 + 1) * tf / (tf + k1 * (1 - b) + k1 * b * dl / avgdl).

Weighted postings are cached per (visible collection, term): ``Allowed.key`` names the allowed
signatures with their versions and statistics, so within one key the weights are a pure function
of the data and reuse is exact, and a write the actor cannot see (another tenant, group or
visibility) leaves the actor's cache valid. This is what a global-statistics engine precomputes
at index time, computed here lazily per visible collection. (An explicit ``generation`` epoch is
still accepted: entries of another epoch are then dropped at once.)
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import pairwise
from typing import Any, Protocol

import numpy as np

from ._access import Allowed

__all__ = ["BM25", "BM25Params"]

Postings = Sequence[tuple[np.ndarray, np.ndarray]]


class Deaths(Protocol):
    """Where a snapshot stands in the log of passage deaths (``ReadView`` has both)."""

    deaths_mark: tuple[object, int]

    def deaths_since(self, mark: tuple[object, int]) -> np.ndarray | None: ...


@dataclass(frozen=True, slots=True)
class _Masked:
    """One segment's allowed postings of a term. For a large part also ``code``: each
    posting's (tf, passage length) pair as one index, tf * width + length, into a grid of
    weights computed once per visible collection (a few hundred pairs for a million
    postings), so recomputing the part's weights is one gather from a small table."""

    pids: np.ndarray
    tfs: np.ndarray
    code: np.ndarray | None = None
    width: int = 0  # 0: not indexed yet; -1: the grid would not be much smaller than the part
    tf_max: int = 0

    @property
    def nbytes(self) -> int:
        return self.pids.nbytes + self.tfs.nbytes + (self.code.nbytes if self.code is not None else 0)


#: A term's frequencies over the id space, the large raw parts folded into them (by identity)
#: and the deaths mark of the segments folded in last (see BM25._dense_tfs).
_Tfs = tuple[np.ndarray, dict[int, "weakref.ref[np.ndarray]"], "tuple[object, int] | None"]
#: A cached masked part and the raw postings array it was derived from (weakly: the segment
#: cache owns that array; a part is recognised by its identity).
_Part = tuple["weakref.ref[np.ndarray]", _Masked]
_EMPTY_P = np.zeros(0, dtype=np.int32)
_EMPTY_W = np.zeros(0, dtype=np.float64)


#: Default bounds of the weights cache (per KnowledgeBase handle), and its size per passage id.
CACHE_BYTES_MIN = 128 << 20
CACHE_BYTES_MAX = 1 << 30
CACHE_BYTES_PER_ID = 512


@dataclass(frozen=True, slots=True)
class BM25Params:
    k1: float = 1.2
    b: float = 0.75


class BM25:
    """Scores one query at a time; owns scratch arrays and the weighted-postings cache."""

    def __init__(self, params: BM25Params | None = None, cache_bytes: int | None = None) -> None:
        """``cache_bytes`` bounds the weights cache; None (the default) sizes it to the store:
        ``CACHE_BYTES_PER_ID`` per passage id, within ``CACHE_BYTES_MIN``..``CACHE_BYTES_MAX``."""
        self.params = params or BM25Params()
        self._lock = threading.Lock()
        self._tfs_lock = threading.Lock()
        self._fixed_cache = cache_bytes is not None
        self._max_cache_bytes = cache_bytes if cache_bytes is not None else CACHE_BYTES_MIN
        self._empty()

    def clear(self) -> None:
        """Drop every cache (a closed handle should not keep hundreds of MB of arrays: while one
        did, the first queries of the next handle in the same process ran 2-3x slower at 1M)."""
        with self._lock, self._tfs_lock:
            self._empty()

    def _empty(self) -> None:
        """Every cache and scratch array, empty: the one place that lists them."""
        self._acc = np.zeros(0, dtype=np.float64)
        self._cnt = np.zeros(0, dtype=np.uint8)
        self._cache: OrderedDict[tuple[object, bytes, str], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._cache_gen: object = None
        self._cache_bytes = 0
        #: Largest weight per cached (generation, visible set, term): MaxScore's bound, which
        #: took a pass over a common word's weights on every query (0.3 ms per query at 1M).
        self._maxima: dict[tuple[object, bytes, str], float] = {}
        #: term -> (its term frequencies over the passage-id space, the large raw parts folded
        #: into them): see _dense_tfs. Independent of actor and generation.
        self._tfs: OrderedDict[str, _Tfs] = OrderedDict()
        self._tfs_bytes = 0
        #: (signature table, term) -> the cache key of its newest weighted postings (_spares).
        self._latest: dict[tuple[bytes, str], tuple[object, bytes, str]] = {}
        #: Large probes per term so far (frequency arrays are built from the second).
        self._probes: dict[str, int] = {}
        #: (allowed signature table, term) -> (deaths mark, masked large parts): see _masked.
        self._parts: OrderedDict[tuple[bytes, str], tuple[tuple[object, int], list[_Part]]] = OrderedDict()
        self._parts_bytes = 0

    def _fit_cache(self, id_space: int) -> None:
        """Grow the default cache with the store: a million-passage store's common words have
        weighted postings of megabytes each, and 128 MB held too few of them (Zipf queries at
        1M, warm p50: 2.7 ms with 128 MB, 2.0 ms with 512 MB)."""
        if not self._fixed_cache:
            self._max_cache_bytes = min(CACHE_BYTES_MAX, max(CACHE_BYTES_MIN, id_space * CACHE_BYTES_PER_ID))

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
        deaths: Deaths | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(allowed passage ids containing ``term``, their BM25 weight for it).

        With ``deaths`` (the read view), a common term's allowed postings are kept per large
        segment across writes (see ``_masked``)."""
        key = (generation, allowed.key, term)
        hit = self._hit(key)
        if hit is not None:
            return hit
        parts = [pt for pt in postings(term) if len(pt[0])]
        if parts:
            # Segments are sorted runs of ids. Segments written and merged in id order cover
            # disjoint ranges, so concatenated in order of their first id they are sorted
            # already; otherwise a stable sort merges the runs (later lookups binary-search).
            parts.sort(key=lambda pt: int(pt[0][0]))
            ordered = all(int(a[0][-1]) < int(b[0][0]) for a, b in pairwise(parts))
            if sum(len(p) for p, _ in parts) * _VISIBLE_FACTOR >= len(sig_of_pid):
                masked = self._masked(term, parts, allowed, sig_of_pid, length_of_pid,
                                      generation, deaths)
            else:
                pids = np.concatenate([p for p, _ in parts]) if len(parts) > 1 else parts[0][0]
                tfs = np.concatenate([t for _, t in parts]) if len(parts) > 1 else parts[0][1]
                at = np.flatnonzero(allowed.mask(sig_of_pid, pids))
                masked = [_Masked(pids.take(at), tfs.take(at))]
            df = sum(len(m.pids) for m in masked)
        if not parts or df == 0:
            out = (_EMPTY_P, _EMPTY_W)
        else:
            idf = bm25_idf(allowed.passages, df)
            # Each part writes its weights into its slice of one array: fresh memory is what
            # recomputing costs most on the benchmark VM (page faults), and a weights array per
            # part plus their concatenation allocated every weight twice.
            spare_p, spare_w = self._spares(allowed.table.tobytes(), term, key) if deaths else (None, None)
            weights = _buffer(spare_w, df, np.dtype(np.float64))
            pos = 0
            for m in masked:
                dest = weights[pos:pos + len(m.pids)]
                if m.code is None:
                    self._weights(m.tfs, length_of_pid.take(m.pids), idf, allowed.avgdl, dest)
                else:
                    grid_tf = np.repeat(np.arange(m.tf_max + 1), m.width)
                    grid_dl = np.tile(np.arange(m.width), m.tf_max + 1)
                    grid = self._weights(grid_tf, grid_dl, idf, allowed.avgdl)
                    grid.take(m.code, out=dest, mode="clip")  # codes index the grid: no clipping
                pos += len(m.pids)
            pids = masked[0].pids
            if len(masked) > 1:
                pids = np.concatenate([m.pids for m in masked], out=_buffer(spare_p, df, pids.dtype))
            if not ordered:
                order = np.argsort(pids, kind="stable")
                pids, weights = pids[order], weights[order]
            out = (pids, weights)
        self._remember(key, out, generation)
        return out

    def _spares(self, family: bytes, term: str, key: tuple[object, bytes, str]
                ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The buffers of the term's weighted postings in the previous visible collection of the
        same signature table, if nothing else holds them: that entry is dead weight (signature
        versions only grow, so an old collection never comes back), and after a readable write
        every common word is recomputed into fresh memory otherwise (6 MB per word at 1M; page
        faults cost 5-10 us each on the benchmark VM)."""
        with self._lock:
            prev = self._latest.get((family, term))
            self._latest[(family, term)] = key
            if len(self._latest) > _MAXIMA_LIMIT:
                self._latest.clear()
            old = None
            if prev is not None and prev != key:
                # Its impact order goes with it.
                for k in (prev, (prev[0], prev[1], prev[2] + "\x00impact")):
                    gone = self._cache.pop(k, None)
                    if gone is not None:
                        self._cache_bytes -= _entry_bytes(gone)
                        old = gone if k is prev else old
        if old is None:
            return None, None
        pids, weights = old
        del old
        return _spare(pids), _spare(weights)

    def _weights(self, tfs: np.ndarray, lengths: np.ndarray, idf: float, avgdl: float,
                 out: np.ndarray | None = None) -> np.ndarray:
        """idf * (k1 + 1) * tf / (tf + k1 * (1 - b) + k1 * b * dl / avgdl), element by element.

        Evaluated in place: fresh memory is what a common word's first use mostly pays for
        (page faults cost ~5 us each on the benchmark VM; the expression form allocated ~70
        bytes per posting, this one 24). Every path (direct or through the grid of a large
        part) runs the same operations in the same order on the same values, so the same bits.
        """
        k1, b = self.params.k1, self.params.b
        norm = lengths.astype(np.float64)
        np.multiply(norm, k1 * b / avgdl, out=norm)
        np.add(norm, k1 * (1.0 - b), out=norm)
        if out is None:
            tf = tfs.astype(np.float64)
        else:
            tf = out
            np.copyto(tf, tfs, casting="unsafe")  # small integers: exactly as astype
        np.add(norm, tf, out=norm)  # tf + norm (addition commutes exactly)
        np.multiply(tf, idf * (k1 + 1.0), out=tf)
        np.divide(tf, norm, out=tf)
        return tf

    def _masked(self, term: str, parts: list[tuple[np.ndarray, np.ndarray]], allowed: Allowed,
                sig_of_pid: np.ndarray, length_of_pid: np.ndarray, generation: object,
                deaths: Deaths | None) -> list[_Masked]:
        """Each part's allowed postings, for a common term.

        Masking a common word's million postings is most of what recomputing its weights
        costs after a write the actor can read (the weights themselves must be recomputed:
        N, the average length and the document frequency moved). But a live passage's
        segment, access signature and length never change, so a large segment's allowed
        postings under one signature table change only by the passages that died since: those
        are dropped (binary search) and the part is reused; new passages arrive in new (small)
        segments, which are masked afresh. Parts are recognised by the identity of the raw
        postings array, which the segment cache keeps while its segment lives."""
        key = (allowed.table.tobytes(), term)
        with self._lock:
            old = self._parts.get(key)
        dead = deaths.deaths_since(old[0]) if old is not None and deaths is not None else None
        reuse: dict[int, _Part] = {}
        if old is not None and dead is not None:
            reuse = {id(r): (ref, m) for ref, m in old[1] if (r := ref()) is not None}
        vis: np.ndarray | None = None
        out: list[_Masked] = []
        kept: list[_Part] = []
        for raw, tf in parts:
            hit = reuse.get(id(raw))
            large = deaths is not None and len(raw) * _PART_FACTOR >= len(sig_of_pid)
            if hit is not None and hit[0]() is raw and dead is not None:
                m = hit[1]
                pids, tfs, code = _drop(m.pids, dead, m.tfs, m.code)
                m = _Masked(pids, tfs, code, m.width, m.tf_max) if pids is not m.pids else m
                if m.code is None and m.width == 0 and len(m.pids):
                    # Indexed on first reuse, not first use: a part that is never reused
                    # (one visible collection, no writes) does not pay for it.
                    m = _with_code(m, length_of_pid)
            else:
                if len(raw) * _VISIBLE_FACTOR < len(sig_of_pid):
                    # A small part (a recent write): two gathers of its own ids beat building
                    # the visible array over the whole id space (1 ms at 1M) after each write.
                    keep = allowed.mask(sig_of_pid, raw)
                else:
                    if vis is None:
                        vis = self._visible(allowed, sig_of_pid, generation)
                    # take() gathers faster than fancy indexing (1M ids: 1.7 vs 3.0 ms).
                    keep = vis.take(raw)
                # take() of the kept positions beats boolean indexing when about half are kept
                # (a permission mask is no sorted run): 0.8 vs 2.3 ms for 340k of 680k postings.
                at = np.flatnonzero(keep)
                m = _Masked(raw.take(at), tf.take(at))
            out.append(m)
            if large:
                kept.append((weakref.ref(raw), m))
        if kept and deaths is not None:
            self._remember_parts(key, (deaths.deaths_mark, kept))
        return out

    def _remember_parts(self, key: tuple[bytes, str],
                        value: tuple[tuple[object, int], list[_Part]]) -> None:
        size = _parts_bytes(value[1])
        with self._lock:
            old = self._parts.pop(key, None)
            if old is not None:
                self._parts_bytes -= _parts_bytes(old[1])
            self._parts[key] = value
            self._parts_bytes += size
            limit = self._max_cache_bytes // _PARTS_SHARE
            while self._parts_bytes > limit and len(self._parts) > 1:
                _, (_, gone) = self._parts.popitem(last=False)
                self._parts_bytes -= _parts_bytes(gone)

    def _upper(self, key: tuple[object, bytes, str], weights: np.ndarray) -> float:
        hit = self._maxima.get(key)
        if hit is None:
            hit = self._maxima[key] = float(weights.max())
        return hit

    def _visible(self, allowed: Allowed, sig_of_pid: np.ndarray, generation: object) -> np.ndarray:
        """Whether each passage id is live and allowed: one gather per posting instead of a
        signature lookup and a table lookup (a word found in most of a million passages was
        masked in 9 ms that way, 2 ms this way). Built once per generation and visible set, for
        the first term common enough to repay it; cached with the weights."""
        key = (generation, allowed.key, "\x00visible")
        hit = self._hit(key)
        if hit is not None and len(hit[0]) >= len(sig_of_pid):
            # Ids added since are not visible (the key would differ), nor are unused ids.
            return hit[0]
        table = allowed.table
        vis = table.take(np.minimum(sig_of_pid + 1, len(table) - 1))
        self._remember(key, (vis, _EMPTY_W), generation)
        return vis

    def _hit(self, key: tuple[object, bytes, str]) -> tuple[np.ndarray, np.ndarray] | None:
        """The cached entry of ``key``, marked as used. Every kind of entry (weights, the
        visible-id array, impact orders) is marked: only weights were, so once the cache was
        full the visible-id array (read by every first use of a common word) and the impact
        orders were evicted first, however often they were read. Without the lock (a query
        holds it while accumulating): each dictionary operation is atomic, and a concurrent
        query may evict the entry between the lookup and the move, which raised KeyError."""
        hit = self._cache.get(key)
        if hit is not None:
            # try/except, not contextlib.suppress: building the context manager cost 0.5 us per
            # call, and a SciFact query makes nine of these calls.
            try:  # noqa: SIM105 (see above)
                self._cache.move_to_end(key)
            except KeyError:  # evicted meanwhile; the caller still holds the arrays
                pass
        return hit

    def _remember(self, key: tuple[object, bytes, str], value: tuple[np.ndarray, np.ndarray],
                  generation: object) -> None:
        with self._lock:
            if generation != self._cache_gen or len(self._maxima) > _MAXIMA_LIMIT:
                self._maxima.clear()
            if generation != self._cache_gen:
                self._cache.clear()
                self._cache_bytes = 0
                self._cache_gen = generation
            old = self._cache.pop(key, None)  # a deeper impact order replaces a shallower one
            if old is not None:
                self._cache_bytes -= _entry_bytes(old)
            self._cache[key] = value
            self._cache_bytes += _entry_bytes(value)
            while self._cache_bytes > self._max_cache_bytes and len(self._cache) > 1:
                self._cache_bytes -= _entry_bytes(self._cache.popitem(last=False)[1])

    def score(
        self,
        terms: Sequence[str],
        postings: Callable[[str], Postings],
        sig_of_pid: np.ndarray,
        length_of_pid: np.ndarray,
        allowed: Allowed,
        match: str,
        generation: object = None,
        top: Callable[[np.ndarray, np.ndarray], tuple[bool, float]] | None = None,
        deaths: Deaths | None = None,
    ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """(passage ids, scores) of matching allowed passages, and each term's allowed passage ids
        (sorted; their number is the term's document frequency in this visible set). Callers
        that need the latter (the evidence check) take them from here: looking them up again
        in the weights cache was a tenth of a SciFact query's ranking time.

        With ``top`` (a function telling whether the selection made from the given candidates is
        full, and its lowest score) only a subset of the candidates may be returned: one that is
        guaranteed to contain that selection (MaxScore pruning, see ``_prune``).
        """
        if not terms or allowed.passages == 0:
            return _EMPTY_P.astype(np.int64), _EMPTY_W, dict.fromkeys(terms, _EMPTY_P)
        self._fit_cache(len(sig_of_pid))
        per_term = [
            self.weighted(t, postings, sig_of_pid, length_of_pid, allowed, generation, deaths)
            for t in terms
        ]
        readable = {t: p for t, (p, _) in zip(terms, per_term, strict=True)}
        named = [(t, pw) for t, pw in zip(terms, per_term, strict=True) if len(pw[0])]
        present = [pw for _, pw in named]
        if not present or (match == "all" and len(present) < len(terms)):
            return _EMPTY_P.astype(np.int64), _EMPTY_W, readable
        probing = match == "all" or (
            top is not None and len(present) > 1 and sum(len(p) for p, _ in present) > _PRUNE_MIN_POSTINGS)
        made: dict[int, WeightsAt | None] = {}

        def dense(i: int) -> WeightsAt | None:
            # Built on the first probe that is large enough to need it, not for every query
            # that merely could probe (a MaxScore run over a rare term probes a handful).
            if i not in made:
                t, (pids, _) = named[i]
                mark = deaths.deaths_mark if deaths is not None else None
                tfs = self._dense_tfs(t, postings, len(pids), len(sig_of_pid), mark)
                made[i] = None if tfs is None else partial(
                    self._weights_at, tfs, length_of_pid, bm25_idf(allowed.passages, len(pids)),
                    allowed.avgdl)
            return made[i]

        if top is not None and len(present) == 1 and len(present[0][0]) > _PRUNE_MIN_POSTINGS:
            t, (pids, weights) = named[0]
            got = _single(pids, weights, partial(self._impact_order, (generation, allowed.key, t), weights),
                          top)
            if got is not None:
                return got[0], got[1], readable
        if match == "all":
            # Every match contains the rarest term: probe the others for its passages only.
            rarest = min(present, key=lambda pw: len(pw[0]))[0]
            scores, hits = _probe(rarest, present, dense)
            keep = hits == len(present)
            return rarest[keep].astype(np.int64), scores[keep], readable
        if probing and top is not None:
            uppers = [self._upper((generation, allowed.key, t), w) for t, (_, w) in named]
            pruned = _prune(present, uppers, top, dense)
            if pruned is None:
                orders = [partial(self._impact_order, (generation, allowed.key, t), w) for t, (_, w) in named]
                pruned = _threshold(present, orders, top, dense)
            if pruned is not None:
                return pruned[0], pruned[1], readable
        return (*self._accumulate(present, len(sig_of_pid)), readable)

    def _dense_tfs(self, term: str, postings: Callable[[str], Postings], df: int,
                   size: int, mark: tuple[object, int] | None = None) -> np.ndarray | None:
        """The term's frequency in every passage id (0 where absent), for a term whose allowed
        postings cover at least 1/``_DENSE_PROBE_FACTOR`` of the id space: probing it is then
        one gather instead of a binary search per candidate, and the candidates' weights are
        computed from their frequencies and lengths (``_weights_at``).

        What is kept is the raw frequencies, not weights: a live passage's frequencies never
        change and passage ids are never reused, so the array serves every actor and stays
        valid across writes. A write only adds the postings of new segments; merged segments
        hold passages already in it (written again, same values), and dead passages are never
        candidates (they are in no allowed postings). Weights arrays had to be rebuilt after
        every write the actor could read: 8 MB of fresh memory per common word at 1M, 10.8 ms
        of the slowest 10 % of queries after 600 supersedes. Large raw parts are recognised by
        identity (the segment cache keeps them while their segment lives), small ones are
        written again on each build (a few hundred postings). ``mark`` (the read view's place in
        the log of deaths, which moves on every refresh) names the segments folded in last: with
        the same mark nothing is new, and the postings are not even looked up."""
        if df * _DENSE_PROBE_FACTOR < size or size * TF_BYTES * _DENSE_MAX_SHARE > self._max_cache_bytes:
            return None
        with self._tfs_lock:
            entry = self._tfs.get(term)
            if entry is not None and mark is not None and entry[2] == mark and len(entry[0]) >= size:
                self._tfs.move_to_end(term)
                return entry[0]
            if entry is None:
                # The first large probe of a term binary-searches; only a term probed again
                # gets its array (2 bytes per passage id, paid inside the query that builds it).
                seen = self._probes[term] = self._probes.get(term, 0) + 1
                if len(self._probes) > _MAXIMA_LIMIT:
                    self._probes.clear()
                if seen < _DENSE_AFTER_PROBES:
                    return None
                tfs, folded = np.zeros(size + size // 8, dtype=np.uint16), {}
            else:
                tfs, folded, _ = entry
                self._tfs_bytes -= tfs.nbytes
                if len(tfs) < size:  # new passages since: room for them and for some more
                    grown = np.zeros(size + size // 8, dtype=np.uint16)
                    grown[:len(tfs)] = tfs
                    tfs = grown
            kept: dict[int, weakref.ref[np.ndarray]] = {}
            for raw, tf in postings(term):
                ref = folded.get(id(raw))
                if ref is None or ref() is not raw:
                    tfs[raw] = tf  # in place: readers only look up ids of their own snapshot
                if len(raw) * _PART_FACTOR >= size:
                    kept[id(raw)] = ref if ref is not None and ref() is raw else weakref.ref(raw)
            self._tfs.pop(term, None)
            self._tfs[term] = (tfs, kept, mark)
            self._tfs_bytes += tfs.nbytes
            while self._tfs_bytes > self._max_cache_bytes // _TFS_SHARE and len(self._tfs) > 1:
                _, (gone, _, _) = self._tfs.popitem(last=False)
                self._tfs_bytes -= gone.nbytes
        return tfs

    def _weights_at(self, tfs: np.ndarray, length_of_pid: np.ndarray, idf: float, avgdl: float,
                    cand: np.ndarray) -> np.ndarray:
        """The term's weights of passages ``cand`` from its frequency array: the same operations
        on the same values as ``weighted``, so the same bits; 0.0 where it is absent (tf 0)."""
        return self._weights(tfs.take(cand), length_of_pid.take(cand), idf, avgdl)

    def _impact_order(self, key: tuple[object, bytes, str], weights: np.ndarray,
                      depth: int) -> np.ndarray:
        """Positions of at least the term's ``depth`` largest weights (all of them if fewer),
        largest first; cached with the weights (the same function of the same generation and
        visible set), and extended only when a deeper head is asked for: most queries stop at
        the first depth, and selecting 16,384 of a common word's weights cost 1.7 ms where 256
        or 2,048 cost a fraction of it."""
        okey = (key[0], key[1], key[2] + "\x00impact")
        hit = self._hit(okey)
        if hit is not None and (len(hit[0]) >= depth or len(hit[0]) == len(weights)):
            return hit[0]
        order = _top_positions(weights, min(len(weights), depth))
        self._remember(okey, (order, _EMPTY_W), key[0])
        return order

    def _accumulate(
        self, present: list[tuple[np.ndarray, np.ndarray]], size: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exhaustive disjunction: every passage containing any term, scored in term order.

        Both paths add each passage's weights in term order starting from 0.0, so they give
        bit-identical scores; which is cheaper depends only on postings versus id-space size.
        """
        total = sum(len(p) for p, _ in present)
        if size <= _DENSE_FACTOR * total:
            # One C loop over the concatenated postings beats four fancy-indexing passes per
            # term when the id space is small relative to the postings (typical collections).
            pids = np.concatenate([p for p, _ in present]) if len(present) > 1 else present[0][0]
            weights = np.concatenate([w for _, w in present]) if len(present) > 1 else present[0][1]
            dense = np.bincount(pids, weights, minlength=size)
            # BM25 weights are > 0, so non-zero means matched. Comparing first and taking the
            # positions of a boolean array is 3 us over SciFact's 5,184 ids; ``flatnonzero`` on
            # the floats themselves took 10 us.
            cand = (dense != 0).nonzero()[0]
            return cand.astype(np.int64), dense[cand]
        with self._lock:
            self._scratch(size)
            acc, seen = self._acc, self._cnt
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


def _spare(a: np.ndarray) -> np.ndarray | None:
    """``a``'s memory if only the caller holds ``a`` (its base buffer, for a view): the caller's
    name, this parameter and getrefcount's argument are 3 references; a query still reading
    the array adds one."""
    if sys.getrefcount(a) > 3:
        return None
    if a.base is None:
        return a
    base = a.base
    # The view, this name and getrefcount's argument; and it must own plain memory.
    return base if isinstance(base, np.ndarray) and base.base is None and sys.getrefcount(base) <= 3 else None


def _buffer(spare: np.ndarray | None, n: int, dtype: np.dtype) -> np.ndarray:
    """``n`` elements of ``spare`` if it fits (and is not much larger), else of a new array with
    a little room, so that the next collection's slightly larger set fits into it again."""
    if spare is not None and spare.dtype == dtype and n <= len(spare) <= 2 * n + 64:
        return spare[:n]
    return np.empty(n + n // 32, dtype=dtype)[:n]


def bm25_idf(n: int, df: int) -> float:
    """Lucene's non-negative idf; one expression for every path, so the same bits."""
    return float(np.log(1.0 + (n - df + 0.5) / (df + 0.5)))


def _entry_bytes(value: tuple[np.ndarray, np.ndarray]) -> int:
    """What one weights-cache entry counts against its budget (arrays plus bookkeeping)."""
    return value[0].nbytes + value[1].nbytes + 128


def _parts_bytes(parts: list[_Part]) -> int:
    return sum(m.nbytes + 64 for _, m in parts)


def _top_positions(weights: np.ndarray, depth: int) -> np.ndarray:
    """Positions of ``depth`` largest weights, largest first (ties in any order: callers use
    the set and the depth-th value, which ties do not change).

    A full selection over a common word's half-million weights (argpartition) takes 2-3 ms; a
    strided sample gives a threshold that about twice ``depth`` weights reach, one comparison
    pass finds them, and the selection runs over those only. The sample is dense enough to hold
    ``_SAMPLE_ABOVE`` weights above that threshold: a sample of 4 x depth held one, and missed
    so often that the first use of the commonest word at 1M paid the full selection (3-8 ms)
    for its first 256 entries (176 weights reached the sample's maximum). Exact: if at least ``depth``
    weights reach the threshold, the depth largest are among them; if fewer lie strictly above
    it, those and enough of the tied ones are the answer; otherwise the full selection runs."""
    n = len(weights)
    if depth < n:
        step = 2 * depth // _SAMPLE_ABOVE
        if step >= 2:
            sample = weights[::step]
            k = max(1, (2 * depth * len(sample)) // n)  # ~2 x depth weights lie above it
            threshold = np.partition(sample, len(sample) - k)[len(sample) - k]
            cand = np.flatnonzero(weights >= threshold)
            if len(cand) > _SAMPLE_MAX_FACTOR * depth:
                # A tie at the threshold (a common word has few distinct weights): what lies
                # strictly above it is in the answer, and any tied positions complete it,
                # without the full selection.
                sub = weights.take(cand)
                above = cand[sub > threshold]
                if len(above) < depth:
                    head = above[np.argsort(-weights.take(above), kind="stable")]
                    return np.concatenate([head, cand[sub == threshold][:depth - len(above)]])
                cand = above
            if depth <= len(cand) <= _SAMPLE_MAX_FACTOR * depth:
                sub = weights.take(cand)
                idx = np.argpartition(-sub, depth - 1)[:depth]
                return cand.take(idx[np.argsort(-sub.take(idx), kind="stable")])
        neg = -weights
        idx = np.argpartition(neg, depth - 1)[:depth]
        return idx[np.argsort(neg.take(idx), kind="stable")]
    return np.argsort(-weights, kind="stable")


#: Sampled weights expected above the sample's threshold (_top_positions), and the most
#: candidates per selected position.
_SAMPLE_ABOVE = 32
_SAMPLE_MAX_FACTOR = 16


def _drop(pids: np.ndarray, dead: np.ndarray, *aligned: np.ndarray | None) -> tuple[Any, ...]:
    """``pids`` and the arrays aligned with it without the passages in ``dead`` (both sorted;
    few dead: binary search). The same objects when none of them is there."""
    if not len(dead) or not len(pids):
        return (pids, *aligned)
    lo, hi = np.searchsorted(dead, [int(pids[0]), int(pids[-1]) + 1])
    if lo == hi:
        return (pids, *aligned)
    needles = dead[lo:hi].astype(pids.dtype)
    idx = np.minimum(np.searchsorted(pids, needles), len(pids) - 1)
    at = idx[pids.take(idx) == needles]
    if not len(at):
        return (pids, *aligned)
    return (np.delete(pids, at), *(None if a is None else np.delete(a, at) for a in aligned))


def _with_code(m: _Masked, length_of_pid: np.ndarray) -> _Masked:
    """``m`` with its (tf, length) grid index, when the grid is much smaller than the part
    (else marked with width -1, so that it is not tried again)."""
    lengths = length_of_pid.take(m.pids)
    width, tf_max = int(lengths.max()) + 1, int(m.tfs.max())
    if (tf_max + 1) * width * _GRID_FACTOR > len(m.pids):
        return _Masked(m.pids, m.tfs, None, -1)
    code = m.tfs.astype(np.int32)
    np.multiply(code, width, out=code)
    np.add(code, lengths, out=code)
    return _Masked(m.pids, m.tfs, code, width, tf_max)


#: A part's weights come from a grid of (tf, length) pairs when the grid has at most 1/this of
#: the part's postings.
_GRID_FACTOR = 8


#: A part with at least 1/this of the id space in postings keeps its allowed postings (_masked).
_PART_FACTOR = 64
#: ... in a cache of at most 1/this of the weights cache's bytes.
_PARTS_SHARE = 2

#: Dense accumulation (bincount over the whole id space) when ids <= this many times postings.
_DENSE_FACTOR = 16
#: A term with at least 1/this of the id space in postings is masked through the visible-id
#: array (built for the whole id space once per generation and visible set).
_VISIBLE_FACTOR = 16


#: Terms whose allowed postings cover at least 1/this of the passage-id space are probed through
#: a dense frequency array (``TF_BYTES`` per id) rather than by binary search.
_DENSE_PROBE_FACTOR = 8
TF_BYTES = 2
#: ... as long as one such array takes at most 1/this of the weights cache, and only for probes
#: of at least this many candidates.
_DENSE_MAX_SHARE = 32
_DENSE_MIN_CANDIDATES = 1024
#: ... and from its this-many-th such probe (per term, for the life of the handle).
_DENSE_AFTER_PROBES = 2
#: The frequency arrays take at most 1/this of the weights cache's bytes (besides it).
_TFS_SHARE = 4

#: The weights of one term for the given passage ids (0.0 where absent).
WeightsAt = Callable[[np.ndarray], np.ndarray]
#: Term position -> its WeightsAt through a dense frequency array, or None (built lazily, see
#: ``BM25.score``).
DenseOf = Callable[[int], "WeightsAt | None"]


def _probe(cand: np.ndarray, present: list[tuple[np.ndarray, np.ndarray]],
           dense: DenseOf | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact scores of ``cand`` (sorted ids) and how many terms each contains, by binary search
    in every term's sorted postings, or, for at least ``_DENSE_MIN_CANDIDATES`` candidates, from
    its dense frequencies (``dense(i)``, when it has them; BM25 weights are > 0, so 0 means
    absent). Weights are added in term order starting
    from 0.0, the same float operations as the exhaustive path (adding 0.0 for an absent term
    changes nothing), so every path gives bit-identical scores."""
    scores = np.zeros(len(cand), dtype=np.float64)
    hits = np.zeros(len(cand), dtype=np.int32)
    gather = dense is not None and len(cand) >= _DENSE_MIN_CANDIDATES
    for i, (p, w) in enumerate(present):
        if p is cand:  # the candidates are this term's passages (MaxScore's rarest term)
            scores += w
            hits += 1
            continue
        weights_at = dense(i) if gather else None  # type: ignore[misc]
        if weights_at is not None:
            got = weights_at(cand)
            scores += got
            hits += got > 0.0
            continue
        # Needles in the haystack's dtype, or numpy converts the whole postings array per call.
        needles = cand.astype(p.dtype, copy=False)
        idx = np.minimum(np.searchsorted(p, needles), len(p) - 1)
        found = p[idx] == needles
        scores += np.where(found, w[idx], 0.0)
        hits += found
    return scores, hits


#: MaxScore gives up (handing over to the threshold algorithm) beyond this many candidates.
_PRUNE_MAX_CANDIDATES = 20_000
#: Maxima and probe counts are dropped when they hold more entries than this (~100 bytes each).
_MAXIMA_LIMIT = 200_000
#: Depths (entries per term, by descending weight) the threshold algorithm tries in turn. Steps
#: of 2 beyond 1,024: a query that needed 3,000-8,000 entries per term went on to 16,384 with
#: steps of 8 (~47,000 candidates to probe and select: 18-22 ms at 1M, against 10 ms at 4,096).
_TA_DEPTHS = (256, 1024, 2048, 4096, 8192, 16_384)
#: It gives up (exhaustive scoring) as soon as the heads would hold more than 1/this of all
#: the terms' postings: scoring them all is then cheaper than probing most of them.
_TA_HEAD_SHARE = 2
#: ... or when the union of the heads grows beyond this.
_TA_MAX_CANDIDATES = 80_000
#: Below this many postings in all, the exhaustive path is cheaper than any pruning attempt.
_PRUNE_MIN_POSTINGS = 50_000


def _prune(
    present: list[tuple[np.ndarray, np.ndarray]],
    uppers: list[float],
    top: Callable[[np.ndarray, np.ndarray], tuple[bool, float]],
    dense: DenseOf | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """MaxScore for a disjunction: score only the passages of the rarer ("essential") terms.

    A passage that contains none of the essential terms scores at most the sum of the other
    terms' largest weights. If the selection made from the essential candidates is full and its
    lowest score is strictly above that bound, no other passage can enter it (nor tie with it),
    so the candidates suffice. Otherwise one more term becomes essential; with all terms
    essential the caller falls back to the exhaustive path. Typical win: a query with a very
    common word, whose bound is tiny because its idf is.
    """
    order = sorted(range(len(present)), key=lambda i: len(present[i][0]))
    by_df = [present[i] for i in order]
    upper = [uppers[i] for i in order]
    for e in range(1, len(by_df)):
        bound = sum(upper[e:])
        size = sum(len(p) for p, _ in by_df[:e])
        if size > _PRUNE_MAX_CANDIDATES:
            return None
        cand = np.unique(np.concatenate([p for p, _ in by_df[:e]])) if e > 1 else by_df[0][0]
        scores, _ = _probe(cand, present, dense)
        full, lowest = top(cand, scores)
        if full and lowest > bound:
            return cand.astype(np.int64), scores
    return None


def _single(
    pids: np.ndarray,
    weights: np.ndarray,
    order_of: Callable[[int], np.ndarray],
    top: Callable[[np.ndarray, np.ndarray], tuple[bool, float]],
) -> tuple[np.ndarray, np.ndarray] | None:
    """One term: its passages are scored by their weight alone, so the selection comes from its
    largest weights. All passages weighing at least the ``depth``-th largest are candidates, ties
    included (a common word has few distinct weights, and a cut inside a tie would let the
    tie-break by document id reach outside); every other passage weighs less than each of them,
    so a full selection from the candidates is the selection from all. Scores are the weights
    themselves, as on the exhaustive path (0.0 + w)."""
    for depth in _TA_DEPTHS:
        if depth >= len(weights):
            return None
        order = order_of(depth)
        at = np.flatnonzero(weights >= weights[order[depth - 1]])
        if len(at) > _TA_MAX_CANDIDATES:
            return None
        cand, scores = pids.take(at), weights.take(at)
        full, _ = top(cand, scores)
        if full:
            return cand.astype(np.int64), scores
    return None


def _threshold(
    present: list[tuple[np.ndarray, np.ndarray]],
    orders: list[Callable[[int], np.ndarray]],
    top: Callable[[np.ndarray, np.ndarray], tuple[bool, float]],
    dense: DenseOf | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Fagin's threshold algorithm over impact-ordered postings, for queries of common words.

    Take each term's ``m`` largest weights; a passage outside their union has, for every term,
    a weight at most that term's m-th largest (or none, once a term is exhausted), so its score
    is at most the sum of those. When the selection made from the union is full and its lowest
    score is strictly above that bound, nothing else can enter it or tie with it. Scores of the
    union come from ``_probe``, bit-identical to the exhaustive path. MaxScore fails exactly when
    every term is common (all bounds large); the best passages then hold several terms with high
    weights, which is where this stops early.
    """
    total = sum(len(p) for p, _ in present)
    for depth in _TA_DEPTHS:
        if sum(min(len(p), depth) for p, _ in present) * _TA_HEAD_SHARE > total:
            return None
        bound = 0.0
        parts = []
        for (p, w), order_of in zip(present, orders, strict=True):
            order = order_of(depth)
            head = order[:depth]
            parts.append(p[head])
            if len(p) > depth:
                if len(order) < depth:
                    return None  # the cached order is shorter than this depth
                bound += float(w[order[depth - 1]])
        cand = np.unique(np.concatenate(parts))
        if len(cand) > _TA_MAX_CANDIDATES:
            return None
        scores, _ = _probe(cand, present, dense)
        full, lowest = top(cand, scores)
        if full and lowest > bound:
            return cand.astype(np.int64), scores
        if all(len(p) <= depth for p, _ in present):
            return None
    return None
