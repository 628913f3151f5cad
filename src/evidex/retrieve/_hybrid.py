"""One search in any mode: the legs, their fusion, the per-document cap, cited hits, evidence.

* ``keyword``: BM25 over the passages the actor may read, ranked for exactly ``limit`` hits
  under the cap, which lets BM25 prune.
* ``vector``: the most similar readable passages.
* ``hybrid``: both legs, each a window of its best candidates (``Fusion.window``, at least
  ``limit``), fused (``_fusion``). A long document can fill a window with passages the cap then
  drops, so when the capped list is short and a leg filled its window, the windows grow (x4)
  until the list is full or the legs are exhausted. Vector mode grows the same way.

Hybrid search falls back to the keyword ranking (``_deadline``) when it has no query vector (a
keyword-only store, an embedding past its deadline) or the vector search ends past the deadline;
``SearchResults.fallback`` then says why and the evidence level uses keyword signals only.

Every mode ends the same way: ``hits_from`` selects and cites, ``with_evidence`` adds the
evidence level. The caller holds one read view for the whole search, so every step sees one
committed state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..model import Actor, Filters, Hit, SearchResults
from ..store import ReadView
from ._bm25 import BM25
from ._deadline import Deadline, Fallback
from ._evidence import EvidenceThresholds, with_evidence
from ._fusion import Fusion, Leg, fuse
from ._search import Candidates, hits_from, keyword_candidates
from ._select import select_top
from ._vector import vector_candidates

__all__ = ["MODES", "search"]

MODES = ("hybrid", "keyword", "vector")
#: How much the windows grow each time the per-document cap left the list short.
_GROWTH = 4
_NO_FILTERS = Filters()
_FUSION = Fusion()


def search(
    view: ReadView,
    bm25: BM25,
    actor: Actor,
    terms: Sequence[str],
    *,
    mode: str,
    limit: int,
    thresholds: EvidenceThresholds,
    query_vector: np.ndarray | Fallback | None = None,
    deadline: Deadline | None = None,
    match: str = "any",
    filters: Filters = _NO_FILTERS,
    max_per_document: int | None = 2,
    fusion: Fusion = _FUSION,
    explain: bool = False,
) -> SearchResults:
    """The best ``limit`` passages ``actor`` may read for the analysed query ``terms`` (and
    ``query_vector`` in vector and hybrid modes), best first, with the evidence level.

    In hybrid mode ``query_vector`` may be the ``Fallback`` that says why there is none, and
    ``deadline`` is when the vector search must be done; either gives the keyword ranking.
    Arguments are taken as valid (``KnowledgeBase.search`` checks what callers pass)."""
    keyword = (view, bm25, actor, terms, filters, match, limit, max_per_document, thresholds, explain)
    if mode == "keyword":
        return _keyword(*keyword)
    if mode == "hybrid" and isinstance(query_vector, Fallback):
        return _keyword(*keyword, fallback=query_vector)
    if query_vector is None or isinstance(query_vector, Fallback):
        raise ValueError(f"mode {mode!r} needs the query vector")
    scale = 1
    term_pids: Mapping[str, np.ndarray] | None = None
    while True:
        window = max(fusion.window, limit) * scale
        legs = []
        if mode == "hybrid" and terms:
            kc = keyword_candidates(view, bm25, actor, terms, filters, match, window, None)
            legs.append(_ranked(view, kc, "keyword", window))
            term_pids = kc.term_pids
        vc = vector_candidates(view, actor, filters, query_vector, window)
        if mode == "hybrid" and deadline is not None and deadline.left() < 0:
            return _keyword(*keyword, fallback=deadline.missed("the vector search"))
        best_similarity = float(vc.scores.max()) if len(vc.scores) else None
        legs.append(_ranked(view, vc, "vector", window))
        hits = _capped_hits(view, legs, mode, fusion, limit, max_per_document, explain)
        filled = any(len(leg.pids) >= window for leg in legs)
        if len(hits) >= limit or not filled or max_per_document is None:
            return with_evidence(view, hits, terms, best_similarity, term_pids, thresholds)
        scale *= _GROWTH


def _keyword(view: ReadView, bm25: BM25, actor: Actor, terms: Sequence[str], filters: Filters,
             match: str, limit: int, max_per_document: int | None,
             thresholds: EvidenceThresholds, explain: bool,
             fallback: Fallback | None = None) -> SearchResults:
    """The keyword ranking: BM25 ranked for exactly ``limit`` hits under the cap."""
    if not terms:
        res = with_evidence(view, [], terms, None, None, thresholds)
    else:
        cand = keyword_candidates(view, bm25, actor, terms, filters, match, limit, max_per_document)
        why = _explanation(_ranked(view, cand, "keyword", len(cand.pids))) if explain else None
        hits = hits_from(view, cand, limit, max_per_document, why)
        res = with_evidence(view, hits, terms, None, cand.term_pids, thresholds)
    res.fallback = fallback.as_dict() if fallback is not None else None
    return res


def _capped_hits(view: ReadView, legs: list[Leg], mode: str, fusion: Fusion, limit: int,
                 max_per_document: int | None, explain: bool) -> list[Hit]:
    if mode == "hybrid":
        pids, scores, why = fuse(legs, fusion)
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
