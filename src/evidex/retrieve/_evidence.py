"""Whether the passages found answer the question: decided per passage, not per result list.

A passage supports answering when it is among the ``DECIDE_DEPTH`` best-ranked, states what
kind of thing the question asks for (a number for "how many", "when", "wie viele": ``typed``),
and it, or a sentence inside it, covers the question well enough for how similar the passage is
to it (``PassageSupport``, computed in ``_support``):

* same language (or unknown): ``similarity + coverage_weight * sentence_coverage >=
  answer_similarity``. Coverage is the idf-weighted share of the question's words that the
  passage's best sentence contains, so a passage holding every rare word of the question in one
  sentence needs less similarity than one that only shares the topic; a question whose key word
  no passage contains ("siblings" asked of a page that says "a large family") loses that word's
  whole weight;
* question and passage in different languages: word coverage means little (only names and
  numbers can match), and the multilingual model's cosine runs lower across languages for the
  same relevance, so the passage is judged on ``similarity + cross_offset +
  cross_coverage_weight * sentence_coverage >= cross_similarity``;
* keyword-only stores (no similarity): ``sentence_coverage >= keyword_coverage``.

The search's ``evidence`` is ``strong`` when some returned passage supports answering, ``weak``
when passages were found but none does, ``none`` without hits. It is a retrieval signal for the
decline decision, never a probability of truth. Cosines are on each model's own scale, so the
values are per embedding model, calibrated on development data of several kinds (claims,
wh-questions, keyword queries, German, cross-language, out-of-collection questions) by
benchmarks/answers_decide.py, which runs this very rule; each model's values are recorded with
the command that produced them in benchmarks/RESULTS.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..model import Hit, SearchResults
from ..query import content_terms
from ..store import ReadView
from ._support import PassageSupport

__all__ = ["DECIDE_DEPTH", "EVIDENCE_THRESHOLDS", "EvidenceThresholds", "evidence_level", "supports",
           "terms_in_hits", "with_evidence"]


#: Passages (by rank) that can support answering: one ranked lower is not the answer a reader
#: expects, and on a collection about the question's topic it is often merely on-topic.
DECIDE_DEPTH = 3


@dataclass(frozen=True, slots=True)
class EvidenceThresholds:
    """Per embedding model: the answer decision and the cosine scale the ranker uses."""

    answer_similarity: float
    coverage_weight: float
    cross_similarity: float
    cross_coverage_weight: float
    #: How much lower the model's cosine runs between languages for the same relevance.
    cross_offset: float
    #: A cosine difference this large counts as much, in ranking, as a whole covered sentence.
    similarity_scale: float
    #: Keyword-only stores: best sentence coverage needed.
    keyword_coverage: float = 0.6


#: Per embedding model; "none" is the keyword-only store. Calibrated values are recorded with
#: the command that produced them in benchmarks/RESULTS.md.
EVIDENCE_THRESHOLDS: dict[str, EvidenceThresholds] = {
    "multilingual-e5-small": EvidenceThresholds(0.915, 0.1, 0.87, 0.05, 0.04, 0.05),
    "multilingual-e5-small-int8": EvidenceThresholds(0.915, 0.1, 0.87, 0.05, 0.04, 0.05),
    "all-minilm-l6-v2": EvidenceThresholds(0.62, 0.4, 2.0, 0.0, 0.0, 0.15),
    "hash-test": EvidenceThresholds(0.5, 1.0, 2.0, 0.0, 0.0, 0.3),
    "none": EvidenceThresholds(2.0, 0.0, 2.0, 0.0, 0.0, 1.0),
}


def supports(p: PassageSupport, t: EvidenceThresholds) -> bool:
    """The answer decision for one passage (see the module docstring; the rank is checked by
    the caller)."""
    if not p.typed:
        return False
    if p.similarity is None:
        return p.sentence_coverage >= t.keyword_coverage
    if p.cross_language:
        return (p.similarity + t.cross_offset + t.cross_coverage_weight * p.sentence_coverage
                >= t.cross_similarity)
    return p.similarity + t.coverage_weight * p.sentence_coverage >= t.answer_similarity


def evidence_level(support: Sequence[PassageSupport], thresholds: EvidenceThresholds) -> str:
    if not support:
        return "none"
    return "strong" if any(supports(p, thresholds) for p in support[:DECIDE_DEPTH]) else "weak"


def terms_in_hits(view: ReadView, hits: Sequence[Hit], terms: Sequence[str],
                  term_pids: Mapping[str, np.ndarray] | None) -> list[set[str]]:
    """The content terms of the query each hit contains. ``term_pids`` (the keyword leg's
    readable passages per term, when it ran) answers for every hit, since hits are readable;
    without it, every segment's postings are searched."""
    pids = np.array([h.pid for h in hits], dtype=np.int64)
    contained: list[set[str]] = [set() for _ in hits]
    for t in content_terms(terms) if hits else ():
        known = term_pids.get(t) if term_pids is not None else None
        runs = [known] if known is not None else [p for p, _ in view.postings(t)]
        for p in runs:  # sorted ids: binary search; "clip" keeps ids past the end in range
            if len(p):
                # Needles in the haystack's dtype: int64 needles would make numpy convert the
                # whole postings array on every call.
                n = pids.astype(p.dtype, copy=False)
                for i, hit in enumerate((p.take(p.searchsorted(n), mode="clip") == n).tolist()):
                    if hit:
                        contained[i].add(t)
    return contained


def with_evidence(view: ReadView, hits: list[Hit], terms: Sequence[str],
                  best_similarity: float | None, term_pids: Mapping[str, np.ndarray] | None,
                  thresholds: EvidenceThresholds,
                  support: Sequence[PassageSupport] = ()) -> SearchResults:
    """The search results: ``hits`` with the evidence level and the signals it came from.

    ``support`` (one per hit) decides the level; ``coverage`` in the signals is the share of
    the query's content terms found in some hit (read from the postings), a diagnostic."""
    contained = terms_in_hits(view, hits, terms, term_pids)
    wanted = set(content_terms(list(terms)))
    covered = set().union(*contained) & wanted if contained else set()
    res = SearchResults(hits, terms=terms, evidence=evidence_level(support, thresholds))
    res.signals = {
        "coverage": round(len(covered) / len(wanted), 4) if wanted else 0.0,
        "similarity": best_similarity,
        "sentence_coverage": round(max((p.sentence_coverage for p in support), default=0.0), 4),
    }
    res.support = [replace(p, supported=i < DECIDE_DEPTH and supports(p, thresholds))
                   for i, p in enumerate(support)]
    return res
