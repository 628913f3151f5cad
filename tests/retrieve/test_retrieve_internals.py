"""retrieve's internals, each tested through the module that defines it; the searches
themselves are tested through ``evidex.retrieve``'s names and the facade in the other files here.

The ranking core's parts on their own: the BM25 formula, pruning over arrays, the one cache.
Each pure function is held to its contract directly, on generated arrays, and so are the cache's
byte budget and the tuning. Then the end-to-end checks of the same parts (pruned searches equal
exhaustive ones through a real store, BM25's weighted postings across writes), adaptive fusion's
rule and signals, weighted RRF's contributions, the vector leg's deadline, and the selection
(``select_top``) on each of ``_select``'s prefix paths.

A ``slow`` mark on a test that starts no process keeps it where it was: it came from a
module whose imports mark all its tests slow (tests/conftest.py), and ``make test-fast`` runs
what it ran.
"""

from __future__ import annotations

import inspect
import math
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, wait
from contextlib import contextmanager
from dataclasses import FrozenInstanceError, fields, replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import evidex.retrieve._bm25 as bm25_module
import evidex.retrieve._deadline as deadline_module
import evidex.retrieve._search as hybrid_module
from actors import PUBLIC_INTERNAL
from deadline_store import STAFF, fresh, warm_store
from evidex import Actor, Document, KnowledgeBase
from evidex.embed import get_embedder
from evidex.model import Filters
from evidex.query import words
from evidex.retrieve import (
    BM25,
    BM25Params,
    Candidates,
    Fusion,
    Leg,
    _select,
    access,
    fuse,
    hits_from,
    idf,
    keyword_candidates,
    select_top,
)
from evidex.retrieve._access import Allowed
from evidex.retrieve._accumulate import Scratch, accumulate
from evidex.retrieve._adaptive import AdaptiveRule, LegWeights, QuerySignals, leg_weights
from evidex.retrieve._bm25 import length_norm, pair_weights, term_weights
from evidex.retrieve._cache import ENTRY_OVERHEAD, WeightsCache
from evidex.retrieve._fusion import rrf_contributions
from evidex.retrieve._postings import drop, frequencies, pairs_of, visible
from evidex.retrieve._prune import maxscore, probe, single_term, threshold, top_positions
from evidex.retrieve._signals import query_signals
from evidex.retrieve._tuning import TUNING, Tuning

PARAMS = BM25Params()


# -- the formula ---------------------------------------------------------------------------------
@given(n=st.integers(1, 10**7), data=st.data())
def test_idf_is_lucenes_non_negative_form(n: int, data: st.DataObject) -> None:
    df = data.draw(st.integers(1, n))
    want = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    assert idf(n, df) == pytest.approx(want, rel=1e-12)
    assert idf(n, df) > 0.0
    if df < n:
        assert idf(n, df) > idf(n, df + 1)  # rarer terms weigh more


@given(tfs=st.lists(st.integers(0, 500), min_size=1, max_size=50), data=st.data(),
       avgdl=st.floats(1.0, 500.0), n=st.integers(1, 10**6), k1=st.floats(0.1, 3.0), b=st.floats(0.0, 1.0))
def test_term_weights_are_textbook_bm25(tfs: list[int], data: st.DataObject, avgdl: float, n: int,
                                        k1: float, b: float) -> None:
    """Each weight is idf * (k1 + 1) * tf / (tf + k1 * (1 - b + b * dl / avgdl)) to rounding; 0
    for tf 0; at most idf * (k1 + 1); written into ``out`` with exactly the same bits."""
    lengths = np.array(data.draw(st.lists(st.integers(1, 2000), min_size=len(tfs), max_size=len(tfs))),
                       dtype=np.int32)
    params = BM25Params(k1, b)
    w_idf = idf(n, max(1, n // 3))
    got = term_weights(np.array(tfs, dtype=np.uint16), lengths, w_idf, avgdl, params)
    for tf, dl, w in zip(tfs, lengths.tolist(), got.tolist(), strict=True):
        want = w_idf * (k1 + 1) * tf / (tf + k1 * (1 - b + b * dl / avgdl))
        assert w == pytest.approx(want, rel=1e-12, abs=1e-300)
        assert (w == 0.0) == (tf == 0)
        assert w <= w_idf * (k1 + 1.0)
    out = np.full(len(tfs), np.nan)
    assert term_weights(np.array(tfs, dtype=np.int32), lengths, w_idf, avgdl, params, out=out) is out
    assert out.tobytes() == got.tobytes()
    norm = length_norm(lengths, avgdl, params)
    want_norm = [k1 * (1 - b + b * dl / avgdl) for dl in lengths.tolist()]
    assert norm.tolist() == pytest.approx(want_norm, rel=1e-12)


@given(tf_max=st.integers(0, 30), width=st.integers(1, 90), avgdl=st.floats(1.0, 100.0))
def test_pair_weights_are_term_weights_of_every_pair(tf_max: int, width: int, avgdl: float) -> None:
    table = pair_weights(tf_max, width, 1.7, avgdl, PARAMS)
    tfs = np.repeat(np.arange(tf_max + 1, dtype=np.uint16), width)
    lengths = np.tile(np.arange(width, dtype=np.int32), tf_max + 1)
    assert table.tobytes() == term_weights(tfs, lengths, 1.7, avgdl, PARAMS).tobytes()
    assert table[3 % (tf_max + 1) * width + width - 1] == term_weights(
        np.array([3 % (tf_max + 1)]), np.array([width - 1]), 1.7, avgdl, PARAMS)[0]


def test_term_weights_saturate_in_tf_and_fall_with_length() -> None:
    tfs = np.arange(1, 200, dtype=np.uint16)
    w = term_weights(tfs, np.full(len(tfs), 50), 2.0, 50.0, PARAMS)
    assert (np.diff(w) > 0).all() and np.diff(w)[-1] < np.diff(w)[0] / 100  # saturating
    assert w[-1] < 2.0 * (PARAMS.k1 + 1.0)
    by_length = term_weights(np.full(100, 3, dtype=np.uint16), np.arange(1, 101), 2.0, 50.0, PARAMS)
    assert (np.diff(by_length) < 0).all()


# -- pruning over arrays -------------------------------------------------------------------------
#: Few distinct weights, so that ties (same tf and length) are everywhere, as in real postings.
LEVELS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.5, 4.0)


@st.composite
def queries(draw: st.DrawFn, max_terms: int = 4) -> tuple[int, list[tuple[np.ndarray, np.ndarray]]]:
    size = draw(st.integers(1, 300))
    present = []
    for _ in range(draw(st.integers(1, max_terms))):
        ids = sorted(draw(st.sets(st.integers(0, size - 1), min_size=1, max_size=size)))
        scale = draw(st.sampled_from([0.3, 1.0, 7.0]))
        w = [scale * draw(st.sampled_from(LEVELS)) for _ in ids]
        present.append((np.array(ids, dtype=np.int32), np.array(w, dtype=np.float64)))
    return size, present


def _selection(size: int, per_doc: int, limit: int, cap: int | None):  # type: ignore[no-untyped-def]
    """``select_top`` over passages ``0..size-1`` grouped ``per_doc`` to a document: the
    caller's check (``top``, ties unbroken, as search passes it) and its final selection."""
    dkeys = np.arange(size) // per_doc
    numbers = np.arange(size) % per_doc

    def doc_ids(keys):  # type: ignore[no-untyped-def]
        return {k: f"d{k:04d}" for k in keys}

    def top(pids: np.ndarray, scores: np.ndarray) -> tuple[bool, float]:
        chosen = select_top(scores, dkeys, numbers, limit, cap, doc_ids, pids, ties=False)
        return len(chosen) == limit, float(scores[chosen[-1]]) if chosen else 0.0

    def final(pids: np.ndarray, scores: np.ndarray) -> list[tuple[int, bytes]]:
        chosen = select_top(scores, dkeys, numbers, limit, cap, doc_ids, pids)
        return [(int(pids[i]), scores[i].tobytes()) for i in chosen]

    return top, final


SELECTIONS = {"per_doc": st.integers(1, 4), "limit": st.integers(1, 12), "cap": st.sampled_from([1, 2, None])}


def _agree(size: int, present: list, got: tuple[np.ndarray, np.ndarray] | None, final) -> bool:  # type: ignore[no-untyped-def]
    """A pruned candidate set selects exactly what the exhaustive disjunction does, with the
    exhaustive scores bit for bit; None (not proven) is always allowed."""
    ids, scores = accumulate(present, size, Scratch(), 10**9)
    if got is None:
        return False
    exact = dict(zip(ids.tolist(), scores.tolist(), strict=True))
    assert all(exact[p] == s for p, s in zip(got[0].tolist(), got[1].tolist(), strict=True))
    assert final(got[0], got[1]) == final(ids, scores)
    return True


@settings(max_examples=300, deadline=None)
@given(q=queries(), **SELECTIONS)
def test_maxscore_selects_what_exhaustive_scoring_selects(  # type: ignore[no-untyped-def]
        q, per_doc: int, limit: int, cap: int | None) -> None:
    size, present = q
    top, final = _selection(size, per_doc, limit, cap)
    uppers = [float(w.max()) for _, w in present]
    got = maxscore(present, uppers, top, lambda c: probe(c, present)[0], max_candidates=10**9)
    _agree(size, present, got, final)


@settings(max_examples=300, deadline=None)
@given(q=queries(), depths=st.sampled_from([(1,), (1, 2, 4), (2, 8, 32), (3, 50)]), **SELECTIONS)
def test_threshold_algorithm_selects_what_exhaustive_scoring_selects(  # type: ignore[no-untyped-def]
        q, depths: tuple[int, ...], per_doc: int, limit: int, cap: int | None) -> None:
    size, present = q
    top, final = _selection(size, per_doc, limit, cap)
    tuning = replace(TUNING, ta_depths=depths, ta_head_share=0)
    orders = [lambda d, w=w: top_positions(w, min(d, len(w)), tuning) for _, w in present]
    got = threshold(present, orders, top, lambda c: probe(c, present)[0], tuning)
    _agree(size, present, got, final)


@settings(max_examples=300, deadline=None)
@given(q=queries(max_terms=1), depths=st.sampled_from([(1,), (1, 2, 4), (3, 50)]), **SELECTIONS)
def test_one_term_from_its_largest_weights_selects_what_exhaustive_scoring_selects(  # type: ignore[no-untyped-def]
        q, depths: tuple[int, ...], per_doc: int, limit: int, cap: int | None) -> None:
    size, present = q
    top, final = _selection(size, per_doc, limit, cap)
    tuning = replace(TUNING, ta_depths=depths)
    (pids, weights), = present
    got = single_term(pids, weights, lambda d: top_positions(weights, min(d, len(weights)), tuning),
                      top, tuning)
    _agree(size, present, got, final)


def test_pruning_proves_its_case_on_skewed_queries() -> None:
    """Guards the property tests above against vacuity: on a rare and a common term each
    method returns a candidate set smaller than all matches, and it selects correctly."""
    rng = np.random.default_rng(5)
    size = 5000
    common = np.sort(rng.choice(size, 4000, replace=False)).astype(np.int32)
    rare = np.sort(rng.choice(size, 40, replace=False)).astype(np.int32)
    present = [(rare, rng.choice([3.0, 4.0, 5.0], len(rare))),
               (common, rng.choice([0.1, 0.2, 0.3], len(common)))]
    top, final = _selection(size, 1, 10, None)
    tuning = replace(TUNING, ta_depths=(16, 64, 256))

    def score_of(c: np.ndarray) -> np.ndarray:
        return probe(c, present)[0]

    found = [
        maxscore(present, [5.0, 0.3], top, score_of, 10**9),
        threshold(present, [lambda d, w=w: top_positions(w, min(d, len(w)), tuning) for _, w in present],
                  top, score_of, tuning),
        single_term(*present[1], lambda d: top_positions(present[1][1], d, tuning), top, tuning),
    ]
    for i, got in enumerate(found):
        assert got is not None and len(got[0]) < len(common), i
        assert _agree(size, present if i < 2 else present[1:], got, final)


def test_a_tie_with_the_threshold_is_no_proof() -> None:
    """Passage 0 and 1 both score 4.0; the heads (ties in any order) hold only passage 1, whose
    score equals the bound for unseen passages. Passage 0 wins the tie-break by document id,
    so stopping there would select the wrong one: the algorithm must go deeper."""
    present = [(np.array([0, 1], dtype=np.int32), np.array([2.0, 2.0]))] * 2
    top, final = _selection(2, 1, 1, None)
    orders = [lambda d: np.array([1, 0])[:max(d, 1)]] * 2
    got = threshold(present, orders, top, lambda c: probe(c, present)[0],
                    replace(TUNING, ta_depths=(1, 2), ta_head_share=0))
    assert _agree(2, present, got, final)


@settings(max_examples=200, deadline=None)
@given(q=queries(), data=st.data())
def test_probes_score_like_accumulation_and_count_terms(q, data: st.DataObject) -> None:  # type: ignore[no-untyped-def]
    """Probed scores of any candidates equal exhaustive accumulation bit for bit (0.0 for a
    passage with none of the terms), whether weights come from binary search or a lookup."""
    size, present = q
    cand = np.array(sorted(data.draw(st.sets(st.integers(0, size - 1), min_size=1))), dtype=np.int32)
    ids, scores = accumulate(present, size, Scratch(), 0)
    exact = dict(zip(ids.tolist(), scores.tolist(), strict=True))
    dense = []
    for p, w in present:
        full = np.zeros(size)
        full[p] = w
        dense.append(full)
    for lookup in (None, lambda i, c: dense[i].take(c)):
        got, hits = probe(cand, present, lookup)
        assert got.tolist() == [exact.get(c, 0.0) for c in cand.tolist()]
        assert hits.tolist() == [sum(c in set(p.tolist()) for p, _ in present) for c in cand.tolist()]


def test_threshold_algorithm_hands_over_when_its_heads_hold_most_postings() -> None:
    """Probing the heads of terms that have few postings beyond them costs more than scoring
    every posting: the threshold algorithm then gives up before probing anything."""
    calls: list[int] = []

    def top(cand: np.ndarray, scores: np.ndarray) -> tuple[bool, float]:
        calls.append(len(cand))
        return False, 0.0

    pids = np.arange(10, dtype=np.int32)
    weights = np.linspace(1.0, 2.0, 10)
    present = [(pids, weights), (pids + 5, weights)]  # 20 postings
    orders = [lambda d: np.argsort(-weights, kind="stable")[:d]] * 2

    def score_of(cand: np.ndarray) -> np.ndarray:
        return probe(cand, present)[0]

    # Heads of 12 postings of 20: not worth probing.
    assert threshold(present, orders, top, score_of, replace(TUNING, ta_depths=(6,))) is None
    assert calls == []
    threshold(present, orders, top, score_of, replace(TUNING, ta_depths=(3,)))  # heads of 6
    assert calls == [6]


@settings(max_examples=80, deadline=None)
@given(
    size=st.integers(1, 400),
    terms=st.lists(st.tuples(st.sets(st.integers(0, 399), min_size=1, max_size=60),
                             st.floats(0.01, 20.0)), min_size=1, max_size=5),
)
def test_dense_and_sparse_accumulation_are_bit_identical(size: int, terms: list) -> None:
    """The two exhaustive paths (bincount over the id space, scratch arrays) must agree exactly,
    or which one runs (a function of collection size) would change scores."""

    present = []
    for ids, base in terms:
        p = np.array(sorted(i for i in ids if i < size), dtype=np.int32)
        if len(p):
            present.append((p, base * (1.0 + np.arange(len(p)) / 7.0)))
    if not present:
        return
    dense = accumulate(present, size, Scratch(), 10**9)
    sparse = accumulate(present, size, Scratch(), 0)
    d = dict(zip(dense[0].tolist(), dense[1].tolist(), strict=True))
    s = dict(zip(sparse[0].tolist(), sparse[1].tolist(), strict=True))
    assert d == s
    assert set(d) == {int(i) for p, _ in present for i in p}


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(1, 40), min_size=1, max_size=3000), depth=st.integers(1, 400),
       scale=st.sampled_from([1.0, 0.37]))
def test_top_positions_are_the_largest_weights(values: list[int], depth: int, scale: float) -> None:
    """The sampled selection returns ``depth`` positions (all, if fewer), largest weight first,
    whose weights are exactly the ``depth`` largest (few distinct values: ties everywhere)."""
    weights = np.array(values, dtype=np.float64) * scale
    depth = min(depth, len(weights))
    got = top_positions(weights, depth, TUNING)
    assert len(got) >= depth and len(set(got.tolist())) == len(got)
    chosen = weights[got]
    assert (np.diff(chosen) <= 0).all()
    assert (np.sort(chosen)[::-1][:depth] == np.sort(weights)[::-1][:depth]).all()


def test_top_positions_complete_a_tie_at_the_threshold() -> None:
    """A common word's weights are mostly one value: the sample's threshold then is that value,
    and the answer is every larger weight plus enough of the tied ones."""
    weights = np.ones(10_000)
    weights[7:10_000:200] = 2.0  # 50 larger weights
    weights[3] = 3.0
    got = top_positions(weights, 100, TUNING)
    assert len(got) == 100 and len(set(got.tolist())) == 100
    assert got[0] == 3 and (weights[got[1:51]] == 2.0).all() and (weights[got[51:]] == 1.0).all()


def test_top_positions_fall_back_when_the_sample_misleads() -> None:
    """A sample that sees only the few largest weights (too few candidates) or only the
    smallest (too many) must not change the answer: the full selection runs instead."""
    few = np.ones(4000)
    few[0:300:10] = 50.0  # 30 huge weights, all on sampled positions (step 10 for depth 100)
    many = np.ones(4000)
    many[1:1000:10] = 50.0  # 100 huge weights, none sampled
    for weights in (few, many):
        got = top_positions(weights, 100, TUNING)
        assert (np.sort(weights[got])[::-1][:100] == np.sort(weights)[::-1][:100]).all()


# -- postings over arrays ------------------------------------------------------------------------
@given(ids=st.sets(st.integers(0, 500), max_size=80), dead=st.sets(st.integers(0, 500), max_size=40))
def test_drop_removes_exactly_the_dead_keeping_aligned_arrays_aligned(ids: set[int], dead: set[int]) -> None:
    pids = np.array(sorted(ids), dtype=np.int32)
    tfs = (pids % 7 + 1).astype(np.uint16)
    index = pids.astype(np.int32) * 3
    got = drop(pids, np.array(sorted(dead), dtype=np.int64), tfs, None, index)
    keep = [p for p in sorted(ids) if p not in dead]
    assert got[0].tolist() == keep
    assert got[1].tolist() == [p % 7 + 1 for p in keep] and got[2] is None
    assert got[3].tolist() == [3 * p for p in keep]
    if not ids & dead:  # nothing to drop: the very same arrays, no copies
        assert got[0] is pids and got[1] is tfs and got[3] is index


@given(postings=st.lists(st.tuples(st.integers(1, 12), st.integers(1, 40)), min_size=1, max_size=200),
       grid_factor=st.sampled_from([0, 1, 4, 10**9]), avgdl=st.floats(1.0, 60.0))
@example(postings=[(1, 1)] * 4, grid_factor=1, avgdl=1.0)  # a table exactly 1/grid_factor the size
def test_pairs_of_index_each_posting_into_the_table_of_pair_weights(
        postings: list[tuple[int, int]], grid_factor: int, avgdl: float) -> None:
    """Each posting's pair index, gathered from ``pair_weights``, gives its ``term_weights``
    bit for bit; no index when the table would not be ``grid_factor`` times smaller."""
    tfs = [t for t, _ in postings]
    lengths = np.array([n for _, n in postings], dtype=np.int32)
    tf = np.array(tfs, dtype=np.uint16)
    got = pairs_of(tf, lengths, replace(TUNING, grid_factor=grid_factor))
    table_size = (max(tfs) + 1) * (int(lengths.max()) + 1)
    if table_size * grid_factor > len(tfs):
        assert got is None
        return
    assert got is not None and (got.tf_max, got.width) == (max(tfs), int(lengths.max()) + 1)
    assert got.index.tolist() == [t * got.width + n for t, n in zip(tfs, lengths.tolist(), strict=True)]
    table = pair_weights(got.tf_max, got.width, 1.3, avgdl, PARAMS)
    assert table.take(got.index).tobytes() == term_weights(tf, lengths, 1.3, avgdl, PARAMS).tobytes()


# -- the one cache -------------------------------------------------------------------------------
def test_cache_evicts_least_recently_used_within_its_budget() -> None:
    cache = WeightsCache(budget=3 * (1000 + ENTRY_OVERHEAD))
    for k in "abc":
        cache.put(k, k.upper(), 1000)
    assert len(cache) == 3 and cache.nbytes == cache.budget
    assert cache.get("a") == "A"  # now the most recently used: "b" goes first
    cache.put("d", "D", 1000)
    assert [cache.get(k) for k in "abcd"] == ["A", None, "C", "D"]
    cache.put("c", "C2", 2000)  # a larger value replaces the old one and evicts to fit
    assert cache.nbytes <= cache.budget and cache.get("c") == "C2"
    cache.put("huge", "H", 10**9)  # the newest entry stays, alone, even over budget
    assert len(cache) == 1 and cache.get("huge") == "H"
    cache.clear()
    assert len(cache) == 0 and cache.nbytes == 0 and cache.get("huge") is None


def test_a_newer_version_of_a_lineage_drops_the_older_at_once() -> None:
    """Weights of a newer visible collection under the same signature table replace the older
    collection's entry (never asked for again) when stored, not when least recently used."""
    cache = WeightsCache(budget=10**6)
    cache.put(("w", b"v1", "t"), "old", 1000, lineage=("w", "t"))
    cache.put(("w", b"v1", "u"), "other", 1000, lineage=("w", "u"))
    cache.put(("w", b"v2", "t"), "new", 1000, lineage=("w", "t"))
    assert cache.get(("w", b"v1", "t")) is None and cache.get(("w", b"v2", "t")) == "new"
    assert cache.get(("w", b"v1", "u")) == "other" and cache.nbytes == 2 * (1000 + ENTRY_OVERHEAD)
    cache.put(("w", b"v2", "t"), "again", 1000, lineage=("w", "t"))  # same key: just replaced
    cache.put(("w", b"v3", "t"), "newest", 1000, lineage=("w", "t"))
    assert len(cache) == 2 and cache.get(("w", b"v3", "t")) == "newest"


def test_retire_drops_a_lineages_latest_entry_before_its_successor_exists() -> None:
    cache = WeightsCache(budget=10**6)
    cache.put(("w", b"v1", "t"), "old", 1000, lineage=("w", "t"))
    cache.put(("w", b"v1", "u"), "other", 1000, lineage=("w", "u"))
    cache.retire(("w", "t"))
    assert cache.get(("w", b"v1", "t")) is None and cache.get(("w", b"v1", "u")) == "other"
    assert len(cache) == 1 and cache.nbytes == 1000 + ENTRY_OVERHEAD
    cache.retire(("w", "t"))  # nothing stored under it any more
    cache.put(("w", b"v2", "t"), "new", 1000, lineage=("w", "t"))
    assert len(cache) == 2 and cache.get(("w", b"v2", "t")) == "new"


def test_bm25_keeps_its_derived_arrays_within_the_byte_budget() -> None:
    """Weighing term after term, the one cache never holds more bytes than ``cache_bytes``:
    the least recently used terms go, and weighing one again gives the same bits."""
    size = 20_000
    budget = 400_000  # each term's ids and weights take 120 KB: about three terms fit
    bm = BM25(tuning=replace(TUNING, cache_bytes=budget))
    assert bm._cache.budget == budget
    sig_of_pid = np.zeros(size, dtype=np.int32)
    length = (np.arange(size, dtype=np.int32) % 30) + 1
    table = np.array([False, True])
    allowed = Allowed(table, size, size * 15, table.tobytes())

    def weigh(i: int) -> tuple[np.ndarray, np.ndarray]:
        parts = [(np.arange(i % 2, size, 2, dtype=np.int32), np.full(size // 2, 1 + i % 4, dtype=np.uint16))]
        return bm.weighted(f"t{i}", lambda _t: parts, sig_of_pid, length, allowed)

    first = weigh(0)
    for i in range(1, 30):
        weigh(i)
        assert 0 < bm._cache.nbytes <= budget
    assert bm._cache.get(("weights", allowed.key, "t0")) is None  # evicted
    assert len(bm._cache) < 10
    again = weigh(0)
    assert again[0] is not first[0]  # computed afresh, not kept past the budget
    assert again[0].tobytes() == first[0].tobytes() and again[1].tobytes() == first[1].tobytes()


# -- the one tuning ------------------------------------------------------------------------------
def test_tuning_is_frozen() -> None:
    with pytest.raises(FrozenInstanceError):
        TUNING.cache_bytes = 1  # type: ignore[misc]
    changed = replace(TUNING, cache_bytes=1)  # a test's variant is a new value
    assert changed.cache_bytes == 1 and TUNING.cache_bytes == Tuning().cache_bytes


def test_every_tuning_field_states_its_reason() -> None:
    """Each field is preceded by a ``#:`` comment (its reason), as the module promises."""
    source = inspect.getsource(Tuning).splitlines()
    for f in fields(Tuning):
        at = next(i for i, line in enumerate(source) if line.strip().startswith(f"{f.name}:"))
        assert source[at - 1].strip().startswith("#:"), f.name


# -- pruning and the kept arrays through a real store (retrieve._bm25, _cache, _postings) ----------
VOCAB = ["the", "a", "of", "kiwi", "mango", "plum", "pear", "fig", "lime", "date"]


# Skewed so that "the" and "a" behave like very common words, the fruit like rare ones.
WORD = st.sampled_from(VOCAB[:3] * 6 + VOCAB[3:])


#: Small collections of skewed words, 2-4 word queries, limits and per-document caps.
CASES = {
    "docs": st.lists(st.lists(st.lists(WORD, min_size=1, max_size=12), min_size=1, max_size=4),
                     min_size=1, max_size=25),
    "query": st.lists(st.sampled_from(VOCAB), min_size=2, max_size=4),
    "limit": st.integers(1, 8),
    "cap": st.sampled_from([1, 2, None]),
    # Probe common terms through dense weight arrays: every term (10**9) or none (0; tiny
    # collections never reach the real threshold); from the first probe of a term, or from its
    # second (the first binary-searches), so both ways meet within one store.
    "dense": st.sampled_from([(0, 1), (10**9, 1), (10**9, 2)]),
}


@contextmanager
def tuned(**changes: object) -> Iterator[None]:
    """Every BM25 made inside (each KnowledgeBase opened) uses TUNING with ``changes``."""
    saved = bm25_module.TUNING
    bm25_module.TUNING = replace(saved, **changes)  # type: ignore[arg-type]
    try:
        yield
    finally:
        bm25_module.TUNING = saved


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CASES)
def test_pruned_search_equals_exhaustive(docs: list[list[list[str]]], query: list[str], limit: int,
                                          cap: int | None, dense: tuple[int, int]) -> None:
    actor = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
    # Pruning normally starts only above tens of thousands of postings; force it on tiny data.
    with tuned(prune_min_postings=0, dense_probe_factor=dense[0], dense_after_probes=dense[1],
               dense_min_candidates=0):
        _check(actor, docs, query, limit, cap)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CASES)
def test_threshold_algorithm_equals_exhaustive(docs: list[list[list[str]]], query: list[str], limit: int,
                                               cap: int | None, dense: tuple[int, int]) -> None:
    """The threshold algorithm alone (MaxScore disabled) at tiny depths, so it both stops early
    and runs out of depth on generated data."""
    actor = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
    # ta_head_share 0: never hand tiny collections over to exhaustive scoring.
    with tuned(prune_min_postings=0, maxscore_max_candidates=0, ta_depths=(1, 2, 4), ta_head_share=0,
               dense_probe_factor=dense[0], dense_after_probes=dense[1], dense_min_candidates=0):
        _check(actor, docs, query, limit, cap)


def test_threshold_algorithm_stops_early_on_common_words(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Guards the test above against vacuity: on a query of two common words the threshold
    algorithm really returns a (partial) candidate set, and the results still equal exhaustive."""
    outcomes: list[bool] = []
    real = bm25_module.threshold

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(*args, **kwargs)
        outcomes.append(out is not None)
        return out

    monkeypatch.setattr(bm25_module, "threshold", spy)
    docs = [[["the"] * (1 + (i * 7) % 5) + ["a"] * (1 + (i * 3) % 4) + ["kiwi"] * (i % 2) + ["fig"] * 9]
            for i in range(20)]
    with tuned(prune_min_postings=0, maxscore_max_candidates=0, ta_depths=(2, 8)):
        _check(Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL), docs, ["the", "a"], 3, None)
    assert outcomes and outcomes[-1], outcomes


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=CASES["docs"], word=st.sampled_from(VOCAB), limit=CASES["limit"], cap=CASES["cap"],
       depths=st.sampled_from([(1,), (1, 2, 4), (3, 50)]), reverse=st.booleans())
def test_one_word_queries_from_the_largest_weights_equal_exhaustive(
        docs: list[list[list[str]]], word: str, limit: int, cap: int | None, depths: tuple[int, ...],
        reverse: bool) -> None:
    """A one-word query is selected from the word's largest weights, ties included: generated
    passages share weights all the time (same count, same length), so a cut inside a tie would
    show up here as a different document winning the tie-break."""
    with tuned(prune_min_postings=0, ta_depths=depths):
        _check(Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL), docs, [word, word], limit, cap,
               reverse)


def test_one_word_queries_stop_at_the_largest_weights(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Guards the test above against vacuity: the head of a common word's weights, with its
    ties, really is the candidate set, and the result equals exhaustive."""
    sizes: list[int] = []
    real = bm25_module.single_term

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(*args, **kwargs)
        sizes.append(-1 if out is None else len(out[0]))
        return out

    monkeypatch.setattr(bm25_module, "single_term", spy)
    # 30 documents of one passage; "the" occurs 1-5 times in passages of equal length.
    docs = [[["the"] * (1 + i % 5) + ["fig"] * (8 - i % 5)] for i in range(30)]
    with tuned(prune_min_postings=0, ta_depths=(2, 8)):
        _check(Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL), docs, ["the"], 3, None,
               reverse=True)
    assert sizes and 3 <= sizes[-1] < 30, sizes  # the six passages of five "the"s, not all 30


def _check(actor: Actor, docs: list[list[list[str]]], query: list[str], limit: int,
           cap: int | None, reverse: bool = False) -> None:
    """``reverse`` ingests the documents last to first, so that passage ids (the order within a
    term's postings) run against the document ids that break ties."""
    with tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase.open(Path(tmp) / "kb.db")
        batch = [
            Document(f"d{i:02d}", "t", {"g"}, "1", "\n\n".join(" ".join(p) for p in paras))
            for i, paras in enumerate(docs)
        ]
        kb.ingest(batch[::-1] if reverse else batch)
        try:
            _compare(kb, actor, " ".join(query), limit, cap)
        finally:
            kb.close()


def _compare(kb: KnowledgeBase, actor: Actor, q: str, limit: int, cap: int | None) -> None:
    """The search (any and all) equals the exhaustive disjunction, restricted for "all"."""
    got = [(h.document_id, h.passage, h.score) for h in kb.search(actor, q, limit=limit,
                                                                  max_per_document=cap, mode="keyword")]
    terms = kb._analyzer.query_terms(words(q))
    # match="all" probes every term; its reference is the exhaustive any-match ranking
    # restricted to the passages that contain every query term.
    every = [(h.document_id, h.passage, h.score) for h in
             kb.search(actor, q, limit=limit, max_per_document=cap, mode="keyword", match="all")]
    with kb.store.read() as view:
        full = keyword_candidates(view, kb._bm25, access(view, actor, Filters()), terms, "any")  # no window
        want = [(h.document_id, h.passage, h.score) for h in hits_from(view, full, limit, cap)]
        hits = hits_from(view, full, len(full.pids), None)
        keep = {(h.document_id, h.passage) for h in hits
                if set(terms) <= set(kb._analyzer.terms(h.quote))}
        names = view.doc_ids(int(view.dkey[p]) for p in full.pids)
        sel = np.array([(names[int(view.dkey[p])], int(view.number[p])) in keep
                        for p in full.pids], dtype=bool).reshape(-1)
        both = Candidates(full.pids[sel], full.scores[sel], {})
        want_all = [(h.document_id, h.passage, h.score) for h in hits_from(view, both, limit, cap)]
    assert got == want
    assert every == want_all


@settings(max_examples=120, deadline=None)
@given(
    size=st.integers(1, 300),
    runs=st.lists(st.sets(st.integers(0, 299), min_size=1, max_size=80), min_size=1, max_size=5),
    disjoint=st.booleans(),
    sigs=st.lists(st.integers(-1, 3), min_size=300, max_size=300),
    allowed_sigs=st.sets(st.integers(0, 3)),
    visible_factor=st.sampled_from([0, 10**9]),
)
def test_weighted_postings_equal_a_plain_reference(size: int, runs: list[set[int]], disjoint: bool,
                                                   sigs: list[int], allowed_sigs: set[int],
                                                   visible_factor: int) -> None:
    """Segment runs that are disjoint and in order skip the merge sort; interleaved runs are
    sorted; large terms are masked through the visible-id array. Every way gives exactly the
    ids and weights of a plain mask-sort-weigh reference."""
    from evidex.retrieve._access import Allowed

    if disjoint:  # cut one sorted id set into consecutive runs, handed over shuffled
        ids = sorted(set().union(*runs))
        cuts = sorted({min(len(ids), len(r)) for r in runs})
        parts_ids = [ids[a:b] for a, b in zip([0, *cuts], [*cuts, len(ids)], strict=True) if ids[a:b]][::-1]
    else:
        parts_ids = [sorted(r) for r in runs]
    parts_ids = [[i for i in p if i < size] for p in parts_ids]
    parts = [(np.array(p, dtype=np.int32), (np.array(p, dtype=np.uint16) % 7 + 1).astype(np.uint16))
             for p in parts_ids]
    sig_of_pid = np.array(sigs[:size], dtype=np.int32)
    length = (np.arange(size, dtype=np.int32) % 50) + 1
    table = np.zeros(6, dtype=bool)
    for s_ in allowed_sigs:
        table[s_ + 1] = True
    allowed = Allowed(table, max(1, size // 2), max(1, size * 20), table.tobytes())
    bm = bm25_module.BM25(tuning=replace(TUNING, visible_factor=visible_factor))
    got = bm.weighted("t", lambda _t: parts, sig_of_pid, length, allowed)
    assert (got[0].tolist(), got[1].tolist()) == _reference(parts, sig_of_pid, length, allowed)


class _Log:
    """A read view's log of passage deaths, for BM25.weighted (see store.SegmentCache)."""

    def __init__(self) -> None:
        self.epoch = object()
        self.dead: list[int] = []
        self.deaths_mark = (self.epoch, 0)

    def die(self, pids: list[int]) -> None:
        self.dead += pids
        self.deaths_mark = (self.epoch, len(self.dead))

    def deaths_since(self, mark: tuple[object, int]) -> np.ndarray | None:
        return np.unique(np.array(self.dead[mark[1]:], dtype=np.int64))


def _reference(parts: list[tuple[np.ndarray, np.ndarray]], sig_of_pid: np.ndarray, length: np.ndarray,
               allowed: object) -> tuple[list[int], list[float]]:
    """Every posting once per (run, id), masked, stably sorted, weighed by the textbook formula."""
    pids = np.concatenate([p for p, _ in parts]) if parts else np.zeros(0, np.int32)
    tfs = np.concatenate([t for _, t in parts]) if parts else np.zeros(0, np.uint16)
    keep = allowed.mask(sig_of_pid, pids)  # type: ignore[attr-defined]
    pids, tf = pids[keep], tfs[keep].astype(np.float64)
    order = np.argsort(pids, kind="stable")
    pids, tf = pids[order], tf[order]
    k1, b = 1.2, 0.75
    n = allowed.passages  # type: ignore[attr-defined]
    idf = np.log(1.0 + (n - len(pids) + 0.5) / (len(pids) + 0.5))
    norm = k1 * (1.0 - b) + (k1 * b / allowed.avgdl) * length[pids]  # type: ignore[attr-defined]
    return pids.tolist(), ((idf * (k1 + 1.0)) * tf / (tf + norm)).tolist()


@settings(max_examples=120, deadline=None)
@given(
    runs=st.lists(st.sets(st.integers(0, 399), min_size=1, max_size=200), min_size=1, max_size=4),
    sigs=st.lists(st.integers(0, 3), min_size=400, max_size=400),
    allowed_sigs=st.sets(st.integers(0, 3), min_size=1),
    dead=st.sets(st.integers(0, 399), max_size=40),
    tf_top=st.sampled_from([3, 60]),
    grid=st.sampled_from([0, 10**9]),
)
def test_kept_parts_and_weight_grids_equal_a_plain_reference(
        runs: list[set[int]], sigs: list[int], allowed_sigs: set[int], dead: set[int], tf_top: int,
        grid: int) -> None:
    """Large parts keep their allowed postings (and, where the (tf, length) grid is small, its
    index) across visible collections; after passages die, a second visible collection (new
    statistics) reuses them without the dead. Ids and weights equal the plain reference
    bit for bit, on both the grid and the direct path."""
    from evidex.retrieve._access import Allowed

    size = 400
    parts = [(np.array(sorted(r), dtype=np.int32),
              (np.array(sorted(r), dtype=np.uint16) % tf_top + 1).astype(np.uint16)) for r in runs]
    sig_of_pid = np.array(sigs, dtype=np.int32)
    length = (np.arange(size, dtype=np.int32) * 7 % 61) + 1
    table = np.zeros(6, dtype=bool)
    for s_ in allowed_sigs:
        table[s_ + 1] = True
    log = _Log()
    # Every part is large; always or never weighed through a grid.
    bm = bm25_module.BM25(tuning=replace(TUNING, part_factor=10**9, visible_factor=10**9,
                                         grid_factor=0 if grid else 10**9))
    first = Allowed(table, 150, 150 * 31, table.tobytes() + b"1")
    got = bm.weighted("t", lambda _t: parts, sig_of_pid, length, first, log)
    assert (got[0].tolist(), got[1].tolist()) == _reference(parts, sig_of_pid, length, first)
    sig_of_pid[sorted(dead)] = -1
    log.die(sorted(dead))
    second = Allowed(table, 149, 149 * 30, table.tobytes() + b"2")
    got = bm.weighted("t", lambda _t: parts, sig_of_pid, length, second, log)
    assert (got[0].tolist(), got[1].tolist()) == _reference(parts, sig_of_pid, length, second)


def test_dense_frequencies_are_kept_and_only_new_parts_written() -> None:
    """A common word's frequency array serves every later query: a large part it has folded
    in is recognised by identity and not written again, a new array (a merged segment, a new
    segment) is, and the array grows with the id space."""
    cache = WeightsCache(TUNING.cache_bytes)

    def dense_tfs(df: int, size: int) -> np.ndarray | None:
        return frequencies(cache, "t", lambda _t: parts, df, size, None, TUNING)

    size = 1000
    big = (np.arange(0, size, 2, dtype=np.int32), np.full(size // 2, 3, dtype=np.uint16))
    parts = [big]
    assert dense_tfs(len(big[0]), size) is None  # the first probe searches
    tfs = dense_tfs(len(big[0]), size)
    assert tfs is not None and (tfs[:size:2] == 3).all() and not tfs[1:size:2].any()
    tfs[0] = 9  # a marker: writing the big part again would reset it
    new = (np.array([1001, 1003], dtype=np.int32), np.array([5, 6], dtype=np.uint16))
    parts = [big, new]
    again = dense_tfs(len(big[0]) + 2, size + 4)
    assert again is not None and again[0] == 9  # the big part was recognised
    assert again[1001] == 5 and again[1003] == 6 and again[1002] == 0
    merged = (big[0].copy(), big[1].copy())  # the same postings in a new segment
    parts = [merged, new]
    last = dense_tfs(len(big[0]) + 2, size + 4)
    assert last is not None and last[0] == 3 and last[1001] == 5


HISTORY = st.lists(st.tuples(st.sampled_from(["add", "supersede", "remove"]), st.integers(0, 7),
                             st.sampled_from(["g", "h"]), CASES["docs"].map(lambda d: d[0])),
                   min_size=1, max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=HISTORY, query=st.lists(WORD, min_size=2, max_size=3), limit=CASES["limit"],
       cap=CASES["cap"], after=st.sampled_from([1, 2]))
def test_dense_probes_stay_exact_across_writes(history: list, query: list[str], limit: int,
                                               cap: int | None, after: int) -> None:
    """Frequency arrays outlive writes (new segments, merges, dead passages, documents the actor
    cannot read): after every write, searches probing through them equal exhaustive scoring."""
    actor = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
    with tuned(prune_min_postings=0, dense_probe_factor=10**9, dense_min_candidates=0,
               dense_after_probes=after), tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase.open(Path(tmp) / "kb.db")
        try:
            versions: dict[int, int] = {}
            for op, i, group, paras in history:
                text = "\n\n".join(" ".join(p) for p in paras)
                if op == "remove":
                    kb.remove("t", f"d{i}")
                    versions.pop(i, None)
                elif op == "add" or i in versions:
                    versions[i] = versions.get(i, 0) + 1
                    kb.ingest(Document(f"d{i}", "t", {group}, str(versions[i]), text))
                _compare(kb, actor, " ".join(query), limit, cap)
        finally:
            kb.close()


def test_handles_over_one_store_score_with_their_own_bm25_parameters(tmp_path: Path) -> None:
    """k1 and b belong to a handle's scorer, and so does its weights cache: handles over one store
    with different parameters, searched in turn, each score by textbook BM25 with their own; a
    scorer's parameters cannot be swapped under its cached weights."""
    texts = ["kiwi kiwi kiwi mango", "kiwi plum pear fig lime date fig lime date plum",
             "mango mango fig", "kiwi mango plum", "pear"]
    kb = KnowledgeBase.open(tmp_path / "kb.db", analyzer="exact", embedder="none")
    kb.ingest([Document(f"d{i}", "t", {"g"}, "1", t) for i, t in enumerate(texts)])
    actor = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
    tokens = [t.split() for t in texts]
    avgdl = sum(map(len, tokens)) / len(tokens)

    def textbook(k1: float, b: float) -> dict[str, float]:
        out: dict[str, float] = {}
        for term in ("kiwi", "mango"):
            df = sum(term in ws for ws in tokens)
            w_idf = math.log(1 + (len(tokens) - df + 0.5) / (df + 0.5))
            for i, ws in enumerate(tokens):
                tf = Counter(ws)[term]
                if tf:
                    norm = k1 * (1 - b + b * len(ws) / avgdl)
                    out[f"d{i}"] = out.get(f"d{i}", 0.0) + w_idf * tf * (k1 + 1) / (tf + norm)
        return out

    other = KnowledgeBase(kb.store, bm25=BM25Params(k1=2.0, b=0.3))
    try:
        for handle, (k1, b) in ((kb, (1.2, 0.75)), (other, (2.0, 0.3)), (kb, (1.2, 0.75))):
            hits = handle.search(actor, "kiwi mango", limit=10, mode="keyword")
            want = textbook(k1, b)
            assert {h.document_id for h in hits} == set(want)
            for h in hits:
                assert math.isclose(h.score, want[h.document_id], rel_tol=1e-9)
        with pytest.raises(AttributeError):
            kb._bm25.params = BM25Params(k1=2.0, b=0.3)  # type: ignore[misc]
    finally:
        kb.close()


def test_weights_a_query_holds_never_change() -> None:
    """After a readable write a common word's ids and weights are computed again for the new
    visible collection, in memory of their own: the arrays of the previous collection, which a
    query may still be reading, keep their values."""
    from evidex.retrieve._access import Allowed

    size = 400
    # Two parts of disjoint id ranges (as segments written in id order are): the ids are
    # concatenated, in order.
    parts = [(np.arange(s, s + size // 2, dtype=np.int32), np.full(size // 2, 1 + s % 3, dtype=np.uint16))
             for s in (0, size // 2)]
    sig_of_pid = np.zeros(size, dtype=np.int32)
    length = (np.arange(size, dtype=np.int32) % 13) + 1
    table = np.array([False, True], dtype=bool)
    log = _Log()
    bm = bm25_module.BM25()

    def collection(i: int) -> Allowed:
        return Allowed(table, size, size * (6 + i), table.tobytes() + bytes([i]))

    held = bm.weighted("t", lambda _t: parts, sig_of_pid, length, collection(1), log)
    want = _reference(parts, sig_of_pid, length, collection(1))
    for i in (2, 3):
        later = bm.weighted("t", lambda _t: parts, sig_of_pid, length, collection(i), log)
        assert not np.shares_memory(later[1], held[1]) and not np.shares_memory(later[0], held[0])
        assert (later[0].tolist(), later[1].tolist()) == _reference(parts, sig_of_pid, length, collection(i))
        del later
    assert (held[0].tolist(), held[1].tolist()) == want  # untouched


def test_every_cache_entry_read_is_kept_as_recently_used() -> None:
    """The visible-id array and impact orders are read by later queries as weights are: a
    full cache evicts what was read least recently, not these because they are never the
    entry a query asks for by term."""
    from evidex.retrieve._access import Allowed

    size = 4000
    sig_of_pid = np.zeros(size, dtype=np.int32)
    length = np.full(size, 10, dtype=np.int32)
    table = np.array([False, True])
    allowed = Allowed(table, size, size * 10, table.tobytes())
    bm = bm25_module.BM25(tuning=replace(TUNING, cache_bytes=200_000))  # about five terms' weights
    vis = visible(bm._cache, allowed, sig_of_pid)
    weights = np.linspace(1.0, 2.0, size)
    order = bm._impact_order(allowed, "w", weights, 16)
    for i in range(30):
        term = (np.arange(0, size, 2, dtype=np.int32), np.full(size // 2, 1 + i % 3, dtype=np.uint16))
        bm.weighted(f"t{i}", lambda _t, p=term: [p], sig_of_pid, length, allowed)
        assert visible(bm._cache, allowed, sig_of_pid) is vis
        assert bm._impact_order(allowed, "w", weights, 16) is order


# -- adaptive fusion's rule and signals (retrieve._adaptive, retrieve._signals) --------------------
RULE = AdaptiveRule()


# -- the rule ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_weights_sum_to_one_and_stay_in_range() -> None:
    for cov in np.linspace(0, 1, 11):
        for foreign in (0.0, 0.5, 1.0):
            for peak in (0.0, 0.5, 1.0):
                w = leg_weights(QuerySignals(float(cov), foreign, peak, "en"))
                assert 0.0 <= w.keyword <= RULE.ceiling
                assert w.keyword + w.vector == pytest.approx(1.0)
                assert w.why and all(isinstance(r, str) for r in w.why)


@pytest.mark.slow
def test_keyword_weight_grows_with_coverage_and_peak_and_falls_with_foreign_passages() -> None:
    def kw(cov: float, foreign: float = 0.0, peak: float = 0.5) -> float:
        return leg_weights(QuerySignals(cov, foreign, peak, "de")).keyword

    covs = [kw(c) for c in np.linspace(0, 1, 21)]
    assert covs == sorted(covs) and covs[0] < covs[-1]
    assert kw(0.9, peak=1.0) > kw(0.9, peak=0.1)
    assert kw(0.3, foreign=1.0) < kw(0.3, foreign=0.0)


@pytest.mark.slow
def test_nothing_useful_from_the_keyword_leg_gives_about_the_vector_ranking() -> None:
    w = leg_weights(QuerySignals(0.0, 0.0, 0.0))
    assert w.keyword == pytest.approx(RULE.floor) and w.keyword <= 0.2
    # A cross-language query: a foreign vector top and a keyword leg that covers only a name.
    cross = leg_weights(QuerySignals(0.15, 1.0, 1.0, "de", known=0.4))
    assert cross.keyword == pytest.approx(RULE.floor)
    assert any("not in the query's language (de)" in r for r in cross.why)
    assert any("cover 15% of the query" in r for r in cross.why)


@pytest.mark.slow
def test_an_exact_code_covered_and_peaked_gets_more_than_equal_keyword_weight() -> None:
    w = leg_weights(QuerySignals(1.0, 0.0, 1.0, None))
    assert w.keyword > 0.5 and any("stands out" in r for r in w.why)


@pytest.mark.slow
def test_rule_is_pure() -> None:
    s = QuerySignals(0.42, 0.3, 0.7, "en")
    assert leg_weights(s) == leg_weights(s)


@pytest.mark.slow
def test_adaptive_fuse_needs_weights_and_uses_them() -> None:
    kw = Leg("keyword", np.array([1, 2]), np.array([3.0, 1.0]))
    vec = Leg("vector", np.array([2, 1]), np.array([0.9, 0.1]))
    with pytest.raises(ValueError, match="weights"):
        fuse([kw, vec], Fusion("adaptive"))
    vector_only = leg_weights(QuerySignals(0.0, 0.0, 0.0), AdaptiveRule(floor=0.0))
    pids, scores, _ = fuse([kw, vec], Fusion("adaptive"), vector_only)
    assert dict(zip(pids.tolist(), scores.tolist(), strict=True)) == {1: 0.0, 2: 1.0}


# -- the signals --------------------------------------------------------------------------------
@pytest.mark.slow
def test_coverage_is_idf_weighted_and_unknown_words_count_against_it() -> None:
    kw = Leg("keyword", np.array([7, 8]), np.array([5.0, 1.0]))
    vec = Leg("vector", np.array([8, 7]), np.array([0.9, 0.8]))
    term_pids = {"benz": np.array([7], dtype=np.int64), "patent": np.array([7, 8, 9], dtype=np.int64),
                 "erhielt": np.array([], dtype=np.int64)}
    s = query_signals(kw, vec, ["benz", "erhielt", "patent"], term_pids, 100, {7: "en", 8: "en"}, "de")
    assert 0.3 < s.coverage < 0.7  # benz and patent found, erhielt (rarest: absent) not
    assert s.foreign == 1.0 and s.peak == pytest.approx(0.8) and s.language == "de"
    full = query_signals(kw, vec, ["benz", "patent"], term_pids, 100, {7: "en", 8: None}, "en")
    assert full.coverage == 1.0 and full.foreign == 0.0
    # Unknown passage languages and an unidentified query give no language signal.
    assert query_signals(kw, vec, ["benz"], term_pids, 100, {7: None, 8: None}, "de").foreign == 0.0
    assert query_signals(kw, vec, ["benz"], term_pids, 100, {7: "en", 8: "en"}, None).foreign == 0.0
    empty = Leg("keyword", np.array([], dtype=np.int64), np.array([]))
    assert query_signals(empty, vec, ["x"], {}, 100, {}, "en").coverage == 0.0
    assert query_signals(None, vec, [], None, 100, {}, "en").coverage == 0.0


# -- weighted RRF's contributions (retrieve._fusion) -----------------------------------------------
KW = Leg("keyword", np.array([1, 2, 3]), np.array([9.0, 5.0, 1.0]))


VEC = Leg("vector", np.array([3, 2, 4]), np.array([0.9, 0.8, 0.7]))


def _scores(fusion: Fusion, weights: LegWeights | None = None) -> dict[int, float]:
    pids, scores, _ = fuse([KW, VEC], fusion, weights)
    return dict(zip(pids.tolist(), scores.tolist(), strict=True))


def test_equal_weights_are_plain_rrf_bit_for_bit() -> None:
    even = LegWeights(0.5, 0.5, ("even",))
    assert _scores(Fusion("weighted_rrf"), even) == _scores(Fusion("rrf"))
    assert _scores(Fusion("weighted_rrf", rrf_k=10), even) == _scores(Fusion("rrf", rrf_k=10))
    assert rrf_contributions(3, 60) == [1 / 61, 1 / 62, 1 / 63]


def test_each_leg_counts_by_its_weight() -> None:
    w = LegWeights(0.15, 0.85, ("cross-language",))
    got = _scores(Fusion("weighted_rrf"), w)
    assert got[1] == pytest.approx(2 * 0.15 / 61)  # keyword #1 only
    assert got[4] == pytest.approx(2 * 0.85 / 63)  # vector #3 only
    assert got[3] == pytest.approx(2 * 0.15 / 63 + 2 * 0.85 / 61)
    # Plain RRF puts the keyword leg's first (1/61) above the vector leg's third (1/63); with the
    # keyword leg near the floor the vector leg's passage wins, with it heavy the keyword one.
    plain = _scores(Fusion("rrf"))
    assert plain[1] > plain[4] and got[1] < got[4]
    keyword_heavy = _scores(Fusion("weighted_rrf"), LegWeights(0.8, 0.2, ("exact code",)))
    assert keyword_heavy[1] > keyword_heavy[4]


# -- the vector leg's deadline (retrieve._deadline's pool, retrieve._search's call) -----------
@pytest.fixture
def store(tmp_path: Path) -> KnowledgeBase:
    return warm_store(tmp_path / "kb.db")


@pytest.mark.slow
def test_a_vector_search_past_the_deadline_falls_back(
        store: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    real = hybrid_module.vector_candidates

    def slow_search(*args, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(0.3)
        return real(*args, **kwargs)

    monkeypatch.setattr(hybrid_module, "vector_candidates", slow_search)
    store.vector_timeout_ms = 50
    res = store.search(STAFF, fresh("parcels austria"))
    assert res.fallback is not None and res.fallback["reason"] == "vector_timeout"
    assert "the vector search did not finish" in res.fallback["detail"]
    assert res[0].document_id == "shipping"
    store.vector_timeout_ms = 30_000
    assert store.search(STAFF, fresh("parcels austria")).fallback is None


@pytest.mark.slow
def test_quote_vectors_past_the_deadline_decline_and_finish_into_the_cache(
        store: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """The answer-bearing decision's quote vectors (first meeting of a sentence) have a deadline
    of their own: past it the answer is declined with ``timeout`` (never decided by the quotes'
    words alone: an answer must not depend on how busy the machine is) and its trace says so,
    and the late embedding still fills the cache, so the same answer next time reads them by
    meaning. A search (plain or with the on-topic decision) embeds no sentence at all, so it
    is never late for one."""
    tag = uuid.uuid4().hex[:8]
    store.ingest([Document(id="gift", tenant="acme", groups=frozenset({"staff"}), version="1",
                           text=f"# Gift cards\n\nGift cards {tag} never expire and work online.")],
                 split="heading")
    embedder = get_embedder("hash-test")
    real, asked, done, go = embedder.embed_passages, [], [], threading.Event()

    def slow(texts):  # type: ignore[no-untyped-def]
        asked.extend(texts)
        go.wait(60)  # held until the answer has returned: late whatever the machine's speed
        out = real(texts)
        done.append(len(texts))
        return out

    submitted: list[Future[object]] = []
    pool = deadline_module._POOL

    class Recording:  # the deadline pool, recording its work so the test can wait for it
        def submit(self, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
            future = pool.submit(fn, *args, **kwargs)
            submitted.append(future)
            return future

    monkeypatch.setattr(embedder, "embed_passages", slow)
    monkeypatch.setattr(deadline_module, "_POOL", Recording())
    store.vector_timeout_ms = 100
    question = f"Do gift cards {tag} expire?"
    for evidence in (False, True):
        res = store.search(STAFF, question, evidence=evidence)
        assert asked == [] and res.fallback is None and res[0].document_id == "gift"
    ans = store.answer(STAFF, question)
    assert done == [], "the answer waited for the slow quote embedding"
    assert any(tag in t for t in asked), "the quotes were not embedded for the decision"
    assert ans.trace is not None and ans.trace["fallback"] == {
        "fallback": "keyword", "reason": "vector_timeout",
        "detail": "the quotes' embedding did not finish within retrieval.vector.timeout_ms (100 ms)"}
    assert ans.status == "declined" and ans.reason == "timeout"
    assert ans.trace["decision"]["answer_bearing"]["why"] == "timeout"
    go.set()  # the late call finishes in the background, and writes its vectors to the cache
    finished, _ = wait(submitted, timeout=120)
    assert len(finished) == len(submitted) and done
    asked.clear()
    store.vector_timeout_ms = 30_000  # what is checked is the cache, not the machine's speed
    again = store.answer(STAFF, question)
    assert again.trace is not None and again.trace["fallback"] is None
    assert again.trace["decision"]["answer_bearing"]["threshold"] == store._calibration_now().answer_bearing
    assert not any(tag in t for t in asked), "the late quote vectors did not reach the cache"


@pytest.mark.slow
def test_a_cached_query_vector_needs_no_embedding_thread(
        store: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """A question embedded before (asked again, or searched by an answer) is not handed to the
    embedding thread; the vector search still has its deadline."""
    import evidex.retrieve._deadline as deadline_module

    store.vector_timeout_ms = 30_000
    query = fresh("return boots refund")
    first = store.search(STAFF, query)
    calls: list[object] = []
    real = deadline_module._POOL.submit

    def counted(*a: object, **kw: object) -> object:
        calls.append(a)
        return real(*a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(deadline_module._POOL, "submit", counted)
    again = store.search(STAFF, query)
    assert calls == [] and again.fallback is None
    assert [h.as_dict() for h in again] == [h.as_dict() for h in first]
    store.search(STAFF, fresh("return boots refund"))
    assert len(calls) == 1  # a new question is embedded on the thread, within the deadline


# -- selection: order, ties and the per-document cap against a plain sort-and-count reference, on
#    each of _select's prefix paths (Python, numpy, sampled) ---------------------------------------
def rows_of(scores: list[float], documents: int) -> st.SearchStrategy[list[tuple[float, int, int]]]:
    """Candidates as (score, document key, passage number), at most one per passage."""
    return st.lists(st.tuples(st.sampled_from(scores), st.integers(0, documents - 1), st.integers(1, 5)),
                    max_size=150, unique_by=lambda r: (r[1], r[2]))


def columns(rows: list[tuple[float, int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores, document keys and passage numbers of ``rows``, one array each."""
    return (np.array([r[0] for r in rows], dtype=np.float64), np.array([r[1] for r in rows], dtype=np.int32),
            np.array([r[2] for r in rows], dtype=np.int32))


@pytest.fixture(params=["python", "numpy", "sampled"])
def prefix_path(request):  # type: ignore[no-untyped-def]
    """Each test below runs with short prefixes ordered in Python (the default) and in numpy,
    and with every prefix cut at a sampled score (as thousands of candidates are)."""
    small, sample_from = _select._SMALL, _select._SAMPLE_FROM
    _select._SMALL = -1 if request.param == "numpy" else small
    _select._SAMPLE_FROM = 1 if request.param == "sampled" else sample_from
    yield request.param
    _select._SMALL, _select._SAMPLE_FROM = small, sample_from


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=rows_of([0.5, 1.0, 1.5, 2.0, 3.25], 7),
    limit=st.integers(1, 40),
    cap=st.sampled_from([None, 1, 2, 3]),
)
def test_select_top_matches_reference(
    prefix_path: str, rows: list[tuple[float, int, int]], limit: int, cap: int | None
) -> None:
    scores, dkeys, numbers = columns(rows)
    names = {d: f"doc-{(7 * d) % 5}-{d}" for d in range(7)}  # id order differs from dkey order

    def doc_ids(keys):  # type: ignore[no-untyped-def]
        return {int(k): names[int(k)] for k in keys}

    ref: list[int] = []
    used: dict[int, int] = {}
    for i in sorted(range(len(rows)), key=lambda i: (-rows[i][0], names[rows[i][1]], rows[i][2])):
        if cap is None or used.get(rows[i][1], 0) < cap:
            used[rows[i][1]] = used.get(rows[i][1], 0) + 1
            ref.append(i)
    assert select_top(scores, dkeys, numbers, limit, cap, doc_ids) == ref[:limit]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=rows_of([0.5, 1.0, 2.0], 7),
    limit=st.integers(1, 40),
    cap=st.sampled_from([None, 1, 2]),
    seed=st.integers(0, 2**16),
)
def test_select_top_by_passage_id_matches_per_candidate_arrays(
    prefix_path: str, rows: list[tuple[float, int, int]], limit: int, cap: int | None, seed: int
) -> None:
    """With ``pids``, document keys and numbers are looked up by passage id: the same choice as
    with per-candidate arrays, whatever ids the candidates have."""
    scores, dkeys, numbers = columns(rows)
    pids = np.random.default_rng(seed).permutation(4 * len(rows) + 1)[:len(rows)].astype(np.int32)
    dkey_of_pid = np.full(4 * len(rows) + 1, -7, dtype=np.int32)  # never read for a candidate
    number_of_pid = np.full(len(dkey_of_pid), -7, dtype=np.int32)
    dkey_of_pid[pids], number_of_pid[pids] = dkeys, numbers

    def doc_ids(keys):  # type: ignore[no-untyped-def]
        return {int(k): f"doc-{(3 * int(k)) % 7}-{int(k)}" for k in keys}

    assert select_top(scores, dkey_of_pid, number_of_pid, limit, cap, doc_ids, pids) == \
        select_top(scores, dkeys, numbers, limit, cap, doc_ids)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=rows_of([0.5, 1.0, 2.0], 10),
    limit=st.integers(1, 40),
    cap=st.sampled_from([None, 1, 2]),
)
def test_selection_without_tie_breaks_has_the_same_size_and_lowest_score(
    prefix_path: str, rows: list[tuple[float, int, int]], limit: int, cap: int | None
) -> None:
    """What pruning asks of a selection (is it full, and its lowest score) does not depend on how
    ties are broken, so it may skip the document-id lookups; the chosen scores are the same,
    best first."""
    scores, dkeys, numbers = columns(rows)
    looked_up: list[int] = []

    def doc_ids(keys):  # type: ignore[no-untyped-def]
        keys = list(keys)
        looked_up.extend(keys)
        return {int(k): f"doc-{(3 * int(k)) % 7}-{int(k)}" for k in keys}

    exact = select_top(scores, dkeys, numbers, limit, cap, doc_ids)
    looked_up.clear()
    loose = select_top(scores, dkeys, numbers, limit, cap, doc_ids, ties=False)
    assert looked_up == []
    assert scores[loose].tolist() == scores[exact].tolist()


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(300, 3000),
    distinct=st.sampled_from([3, 40, 0]),  # 0: continuous scores
    documents=st.sampled_from([5, 60, 5000]),
    limit=st.integers(1, 100),
    cap=st.sampled_from([None, 1, 2]),
    seed=st.integers(0, 2**16),
)
def test_long_candidate_lists_match_reference(
    n: int, distinct: int, documents: int, limit: int, cap: int | None, seed: int
) -> None:
    """Thousands of candidates (a keyword query over a whole collection) are cut at a sampled
    score before sorting; ties at that cut, clustered best scores and a cap that empties the
    prefix still give exactly the reference choice."""
    rng = np.random.default_rng(seed)
    scores = (rng.integers(1, distinct + 1, n) / 4 if distinct else rng.random(n)).astype(np.float64)
    if seed % 3 == 0:  # the best scores in one run of candidates, which a strided sample misses
        scores[: n // 20] += 10.0
    dkeys = rng.integers(0, documents, n).astype(np.int32)
    numbers = np.arange(n, dtype=np.int32)  # distinct, so any two candidates are ordered
    names = {d: f"doc-{(7 * d) % 11}-{d}" for d in range(documents)}

    def doc_ids(keys):  # type: ignore[no-untyped-def]
        return {int(k): names[int(k)] for k in keys}

    ref: list[int] = []
    used: dict[int, int] = {}
    for i in sorted(range(n), key=lambda i: (-scores[i], names[int(dkeys[i])], int(numbers[i]))):
        if cap is None or used.get(int(dkeys[i]), 0) < cap:
            used[int(dkeys[i])] = used.get(int(dkeys[i]), 0) + 1
            ref.append(i)
            if len(ref) == limit:
                break
    assert select_top(scores, dkeys, numbers, limit, cap, doc_ids) == ref
