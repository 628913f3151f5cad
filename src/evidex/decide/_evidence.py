"""On topic: do the passages the caller may read cover the question's subject at all? Decided
per passage, not per result list (``on_topic``).

Today's rule: a passage is on topic (supports answering) when it is among the ``DECIDE_DEPTH``
best-ranked, states what kind of thing the question asks for (a number for "how many", "when",
"wie viele": ``typed``), and its answer score reaches the model's threshold. The score is one
formula for every kind of question (``answer_score``):

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

The verdict is on topic when some passage among the ``DECIDE_DEPTH`` is. The search's
``evidence`` is ``strong`` then, ``weak`` when passages were found but none is, ``none`` without
hits. It is a retrieval signal for the
decline decision, never a probability of truth. Cosines are on each model's own scale, so the
values are per embedding model, fitted on development data of several kinds at once (claims,
encyclopedic and help-centre wh-questions, keyword queries, German, cross-language,
out-of-collection questions) by
benchmarks/answers_decide.py, which runs this very rule; each model's values are recorded with
the command that produced them in benchmarks/RESULTS.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..model import Hit
from ..query import content_terms
from ..store import ReadView
from ._support import PassageSupport

__all__ = ["DECIDE_DEPTH", "EVIDENCE_THRESHOLDS", "EvidenceThresholds", "OnTopic", "PassageDecision",
           "answer_score", "evidence_level", "on_topic", "supports", "terms_in_hits"]


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


@dataclass(frozen=True, slots=True)
class PassageDecision:
    """One passage the decision read: its scores, the threshold each was compared with, and the
    verdict (what the answer's trace records, with the passage's ids)."""

    #: Its rank among the passages decided on (1 = best).
    rank: int
    #: Score name -> value: "answer_score" (with a similarity) and the parts it is made of, or
    #: "sentence_coverage" alone in a keyword-only store.
    scores: Mapping[str, float | None]
    #: Score name -> the threshold it was compared with.
    thresholds: Mapping[str, float]
    #: States the kind of thing asked (a number for "how many"); False decides alone.
    typed: bool
    cross_language: bool
    on_topic: bool

    def as_dict(self) -> dict[str, object]:
        return {"rank": self.rank, "scores": dict(self.scores), "thresholds": dict(self.thresholds),
                "typed": self.typed, "cross_language": self.cross_language,
                "on_topic": self.on_topic}


@dataclass(frozen=True, slots=True)
class OnTopic:
    """The on-topic decision: per passage decided on (the ``DECIDE_DEPTH`` best), and the
    verdict (some passage is on topic)."""

    verdict: bool
    passages: tuple[PassageDecision, ...]


def _decision(rank: int, p: PassageSupport, t: EvidenceThresholds,
              top: Sequence[PassageSupport]) -> PassageDecision:
    if p.similarity is None:
        scores: dict[str, float | None] = {"sentence_coverage": round(p.sentence_coverage, 6)}
        limits = {"sentence_coverage": t.keyword_coverage}
    else:
        scores = {"answer_score": round(answer_score(p, t), 6), "similarity": round(p.similarity, 6),
                  "sentence_similarity": (None if p.sentence_similarity is None
                                          else round(p.sentence_similarity, 6)),
                  "sentence_coverage": round(p.sentence_coverage, 6)}
        limits = {"answer_score": t.answer_similarity}
        if p.cross_language:
            limits["cross_answer_offset"] = t.cross_answer_offset
    return PassageDecision(rank, scores, limits, p.typed, p.cross_language, supports(p, t, top))


def on_topic(support: Sequence[PassageSupport], thresholds: EvidenceThresholds) -> OnTopic:
    """Do the passages decided on (``support``, best first; the first ``DECIDE_DEPTH`` are
    read) cover the question's subject? (The rule: the module docstring.)"""
    top = list(support[:DECIDE_DEPTH])
    found = tuple(_decision(i, p, thresholds, top) for i, p in enumerate(top, start=1))
    return OnTopic(any(d.on_topic for d in found), found)


def evidence_level(support: Sequence[PassageSupport], thresholds: EvidenceThresholds) -> str:
    """"none" without passages, "strong" when they are on topic, else "weak"."""
    if not support:
        return "none"
    return "strong" if on_topic(support, thresholds).verdict else "weak"


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
