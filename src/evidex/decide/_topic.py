"""On topic: do the passages the caller may read cover the question's subject at all?

Decided over the ``TOPIC_DEPTH`` best-ranked passages, each scored

    cosine(question, passage) - hub_weight * hubness(passage) + coverage_weight * coverage

* the cosine is the vector leg's, re-based per passage language (``retrieve._vector``), so a
  passage in another language than the question is read on the same footing;
* ``hubness`` (``_probes``): how close the passage is to questions in general. A short or
  generic passage is the nearest neighbour of every question nothing else answers, with a
  cosine as high as a real match; subtracting part of its closeness to everything leaves how
  close it is to this question in particular;
* ``coverage``: the idf-weighted share of the question's words the passage holds.

The question is on topic when some passage's score reaches the model's ``on_topic`` value,
fitted so that 98 % of development questions that have an answer in the collection pass
(``_calibration``): this decision only keeps questions about things the collection does not
cover from reaching a generator. Whether a sentence states what is asked is the other decision
(``_bearing``). A keyword-only store (no cosines) compares the best sentence coverage with the
model's ``keyword_coverage``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ._calibration import Calibration
from ._support import PassageSupport

__all__ = ["TOPIC_DEPTH", "OnTopic", "PassageDecision", "on_topic", "topic_score"]

#: Passages (by rank) the decision reads: one ranked lower is not what a reader would be shown.
TOPIC_DEPTH = 3


@dataclass(frozen=True, slots=True)
class PassageDecision:
    """One passage the decision read: its scores, the threshold each was compared with, and the
    verdict (what the answer's trace records, with the passage's ids)."""

    #: Its rank among the passages decided on (1 = best).
    rank: int
    #: Score name -> value: "score" and the parts it is made of.
    scores: Mapping[str, float | None]
    #: Score name -> the threshold it was compared with.
    thresholds: Mapping[str, float]
    cross_language: bool
    on_topic: bool

    def as_dict(self) -> dict[str, object]:
        return {"rank": self.rank, "scores": dict(self.scores), "thresholds": dict(self.thresholds),
                "cross_language": self.cross_language, "on_topic": self.on_topic}


@dataclass(frozen=True, slots=True)
class OnTopic:
    """The on-topic decision: per passage decided on, and the verdict (some passage is)."""

    verdict: bool
    passages: tuple[PassageDecision, ...]

    @property
    def score(self) -> float | None:
        """The best passage's score (None without passages)."""
        return max((d.scores["score"] for d in self.passages  # type: ignore[misc]
                    if d.scores.get("score") is not None), default=None)


def topic_score(p: PassageSupport, hubness: float, c: Calibration) -> float:
    """A passage's on-topic score (it has a cosine)."""
    assert p.similarity is not None
    return p.similarity - c.hub_weight * hubness + c.coverage_weight * p.coverage


def on_topic(support: Sequence[PassageSupport], hubness: Sequence[float] | np.ndarray | None,
             c: Calibration) -> OnTopic:
    """The decision over ``support`` (best first; the first ``TOPIC_DEPTH`` are read), with each
    passage's ``hubness`` (None: a keyword-only store, or a search without cosines)."""
    out = []
    for i, p in enumerate(support[:TOPIC_DEPTH]):
        if p.similarity is None or hubness is None:
            scores: dict[str, float | None] = {"sentence_coverage": round(p.sentence_coverage, 6)}
            limits = {"sentence_coverage": c.keyword_coverage}
            ok = p.sentence_coverage >= c.keyword_coverage
        else:
            s = topic_score(p, float(hubness[i]), c)
            scores = {"score": round(s, 6), "similarity": round(p.similarity, 6),
                      "hubness": round(float(hubness[i]), 6), "coverage": round(p.coverage, 6)}
            limits = {"score": c.on_topic}
            ok = s >= c.on_topic
        out.append(PassageDecision(i + 1, scores, limits, p.cross_language, ok))
    return OnTopic(any(d.on_topic for d in out), tuple(out))
