"""The keyword leg and the hits: analyzer terms -> permission-exact BM25 -> selection -> cited hits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model import Hit
from ..store import ReadView
from ._access import Access, Allowed
from ._bm25 import BM25
from ._keywords import KeywordQuery
from ._select import select_top

__all__ = ["Candidates", "hits_from", "keyword_candidates"]


@dataclass(frozen=True, slots=True)
class Candidates:
    """Passage ids of one retrieval leg with the leg's own scores, in no particular order."""

    pids: np.ndarray
    scores: np.ndarray
    #: Keyword leg: each query term's readable passage ids, sorted (their number is the term's
    #: document frequency in the visible collection). The evidence check looks terms up here
    #: instead of in the raw postings, which for a common term of a large store are megabytes
    #: to fetch. None when the leg did not read postings (the vector leg).
    term_pids: Mapping[str, np.ndarray] | None = None


def keyword_candidates(
    view: ReadView,
    bm25: BM25,
    access: Access,
    terms: Sequence[str] | KeywordQuery,
    match: str,
    window: int | None = None,
    max_per_document: int | None = None,
) -> Candidates:
    """Keyword candidates of the analysed query (``terms``: one analysis matched against every
    passage, or a ``KeywordQuery`` of one analysis per language) among the passages ``access``
    allows; with ``window`` they are only guaranteed to contain the best ``window`` passages
    under ``max_per_document`` (which lets BM25 prune). Each language part is pruned against its
    own best ``window``: a passage among the best ``window`` of all parts is among the best of
    its own part, which holds fewer."""
    query = terms if isinstance(terms, KeywordQuery) else KeywordQuery.of(terms)
    got = [_part(view, bm25, access.of(language), part, match, window, max_per_document)
           for language, part in query.parts]
    if len(got) == 1:
        return got[0]
    if not got:
        return Candidates(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64), {})
    term_pids: dict[str, np.ndarray] = {}
    for c in got:  # the parts' passages are disjoint (one language each): union by concatenation
        for t, p in (c.term_pids or {}).items():
            term_pids[t] = np.sort(np.concatenate([term_pids[t], p])) if t in term_pids else p
    return Candidates(np.concatenate([c.pids for c in got]), np.concatenate([c.scores for c in got]),
                      term_pids)


def _part(view: ReadView, bm25: BM25, allowed: Allowed, terms: Sequence[str], match: str,
          window: int | None, max_per_document: int | None) -> Candidates:
    """The candidates of one analysis among the ``allowed`` passages (one language's, or all)."""

    def top(pids: np.ndarray, scores: np.ndarray) -> tuple[bool, float]:
        chosen = select_top(scores, view.dkey, view.number, window or 0, max_per_document,
                            view.doc_ids, pids, ties=False)
        return len(chosen) == window, float(scores[chosen[-1]]) if chosen else 0.0

    # The cache epoch is the visible collection itself (``allowed.key`` carries its signatures'
    # versions), not the store generation: a write the actor cannot see keeps their caches.
    pids, scores, term_pids = bm25.score(
        terms, view.postings, view.sig, view.length, allowed, match,
        top=top if window else None, deaths=view,
    )
    return Candidates(pids, scores, term_pids)


def hits_from(
    view: ReadView,
    cand: Candidates,
    limit: int,
    max_per_document: int | None,
    explain: dict[int, dict[str, Any]] | None = None,
) -> list[Hit]:
    """Select the best candidates and turn them into hits with full citation data."""
    chosen = select_top(cand.scores, view.dkey, view.number, limit, max_per_document,
                        view.doc_ids, cand.pids)
    pids = cand.pids.take(chosen).tolist()
    scores = cand.scores.take(chosen).tolist()
    # Each cited tuple holds the Hit's fields before its score and rank, then page and flags
    # (``ReadView.cited``).
    return [Hit(*c[:-2], score, rank, *c[-2:],
                None if explain is None else {"fused_score": score, **explain.get(pid, {})}, pid)
            for rank, (pid, score, c) in enumerate(zip(pids, scores, view.cited(pids), strict=True),
                                                   start=1)]
