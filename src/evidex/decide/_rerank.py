"""The second-stage ranker: re-orders the fused candidates by the evidence each passage gives.

Fusion ranks by two scores that each see the question one way (BM25's words, the model's
cosine). The ranker reads the first ``RERANK_DEPTH`` fused candidates again with what fusion
cannot see: how much of the question the passage's best sentence covers (idf-weighted, so the
rare words count; a sentence holding them together is the proximity signal), and whether its
title or heading path names the question's subject. Its score is a hand-set linear combination

    similarity / similarity_scale + 0.3 * keyword + 1.0 * sentence_coverage + 0.3 * title_coverage

where ``similarity`` is the cosine (re-based per passage language by the vector leg, so a
German question is not drawn to German passages of the wrong topic), ``keyword`` the BM25 score
relative to the query's best, and ``similarity_scale`` the model's cosine spread worth one
fully covered sentence (per model, in ``Calibration``). The weights were set by hand on
development data (SciFact train, encyclopedia dev, SQuAD 2.0 train sample, MLQA dev German);
their measured effect is in
benchmarks/RESULTS.md. Answers always use it; ``search`` only when asked
(``rerank=True``), because on search benchmarks it did not pay for its cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._calibration import Calibration
from ._support import PassageSupport

__all__ = ["RANKER", "RERANK_DEPTH", "RankerWeights", "rank_score", "rerank_order"]

#: How many fused candidates the ranker reads again.
RERANK_DEPTH = 20


@dataclass(frozen=True, slots=True)
class RankerWeights:
    similarity: float = 1.0
    keyword: float = 0.3
    sentence: float = 1.0
    title: float = 0.3


RANKER = RankerWeights()


def rank_score(p: PassageSupport, c: Calibration, w: RankerWeights = RANKER) -> float:
    sim = 0.0 if p.similarity is None else p.similarity / c.similarity_scale
    return (w.similarity * sim + w.keyword * p.keyword + w.sentence * p.sentence_coverage
            + w.title * p.title_coverage)


def rerank_order(support: Sequence[PassageSupport]) -> list[int]:
    """Indices of ``support`` by descending ranker score; equal scores keep fused order."""
    return sorted(range(len(support)), key=lambda i: (-support[i].score, i))
