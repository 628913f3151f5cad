"""Pruning and the kept derived arrays never change a result: searches through a real store
equal the exhaustive disjunction, and BM25's weighted postings (masked, kept across writes,
weighed through pair tables, probed through frequency arrays) equal a plain reference.

The pure functions these rest on are tested one by one in test_ranking_core.py."""

from __future__ import annotations

import math
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evidex.retrieve._bm25 as bm25_module
from actors import PUBLIC_INTERNAL
from evidex import Actor, Document, KnowledgeBase
from evidex.model import Filters
from evidex.query import words
from evidex.retrieve import BM25Params, Candidates, access, hits_from, keyword_candidates
from evidex.retrieve._cache import WeightsCache
from evidex.retrieve._postings import frequencies, visible
from evidex.retrieve._tuning import TUNING

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
