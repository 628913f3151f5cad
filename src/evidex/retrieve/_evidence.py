"""Whether the passages found answer the question: decided per passage, not per result list.

A passage supports answering when it is among the ``DECIDE_DEPTH`` best-ranked, states what
kind of thing the question asks for (a number for "how many", "when", "wie viele": ``typed``),
and its answer score reaches the model's threshold. The score is one formula for every kind of
question (``answer_score``):

    (1 - sentence_weight) * similarity + sentence_weight * sentence_similarity
        + coverage_weight * sentence_coverage >= answer_similarity

* ``similarity``: the cosine of the question with the passage; ``sentence_similarity``: the
  highest cosine of the question with one of the passage's best-covering sentences, the ones an
  answer would quote (``_meaning``). A passage on the question's topic is close to it as a whole;
  only a passage with a sentence that says what was asked is close to it there too. (A passage
  whose sentences were not compared, or that has none that may be quoted, counts its passage
  similarity in their place.)
* ``sentence_coverage``: the idf-weighted share of the question's words that the passage's best
  sentence contains, so a passage holding every rare word of the question in one sentence needs
  less similarity than one that only shares the topic.
* a passage in another language than the question: the multilingual model's cosines run lower
  across languages for the same relevance, and word coverage there counts only names and
  numbers, so ``cross_answer_offset`` is added to its score; but it supports answering only when
  its score *without* the offset is higher than that of every passage in the question's language
  among the ``DECIDE_DEPTH``: a passage in another language never wins over an on-topic passage
  in the reader's language by the easier bar.
* keyword-only stores (no similarity): ``sentence_coverage >= keyword_coverage``.

The search's ``evidence`` is ``strong`` when some returned passage supports answering, ``weak``
when passages were found but none does, ``none`` without hits. It is a retrieval signal for the
decline decision, never a probability of truth. Cosines are on each model's own scale, so the
values are per embedding model, fitted on development data of several kinds at once (claims,
encyclopedic and help-centre wh-questions, keyword queries, German, cross-language,
out-of-collection questions) by
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

__all__ = ["DECIDE_DEPTH", "EVIDENCE_THRESHOLDS", "EvidenceThresholds", "answer_score", "evidence_level",
           "supports", "terms_in_hits", "with_evidence"]


#: Passages (by rank) that can support answering: one ranked lower is not the answer a reader
#: expects, and on a collection about the question's topic it is often merely on-topic.
DECIDE_DEPTH = 3


@dataclass(frozen=True, slots=True)
class EvidenceThresholds:
    """Per embedding model: the answer decision and the cosine scale the ranker uses."""

    answer_similarity: float
    coverage_weight: float
    #: Share of the sentence similarity in the answer score (the rest is the passage's).
    sentence_weight: float
    #: Added to the answer score of a passage in another language than the question.
    cross_answer_offset: float
    #: How much lower the model's cosine runs between languages for the same relevance (ranker).
    cross_offset: float
    #: A cosine difference this large counts as much, in ranking, as a whole covered sentence.
    similarity_scale: float
    #: Keyword-only stores: best sentence coverage needed.
    keyword_coverage: float = 0.6


#: Per embedding model; "none" is the keyword-only store. Fitted values are recorded with the
#: command that produced them in benchmarks/RESULTS.md.
EVIDENCE_THRESHOLDS: dict[str, EvidenceThresholds] = {
    "multilingual-e5-small": EvidenceThresholds(0.9075, 0.05, 1.0, 0.12, 0.04, 0.05),
    "multilingual-e5-small-int8": EvidenceThresholds(0.9075, 0.05, 1.0, 0.12, 0.04, 0.05),
    "all-minilm-l6-v2": EvidenceThresholds(0.62, 0.4, 0.0, -2.0, 0.0, 0.15),
    "hash-test": EvidenceThresholds(0.5, 1.0, 0.0, -2.0, 0.0, 0.3),
    "none": EvidenceThresholds(2.0, 0.0, 0.0, -2.0, 0.0, 1.0),
}


def answer_score(p: PassageSupport, t: EvidenceThresholds) -> float:
    """The score the decision compares with ``answer_similarity`` (no cross-language offset);
    the passage must have a similarity."""
    assert p.similarity is not None
    sentence = p.similarity if p.sentence_similarity is None else p.sentence_similarity
    return ((1 - t.sentence_weight) * p.similarity + t.sentence_weight * sentence
            + t.coverage_weight * p.sentence_coverage)


def supports(p: PassageSupport, t: EvidenceThresholds,
             rivals: Sequence[PassageSupport] = ()) -> bool:
    """The answer decision for one passage (see the module docstring); ``rivals``: the passages
    decided on with it (the ``DECIDE_DEPTH`` best, it may be among them; the rank is checked by
    the caller)."""
    if not p.typed:
        return False
    if p.similarity is None:
        return p.sentence_coverage >= t.keyword_coverage
    score = answer_score(p, t)
    if not p.cross_language:
        return score >= t.answer_similarity
    return (score + t.cross_answer_offset >= t.answer_similarity
            and all(score > answer_score(q, t) for q in rivals
                    if not q.cross_language and q.similarity is not None))


def evidence_level(support: Sequence[PassageSupport], thresholds: EvidenceThresholds) -> str:
    if not support:
        return "none"
    top = support[:DECIDE_DEPTH]
    return "strong" if any(supports(p, thresholds, top) for p in top) else "weak"


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
    top = support[:DECIDE_DEPTH]
    res.support = [replace(p, supported=i < DECIDE_DEPTH and supports(p, thresholds, top))
                   for i, p in enumerate(support)]
    return res
