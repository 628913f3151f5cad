"""The ranking core's parts on their own: the BM25 formula, pruning over arrays, the one cache.

The end-to-end checks (pruned searches equal exhaustive ones through a real store, BM25's
weighted postings across writes) are in test_pruning.py; here each pure function is held to its
contract directly, on generated arrays, and so are the cache's byte budget and the tuning.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import FrozenInstanceError, fields, replace

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evidex.retrieve import BM25, BM25Params, idf, select_top
from evidex.retrieve._access import Allowed
from evidex.retrieve._accumulate import Scratch, accumulate
from evidex.retrieve._bm25 import length_norm, pair_weights, term_weights
from evidex.retrieve._cache import ENTRY_OVERHEAD, WeightsCache
from evidex.retrieve._postings import drop, pairs_of
from evidex.retrieve._prune import maxscore, probe, single_term, threshold, top_positions
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
