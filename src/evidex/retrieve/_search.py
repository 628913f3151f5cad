"""One search in any mode: the legs, their fusion, the per-document cap, cited hits.

* ``keyword``: BM25 over the passages the actor may read, ranked for exactly ``depth`` hits
  under the cap, which lets BM25 prune.
* ``vector``: the most similar readable passages.
* ``hybrid``: both legs, each a window of its best candidates (``Fusion.window``, at least
  ``depth``), fused (``_fusion``); adaptive fusion and weighted RRF first weigh the legs for
  this query (``_signals`` reads the evidence, ``_adaptive`` turns it into weights). A long document can
  fill a window with passages the cap then drops, so when the capped list is short and a leg
  filled its window, the windows grow (x4) until the list is full or the legs are exhausted.
  Vector mode grows the same way.

Hybrid search falls back to the keyword ranking (``_deadline``) when it has no query vector (a
keyword-only store, an embedding past its deadline) or the vector search ends past the deadline;
``Ranking.fallback`` then says why.

This is ranking only: whether the passages answer the question (support, meaning, the
second-stage ranker, the evidence level) is ``evidex.decide``'s, computed from the ``Ranking``
only when the caller asks. The caller holds one read view for the whole search, so every step
sees one committed state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model import Hit
from ..query import identify
from ..store import ReadView
from ._adaptive import LegWeights, leg_weights
from ._bm25 import BM25
from ._deadline import Fallback
from ._fusion import Fusion, Leg, fuse
from ._keyword_leg import Candidates, hits_from, keyword_candidates
from ._query import Query
from ._select import select_top
from ._signals import TOP, query_signals
from ._vector import LanguageShift, language_shift, vector_candidates

__all__ = ["MODES", "Ranking", "search"]

MODES = ("hybrid", "keyword", "vector")
#: How much the windows grow each time the per-document cap left the list short.
_GROWTH = 4


@dataclass(frozen=True, slots=True)
class Ranking:
    """One search's ranked hits and what the legs found, for the decision to read."""

    #: At most ``Query.depth`` hits, best first.
    hits: list[Hit]
    #: The keyword leg's candidates (scores, each term's readable passages), when it ran.
    keyword: Candidates | None = None
    #: The vector leg's candidates (cosines), when it ran.
    vector: Candidates | None = None
    #: The best cosine of the vector leg (None without one).
    best_similarity: float | None = None
    #: Adaptive fusion's leg weights for this query; None otherwise.
    weights: LegWeights | None = None
    #: Set when a hybrid search returned the keyword ranking instead.
    fallback: Fallback | None = None
    #: How the vector leg re-based each readable language's cosines (``_vector``); the
    #: decision reads cosines on the same footing.
    shift: LanguageShift = field(default_factory=LanguageShift)

    @property
    def term_pids(self) -> Mapping[str, np.ndarray] | None:
        """Each query term's readable passage ids, when the keyword leg read postings."""
        return self.keyword.term_pids if self.keyword is not None else None


def search(view: ReadView, bm25: BM25, query: Query) -> Ranking:
    """The best ``query.depth`` passages ``query.actor`` may read for ``query``, best first.

    In hybrid mode ``query.vector`` may be the ``Fallback`` that says why there is none, and
    ``query.deadline`` is when the vector search must be done; either gives the keyword ranking."""
    vector = query.vector
    if query.mode == "keyword":
        return _keyword(view, bm25, query)
    if query.mode == "hybrid" and isinstance(vector, Fallback):
        return _keyword(view, bm25, query, vector)
    if not isinstance(vector, np.ndarray):
        raise ValueError(f"mode {query.mode!r} needs the query vector")
    kq, depth, fusion, mode = query.keyword, query.depth, query.fusion, query.mode
    shift = language_shift(view, query.access, vector)
    scale = 1
    while True:
        window = max(fusion.window, depth) * scale
        legs = []
        kc = None
        if mode == "hybrid" and kq.terms:
            kc = keyword_candidates(view, bm25, query.access, kq, query.match, window, None)
            legs.append(_ranked(view, kc, "keyword", window))
        vc = vector_candidates(view, query.access, vector, window, shift)
        if mode == "hybrid" and query.deadline is not None and query.deadline.left() < 0:
            return _keyword(view, bm25, query, query.deadline.missed("the vector search"))
        best_similarity = float(vc.scores.max()) if len(vc.scores) else None
        legs.append(_ranked(view, vc, "vector", window))
        weights = None
        if mode == "hybrid" and fusion.weighted:
            weights = _weigh(view, query, legs, kc.term_pids if kc is not None else None)
        hits = _capped_hits(view, legs, mode, fusion, depth, query.max_per_document,
                            query.explain, weights)
        filled = any(len(leg.pids) >= window for leg in legs)
        if len(hits) >= depth or not filled or query.max_per_document is None:
            return Ranking(hits, kc, vc, best_similarity, weights, shift=shift)
        scale *= _GROWTH


def _weigh(view: ReadView, query: Query, legs: list[Leg],
           term_pids: Mapping[str, np.ndarray] | None) -> LegWeights:
    """This query's leg weights (adaptive fusion). The query's language is the one the keyword
    query was analysed for when it was identified there (same candidates: the readable
    languages), so it is identified once."""
    acc, kq = query.access, query.keyword
    # Only the languages of what the actor may read are candidates: nothing about other
    # passages reaches the ranking, not even which languages they are in.
    language_of_sig = acc.language_of_sig
    vector = legs[-1]
    top = vector.pids[:TOP]
    language_of_pid = {int(p): language_of_sig.get(int(g))
                       for p, g in zip(top, view.sig.take(top), strict=True)}
    if kq.identified:
        query_language = kq.language
    else:
        query_language = identify(query.text, language_of_sig.values()) if query.text else None
    keyword = legs[0] if len(legs) > 1 else None
    # Each analysis of the query (one per language under auto) is read on its own, and the one
    # that explains the keyword leg best counts: the union of a German and an English analysis
    # is twice the query, and no passage could cover more than its own language's half.
    analyses = [list(ts) for _, ts in kq.parts if ts] or [kq.terms]
    return leg_weights(max(
        (query_signals(keyword, vector, ts, term_pids, acc.allowed.passages, language_of_pid,
                       query_language) for ts in analyses),
        key=lambda sig: (sig.coverage, sig.known)))


def _keyword(view: ReadView, bm25: BM25, query: Query, fallback: Fallback | None = None) -> Ranking:
    """The keyword ranking: BM25 ranked for exactly ``depth`` hits under the cap."""
    kq = query.keyword
    if not kq.terms:
        return Ranking([], fallback=fallback)
    cand = keyword_candidates(view, bm25, query.access, kq, query.match, query.depth,
                              query.max_per_document)
    why = _explanation(_ranked(view, cand, "keyword", len(cand.pids))) if query.explain else None
    hits = hits_from(view, cand, query.depth, query.max_per_document, why)
    return Ranking(hits, cand, fallback=fallback)


def _capped_hits(view: ReadView, legs: list[Leg], mode: str, fusion: Fusion, limit: int,
                 max_per_document: int | None, explain: bool,
                 weights: LegWeights | None = None) -> list[Hit]:
    if mode == "hybrid":
        pids, scores, why = fuse(legs, fusion, weights, explain)
        if weights is not None and explain:
            for entry in why.values():
                entry["weights"] = weights.as_dict()
    else:
        pids, scores = legs[0].pids, legs[0].scores
        why = _explanation(legs[0]) if explain else {}
    return hits_from(view, Candidates(pids, scores), limit, max_per_document,
                     why if explain else None)


def _ranked(view: ReadView, cand: Candidates, name: str, window: int) -> Leg:
    """The leg's best ``window`` candidates in rank order (ties broken like every ranking)."""
    order = select_top(cand.scores, view.dkey, view.number, window, None, view.doc_ids, cand.pids)
    return Leg(name, cand.pids[order], cand.scores[order])


def _explanation(leg: Leg) -> dict[int, dict[str, Any]]:
    """Per passage id, its rank and score in ``leg`` (what ``explain`` shows for one leg)."""
    return {int(p): {leg.name: {"rank": r, "score": float(s)}}
            for r, (p, s) in enumerate(zip(leg.pids, leg.scores, strict=True), start=1)}
