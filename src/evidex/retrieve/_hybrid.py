"""One search in any mode: the legs, their fusion, the per-document cap, cited hits, evidence.

* ``keyword``: BM25 over the passages the actor may read, ranked for exactly ``limit`` hits
  under the cap, which lets BM25 prune.
* ``vector``: the most similar readable passages.
* ``hybrid``: both legs, each a window of its best candidates (``Fusion.window``, at least
  ``limit``), fused (``_fusion``); adaptive fusion first weighs the legs for this query
  (``_signals`` reads the evidence, ``_adaptive`` turns it into weights). A long document can
  fill a window with passages the cap then drops, so when the capped list is short and a leg
  filled its window, the windows grow (x4) until the list is full or the legs are exhausted.
  Vector mode grows the same way.

Hybrid search falls back to the keyword ranking (``_deadline``) when it has no query vector (a
keyword-only store, an embedding past its deadline) or the vector search ends past the deadline;
``SearchResults.fallback`` then says why and the evidence is measured without similarity
(keyword signals only).

Every mode ends the same way: ``hits_from`` selects and cites, ``_support`` measures how well
the best hits (and their sentences) cover the question, the second-stage ranker (``_rerank``,
when asked) re-orders the first ``RERANK_DEPTH`` by that evidence, the passages decided on get
their sentences compared with the question by meaning (``_meaning``, when the caller can embed
sentences), and ``with_evidence`` adds the evidence level decided per passage. The caller holds
one read view for the whole search, so every step sees one committed state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..model import Actor, Filters, Hit, SearchResults
from ..query import get_analyzer, identify
from ..store import ReadView
from ._access import allowed_signatures
from ._adaptive import LegWeights, leg_weights
from ._bm25 import BM25
from ._deadline import Deadline, Fallback, within
from ._evidence import DECIDE_DEPTH, EvidenceThresholds, with_evidence
from ._fusion import Fusion, Leg, fuse
from ._keywords import KeywordQuery
from ._meaning import SentenceVectors, with_meaning
from ._rerank import RERANK_DEPTH, rank_score, rerank_order
from ._search import Candidates, hits_from, keyword_candidates
from ._select import select_top
from ._signals import TOP, query_signals
from ._support import PassageSupport, passage_support, term_weights, wants_number
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
    terms: Sequence[str] | KeywordQuery,
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
    analyze: Callable[[str], list[str]] | None = None,
    question_language: str | None = None,
    rerank: bool = False,
    query: str = "",
    sentence_vectors: SentenceVectors | None = None,
) -> SearchResults:
    """The best ``limit`` passages ``actor`` may read for the analysed query ``terms`` (and
    ``query_vector`` in vector and hybrid modes), best first, with the evidence level.
    ``terms`` is one analysis matched against every passage, or a ``KeywordQuery`` (one per
    language, see ``_keywords``), whose identified language adaptive fusion then reuses.

    ``analyze`` is the store's analyzer (text -> terms; default ``exact``), used to measure how
    well passages and sentences cover the question; ``question_language`` ("en", "de" or None)
    tells which passages are in another language; ``rerank`` re-orders the first
    ``RERANK_DEPTH`` fused candidates with the second-stage ranker. In hybrid mode
    ``query_vector`` may be the ``Fallback`` that says why there is none, and ``deadline`` is
    when the vector search must be done; either gives the keyword ranking. ``query`` is the
    query's text, from which adaptive fusion identifies its language. ``sentence_vectors``
    embeds sentences on the passage side of the store's model (see ``_meaning``): with a query
    vector, the decision compares the question with the candidate sentences of the passages it
    reads.

    Arguments are taken as valid (``KnowledgeBase.search`` checks what callers pass)."""
    depth = max(limit, RERANK_DEPTH) if rerank else limit
    kq = terms if isinstance(terms, KeywordQuery) else KeywordQuery.of(terms)
    finish = _Finish(view, actor, filters, kq.terms, limit, thresholds, analyze or _EXACT.terms,
                     question_language, rerank,
                     query_vector if isinstance(query_vector, np.ndarray) else None,
                     wants_number(query), sentence_vectors)
    keyword = (view, bm25, actor, kq, filters, match, depth, max_per_document, explain, finish)
    if mode == "keyword":
        return _keyword(*keyword)
    if mode == "hybrid" and isinstance(query_vector, Fallback):
        return _keyword(*keyword, fallback=query_vector)
    if query_vector is None or isinstance(query_vector, Fallback):
        raise ValueError(f"mode {mode!r} needs the query vector")
    scale = 1
    term_pids: Mapping[str, np.ndarray] | None = None
    while True:
        window = max(fusion.window, depth) * scale
        legs = []
        kc = None
        if mode == "hybrid" and kq.terms:
            kc = keyword_candidates(view, bm25, actor, kq, filters, match, window, None)
            legs.append(_ranked(view, kc, "keyword", window))
            term_pids = kc.term_pids
        vc = vector_candidates(view, actor, filters, query_vector, window)
        if mode == "hybrid" and deadline is not None and deadline.left() < 0:
            return _keyword(*keyword, fallback=deadline.missed("the vector search"))
        best_similarity = float(vc.scores.max()) if len(vc.scores) else None
        legs.append(_ranked(view, vc, "vector", window))
        weights = None
        if mode == "hybrid" and fusion.weighted:
            weights = _weigh(view, actor, filters, legs, kq, term_pids, query)
        hits = _capped_hits(view, legs, mode, fusion, depth, max_per_document, explain, weights)
        filled = any(len(leg.pids) >= window for leg in legs)
        if len(hits) >= depth or not filled or max_per_document is None:
            res = finish(hits, kc, vc, best_similarity, term_pids,
                         deadline if mode == "hybrid" else None)
            if isinstance(res, Fallback):
                return _keyword(*keyword, fallback=res)
            res.weights = weights
            return res
        scale *= _GROWTH


def _weigh(view: ReadView, actor: Actor, filters: Filters, legs: list[Leg], kq: KeywordQuery,
           term_pids: Mapping[str, np.ndarray] | None, query: str) -> LegWeights:
    """This query's leg weights (adaptive fusion). The query's language is the one the keyword
    query was analysed for when it was identified there (same candidates: the readable
    languages), so it is identified once."""
    allowed = allowed_signatures(view, actor, filters)
    # Only the languages of what the actor may read are candidates: nothing about other
    # passages reaches the ranking, not even which languages they are in.
    language_of_sig = {s.id: s.language for s in view.signatures(actor.tenant)
                       if s.id + 1 < len(allowed.table) and allowed.table[s.id + 1]}
    vector = legs[-1]
    top = vector.pids[:TOP]
    language_of_pid = {int(p): language_of_sig.get(int(g))
                       for p, g in zip(top, view.sig.take(top), strict=True)}
    if kq.identified:
        query_language = kq.language
    else:
        query_language = identify(query, language_of_sig.values()) if query else None
    keyword = legs[0] if len(legs) > 1 else None
    # Each analysis of the query (one per language under auto) is read on its own, and the one
    # that explains the keyword leg best counts: the union of a German and an English analysis
    # is twice the query, and no passage could cover more than its own language's half.
    analyses = [list(ts) for _, ts in kq.parts if ts] or [kq.terms]
    return leg_weights(max(
        (query_signals(keyword, vector, ts, term_pids, allowed.passages, language_of_pid,
                       query_language) for ts in analyses),
        key=lambda sig: (sig.coverage, sig.known)))


_EXACT = get_analyzer("exact")


class _Late(Exception):
    """The sentence vectors missed the vector leg's deadline."""

    def __init__(self, fallback: Fallback) -> None:
        super().__init__(fallback.detail)
        self.fallback = fallback


def _bounded(vectors: SentenceVectors, deadline: Deadline) -> SentenceVectors:
    """``vectors`` raising ``_Late`` when its result is not ready by ``deadline``."""
    def call(texts: list[str]) -> np.ndarray:
        got = within(deadline, "the sentence embedding", lambda: vectors(texts))
        if isinstance(got, Fallback):
            raise _Late(got)
        return got
    return call


class _Finish:
    """The common end of every mode: evidence per passage, the optional re-ranking, the cut to
    ``limit`` and the evidence level."""

    def __init__(self, view: ReadView, actor: Actor, filters: Filters, terms: Sequence[str],
                 limit: int, thresholds: EvidenceThresholds, analyze: Callable[[str], list[str]],
                 question_language: str | None, rerank: bool,
                 query_vector: np.ndarray | None, asks_number: bool,
                 sentence_vectors: SentenceVectors | None) -> None:
        self.view, self.actor, self.filters, self.terms = view, actor, filters, terms
        self.limit, self.thresholds, self.analyze = limit, thresholds, analyze
        self.language, self.rerank, self.qvec = question_language, rerank, query_vector
        self.asks_number, self.sentence_vectors = asks_number, sentence_vectors

    def __call__(self, hits: list[Hit], kc: Candidates | None, vc: Candidates | None,
                 best_similarity: float | None, term_pids: Mapping[str, np.ndarray] | None,
                 deadline: Deadline | None = None) -> SearchResults | Fallback:
        """The results; or, when the sentence vectors are not ready by ``deadline``, the
        fallback saying so (the caller returns the keyword ranking)."""
        # Without the ranker only the passages the decision reads are measured (DECIDE_DEPTH): a
        # search for 10 or 100 hits need not read every passage again sentence by sentence.
        measured = hits if self.rerank else hits[:min(self.limit, DECIDE_DEPTH)]
        support = self._support(measured, kc, vc, term_pids)
        if self.rerank and hits:
            t = self.thresholds
            support = [dataclasses.replace(p, score=rank_score(p, t)) for p in support]
            order = rerank_order(support)[: self.limit]
            hits = [dataclasses.replace(hits[i], rank=r) for r, i in enumerate(order, start=1)]
            support = [support[i] for i in order]
        else:
            hits = hits[: self.limit]
        if self.qvec is not None and self.sentence_vectors is not None and support:
            top = min(DECIDE_DEPTH, len(support))
            vectors = self.sentence_vectors
            if deadline is not None:
                vectors = _bounded(vectors, deadline)
            try:
                support = [*with_meaning([h.quote for h in hits[:top]],
                                         [(h.title or "", *h.heading_path) for h in hits[:top]],
                                         support[:top], self.qvec, vectors),
                           *support[top:]]
            except _Late as late:
                return late.fallback
        return with_evidence(self.view, hits, self.terms, best_similarity, term_pids,
                             self.thresholds, support)

    def _support(self, hits: list[Hit], kc: Candidates | None, vc: Candidates | None,
                 term_pids: Mapping[str, np.ndarray] | None) -> list[PassageSupport]:
        if not hits:
            return []
        view = self.view
        allowed = allowed_signatures(view, self.actor, self.filters)
        df = {t: len(term_pids[t]) for t in self.terms} if term_pids is not None else {
            t: sum(int(allowed.mask(view.sig, p).sum()) for p, _ in view.postings(t))
            for t in self.terms}
        weights = term_weights(self.terms, df, allowed.passages, self.analyze)
        kw: dict[int, float] = {}
        best_kw = 0.0
        if kc is not None and len(kc.pids):
            # The leg's candidates can be tens of thousands (a common word of a large store):
            # read the scores of these hits only, not a mapping of every candidate.
            at = np.isin(kc.pids, np.array([h.pid for h in hits], dtype=kc.pids.dtype))
            kw = dict(zip(kc.pids[at].tolist(), kc.scores[at].tolist(), strict=True))
            best_kw = float(kc.scores.max())
        cos: dict[int, float] = {}
        if self.qvec is not None:
            if vc is not None:
                cos = dict(zip(vc.pids.tolist(), vc.scores.tolist(), strict=True))
            missing = [h.pid for h in hits if h.pid not in cos]
            if missing:
                for pid, vec in view.passage_vectors(missing).items():
                    cos[pid] = float(np.dot(vec, self.qvec))
        out = []
        for h in hits:
            lang = (h.language or "").split("-")[0].lower() or None
            out.append(passage_support(
                h.quote, (h.title or "", *h.heading_path), self.analyze, weights,
                similarity=cos.get(h.pid) if self.qvec is not None else None,
                cross_language=bool(self.language and lang and lang != self.language),
                keyword=kw.get(h.pid, 0.0) / best_kw if best_kw > 0 else 0.0,
                number=self.asks_number))
        return out


def _keyword(view: ReadView, bm25: BM25, actor: Actor, kq: KeywordQuery, filters: Filters,
             match: str, depth: int, max_per_document: int | None, explain: bool,
             finish: _Finish, fallback: Fallback | None = None) -> SearchResults:
    """The keyword ranking: BM25 ranked for exactly ``depth`` hits under the cap. A fallback's
    evidence is measured without similarity (keyword signals only)."""
    if fallback is not None:
        finish.qvec = None
    if not kq.terms:
        res = with_evidence(view, [], [], None, None, finish.thresholds)
    else:
        cand = keyword_candidates(view, bm25, actor, kq, filters, match, depth, max_per_document)
        why = _explanation(_ranked(view, cand, "keyword", len(cand.pids))) if explain else None
        hits = hits_from(view, cand, depth, max_per_document, why)
        res = finish(hits, cand, None, None, cand.term_pids)
        assert isinstance(res, SearchResults)  # no deadline: never a fallback
    res.fallback = fallback.as_dict() if fallback is not None else None
    return res


def _capped_hits(view: ReadView, legs: list[Leg], mode: str, fusion: Fusion, limit: int,
                 max_per_document: int | None, explain: bool,
                 weights: LegWeights | None = None) -> list[Hit]:
    if mode == "hybrid":
        pids, scores, why = fuse(legs, fusion, weights)
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
