"""MaxScore pruning must never change a result: compare with the exhaustive disjunction."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evidex.retrieve._bm25 as bm25_module
from actors import PUBLIC_INTERNAL
from evidex import Actor, Document, KnowledgeBase
from evidex.model import Filters
from evidex.query import words
from evidex.retrieve import Candidates, hits_from, keyword_candidates

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


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CASES)
def test_pruned_search_equals_exhaustive(docs: list[list[list[str]]], query: list[str], limit: int,
                                          cap: int | None, dense: tuple[int, int]) -> None:
    actor = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
    # Pruning normally starts only above tens of thousands of postings; force it on tiny data.
    saved = (bm25_module._PRUNE_MIN_POSTINGS, bm25_module._DENSE_PROBE_FACTOR,
             bm25_module._DENSE_MIN_CANDIDATES, bm25_module._DENSE_AFTER_PROBES)
    bm25_module._PRUNE_MIN_POSTINGS = 0
    bm25_module._DENSE_PROBE_FACTOR, bm25_module._DENSE_AFTER_PROBES = dense
    bm25_module._DENSE_MIN_CANDIDATES = 0
    try:
        _check(actor, docs, query, limit, cap)
    finally:
        (bm25_module._PRUNE_MIN_POSTINGS, bm25_module._DENSE_PROBE_FACTOR,
         bm25_module._DENSE_MIN_CANDIDATES, bm25_module._DENSE_AFTER_PROBES) = saved


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CASES)
def test_threshold_algorithm_equals_exhaustive(docs: list[list[list[str]]], query: list[str], limit: int,
                                               cap: int | None, dense: tuple[int, int]) -> None:
    """The threshold algorithm alone (MaxScore disabled) at tiny depths, so it both stops early
    and runs out of depth on generated data."""
    actor = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
    saved = (bm25_module._PRUNE_MIN_POSTINGS, bm25_module._PRUNE_MAX_CANDIDATES, bm25_module._TA_DEPTHS,
             bm25_module._DENSE_PROBE_FACTOR, bm25_module._DENSE_MIN_CANDIDATES,
             bm25_module._DENSE_AFTER_PROBES, bm25_module._TA_HEAD_SHARE)
    bm25_module._PRUNE_MIN_POSTINGS, bm25_module._PRUNE_MAX_CANDIDATES = 0, 0
    bm25_module._TA_DEPTHS = (1, 2, 4)
    bm25_module._TA_HEAD_SHARE = 0  # never hand tiny collections over to exhaustive scoring
    bm25_module._DENSE_PROBE_FACTOR, bm25_module._DENSE_AFTER_PROBES = dense
    bm25_module._DENSE_MIN_CANDIDATES = 0
    try:
        _check(actor, docs, query, limit, cap)
    finally:
        (bm25_module._PRUNE_MIN_POSTINGS, bm25_module._PRUNE_MAX_CANDIDATES, bm25_module._TA_DEPTHS,
         bm25_module._DENSE_PROBE_FACTOR, bm25_module._DENSE_MIN_CANDIDATES,
         bm25_module._DENSE_AFTER_PROBES, bm25_module._TA_HEAD_SHARE) = saved


def test_threshold_algorithm_hands_over_when_its_heads_hold_most_postings(monkeypatch) -> None:  # type: ignore[no-untyped-def]
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
    monkeypatch.setattr(bm25_module, "_TA_DEPTHS", (6,))  # heads of 12 postings of 20
    assert bm25_module._threshold(present, orders, top) is None and calls == []
    monkeypatch.setattr(bm25_module, "_TA_DEPTHS", (3,))  # heads of 6: worth probing
    bm25_module._threshold(present, orders, top)
    assert calls == [6]


def test_threshold_algorithm_stops_early_on_common_words(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Guards the test above against vacuity: on a query of two common words the threshold
    algorithm really returns a (partial) candidate set, and the results still equal exhaustive."""
    outcomes: list[bool] = []
    real = bm25_module._threshold

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(*args, **kwargs)
        outcomes.append(out is not None)
        return out

    monkeypatch.setattr(bm25_module, "_threshold", spy)
    monkeypatch.setattr(bm25_module, "_PRUNE_MIN_POSTINGS", 0)
    monkeypatch.setattr(bm25_module, "_PRUNE_MAX_CANDIDATES", 0)
    monkeypatch.setattr(bm25_module, "_TA_DEPTHS", (2, 8))
    docs = [[["the"] * (1 + (i * 7) % 5) + ["a"] * (1 + (i * 3) % 4) + ["kiwi"] * (i % 2) + ["fig"] * 9]
            for i in range(20)]
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
    saved = bm25_module._PRUNE_MIN_POSTINGS, bm25_module._TA_DEPTHS
    bm25_module._PRUNE_MIN_POSTINGS, bm25_module._TA_DEPTHS = 0, depths
    try:
        _check(Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL), docs, [word, word], limit, cap,
               reverse)
    finally:
        bm25_module._PRUNE_MIN_POSTINGS, bm25_module._TA_DEPTHS = saved


def test_one_word_queries_stop_at_the_largest_weights(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Guards the test above against vacuity: the head of a common word's weights, with its
    ties, really is the candidate set, and the result equals exhaustive."""
    sizes: list[int] = []
    real = bm25_module._single

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(*args, **kwargs)
        sizes.append(-1 if out is None else len(out[0]))
        return out

    monkeypatch.setattr(bm25_module, "_single", spy)
    monkeypatch.setattr(bm25_module, "_PRUNE_MIN_POSTINGS", 0)
    monkeypatch.setattr(bm25_module, "_TA_DEPTHS", (2, 8))
    # 30 documents of one passage; "the" occurs 1-5 times in passages of equal length.
    docs = [[["the"] * (1 + i % 5) + ["fig"] * (8 - i % 5)] for i in range(30)]
    _check(Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL), docs, ["the"], 3, None, reverse=True)
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
        full = keyword_candidates(view, kb._bm25, actor, terms, Filters(), "any")  # no window
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
    bm = bm25_module.BM25()
    saved = bm25_module._DENSE_FACTOR
    try:
        bm25_module._DENSE_FACTOR = 10**9
        dense = bm._accumulate(present, size)
        bm25_module._DENSE_FACTOR = 0
        sparse = bm._accumulate(present, size)
    finally:
        bm25_module._DENSE_FACTOR = saved
    d = dict(zip(dense[0].tolist(), dense[1].tolist(), strict=True))
    s = dict(zip(sparse[0].tolist(), sparse[1].tolist(), strict=True))
    assert d == s
    assert set(d) == {int(i) for p, _ in present for i in p}


def test_weights_cache_grows_with_the_store_unless_fixed() -> None:
    bm = bm25_module.BM25()
    bm._fit_cache(1_000)
    assert bm._max_cache_bytes == bm25_module.CACHE_BYTES_MIN
    bm._fit_cache(1_000_000)
    assert bm._max_cache_bytes == 1_000_000 * bm25_module.CACHE_BYTES_PER_ID
    bm._fit_cache(10**9)
    assert bm._max_cache_bytes == bm25_module.CACHE_BYTES_MAX
    fixed = bm25_module.BM25(cache_bytes=1 << 20)
    fixed._fit_cache(10**9)
    assert fixed._max_cache_bytes == 1 << 20


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
    saved = bm25_module._VISIBLE_FACTOR
    bm25_module._VISIBLE_FACTOR = visible_factor
    try:
        got = bm25_module.BM25().weighted("t", lambda _t: parts, sig_of_pid, length, allowed, 1)
    finally:
        bm25_module._VISIBLE_FACTOR = saved
    # Reference: every posting once per (run, id), masked, stably sorted, weighed.
    pids = np.concatenate([p for p, _ in parts]) if parts else np.zeros(0, np.int32)
    tfs = np.concatenate([t for _, t in parts]) if parts else np.zeros(0, np.uint16)
    keep = allowed.mask(sig_of_pid, pids)
    pids, tf = pids[keep], tfs[keep].astype(np.float64)
    order = np.argsort(pids, kind="stable")
    pids, tf = pids[order], tf[order]
    assert got[0].tolist() == pids.tolist()
    if len(pids):
        k1, b = 1.2, 0.75
        idf = np.log(1.0 + (allowed.passages - len(pids) + 0.5) / (len(pids) + 0.5))
        norm = k1 * (1.0 - b) + (k1 * b / allowed.avgdl) * length[pids]
        assert got[1].tolist() == ((idf * (k1 + 1.0)) * tf / (tf + norm)).tolist()


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(1, 40), min_size=1, max_size=3000), depth=st.integers(1, 400),
       scale=st.sampled_from([1.0, 0.37]))
def test_top_positions_are_the_largest_weights(values: list[int], depth: int, scale: float) -> None:
    """The sampled selection returns ``depth`` positions (all, if fewer), largest weight first,
    whose weights are exactly the ``depth`` largest (few distinct values: ties everywhere)."""
    weights = np.array(values, dtype=np.float64) * scale
    depth = min(depth, len(weights))
    got = bm25_module._top_positions(weights, depth)
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
    got = bm25_module._top_positions(weights, 100)
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
        got = bm25_module._top_positions(weights, 100)
        assert (np.sort(weights[got])[::-1][:100] == np.sort(weights)[::-1][:100]).all()


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
    pids = np.concatenate([p for p, _ in parts])
    tfs = np.concatenate([t for _, t in parts])
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
    saved = (bm25_module._PART_FACTOR, bm25_module._GRID_FACTOR, bm25_module._VISIBLE_FACTOR)
    bm25_module._PART_FACTOR, bm25_module._VISIBLE_FACTOR = 10**9, 10**9  # every part is large
    bm25_module._GRID_FACTOR = 0 if grid else 10**9  # always / never a grid
    try:
        bm = bm25_module.BM25()
        first = Allowed(table, 150, 150 * 31, table.tobytes() + b"1")
        got = bm.weighted("t", lambda _t: parts, sig_of_pid, length, first, None, log)
        assert (got[0].tolist(), got[1].tolist()) == _reference(parts, sig_of_pid, length, first)
        sig_of_pid[sorted(dead)] = -1
        log.die(sorted(dead))
        second = Allowed(table, 149, 149 * 30, table.tobytes() + b"2")
        got = bm.weighted("t", lambda _t: parts, sig_of_pid, length, second, None, log)
        assert (got[0].tolist(), got[1].tolist()) == _reference(parts, sig_of_pid, length, second)
    finally:
        bm25_module._PART_FACTOR, bm25_module._GRID_FACTOR, bm25_module._VISIBLE_FACTOR = saved


def test_dense_frequencies_are_kept_and_only_new_parts_written() -> None:
    """A common word's frequency array serves every later query: a large part it has folded
    in is recognised by identity and not written again, a new array (a merged segment, a new
    segment) is, and the array grows with the id space."""
    bm = bm25_module.BM25()
    size = 1000
    big = (np.arange(0, size, 2, dtype=np.int32), np.full(size // 2, 3, dtype=np.uint16))
    parts = [big]
    assert bm._dense_tfs("t", lambda _t: parts, len(big[0]), size) is None  # the first probe searches
    tfs = bm._dense_tfs("t", lambda _t: parts, len(big[0]), size)
    assert tfs is not None and (tfs[:size:2] == 3).all() and not tfs[1:size:2].any()
    tfs[0] = 9  # a marker: writing the big part again would reset it
    new = (np.array([1001, 1003], dtype=np.int32), np.array([5, 6], dtype=np.uint16))
    parts = [big, new]
    again = bm._dense_tfs("t", lambda _t: parts, len(big[0]) + 2, size + 4)
    assert again is not None and again[0] == 9  # the big part was recognised
    assert again[1001] == 5 and again[1003] == 6 and again[1002] == 0
    merged = (big[0].copy(), big[1].copy())  # the same postings in a new segment
    parts = [merged, new]
    last = bm._dense_tfs("t", lambda _t: parts, len(big[0]) + 2, size + 4)
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
    saved = (bm25_module._PRUNE_MIN_POSTINGS, bm25_module._DENSE_PROBE_FACTOR,
             bm25_module._DENSE_MIN_CANDIDATES, bm25_module._DENSE_AFTER_PROBES)
    bm25_module._PRUNE_MIN_POSTINGS, bm25_module._DENSE_PROBE_FACTOR = 0, 10**9
    bm25_module._DENSE_MIN_CANDIDATES, bm25_module._DENSE_AFTER_PROBES = 0, after
    try:
        with tempfile.TemporaryDirectory() as tmp:
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
    finally:
        (bm25_module._PRUNE_MIN_POSTINGS, bm25_module._DENSE_PROBE_FACTOR,
         bm25_module._DENSE_MIN_CANDIDATES, bm25_module._DENSE_AFTER_PROBES) = saved


def test_weights_reuse_the_previous_collections_memory_only_when_nobody_holds_it() -> None:
    """After a readable write a common word's ids and weights are computed again into the
    memory of the previous visible collection's (no fresh pages), but never while a query
    still holds those arrays: their values must stay those of their own collection."""
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

    def address(a: np.ndarray) -> int:
        return int(a.__array_interface__["data"][0])

    held = bm.weighted("t", lambda _t: parts, sig_of_pid, length, collection(1), None, log)
    want = _reference(parts, sig_of_pid, length, collection(1))
    second = bm.weighted("t", lambda _t: parts, sig_of_pid, length, collection(2), None, log)
    assert not np.shares_memory(second[1], held[1]) and not np.shares_memory(second[0], held[0])
    assert (held[0].tolist(), held[1].tolist()) == want  # untouched
    assert (second[0].tolist(), second[1].tolist()) == _reference(parts, sig_of_pid, length, collection(2))
    where = address(second[0]), address(second[1])
    del second  # nobody reads collection 2 any more: its memory is reused for collection 3
    third = bm.weighted("t", lambda _t: parts, sig_of_pid, length, collection(3), None, log)
    assert (address(third[0]), address(third[1])) == where
    assert (third[0].tolist(), third[1].tolist()) == _reference(parts, sig_of_pid, length, collection(3))


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
    bm = bm25_module.BM25(cache_bytes=200_000)  # room for about five terms' weights
    vis = bm._visible(allowed, sig_of_pid, None)
    weights = np.linspace(1.0, 2.0, size)
    order = bm._impact_order((None, allowed.key, "w"), weights, 16)
    for i in range(30):
        term = (np.arange(0, size, 2, dtype=np.int32), np.full(size // 2, 1 + i % 3, dtype=np.uint16))
        bm.weighted(f"t{i}", lambda _t, p=term: [p], sig_of_pid, length, allowed, None)
        assert bm._visible(allowed, sig_of_pid, None) is vis
        assert bm._impact_order((None, allowed.key, "w"), weights, 16) is order
