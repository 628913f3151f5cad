"""Combining ranked legs (keyword, vector) into one ranking.

* Adaptive (default): the convex combination below with weights chosen per query from what the
  query shows at search time (``_adaptive``: how much of the query the keyword leg covers, the
  query's language against the passages', the shape of the keyword leg's scores).
* Convex combination: alpha * vector + (1 - alpha) * keyword over scores min-max
  normalised within each leg's window (a passage missing from a leg contributes 0 there),
  alpha = 0.5 unless told. Bruch et al. (2023) found it can beat RRF, and it did on every
  evaluation evidex has (benchmarks/RESULTS.md); no fixed alpha was best everywhere.
* Reciprocal rank fusion: score = sum over legs of 1 / (k + rank), k = 60. Uses only ranks, so
  the incomparable scales of BM25 and cosine never meet; the choice when a collection's scores
  behave unlike the evaluated ones.
* Weighted reciprocal rank fusion (``weighted_rrf``): the same ranks, each leg's term scaled by
  twice its adaptive weight for this query (score = sum over legs of 2 w / (k + rank)), as
  Elasticsearch, OpenSearch and Vespa weight RRF per retriever. At equal weights it is plain RRF,
  bit for bit; a cross-language query's keyword leg (weight near the floor) then counts about a
  third as much as its vector leg.

Each leg is a window of candidates already in deterministic order; fusion is computed in a fixed
leg order so fused scores are reproducible, and ties are broken later by (document id, passage
number) like every other ranking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model import QueryError
from ._adaptive import LegWeights

__all__ = ["DEFAULT_FUSION", "FUSIONS", "WEIGHTED_FUSIONS", "Fusion", "Leg", "fuse",
           "rrf_contributions"]

FUSIONS = ("adaptive", "weighted_rrf", "rrf", "convex")
#: The fusions that weigh the legs per query (``_adaptive.leg_weights``) before fusing.
WEIGHTED_FUSIONS = frozenset({"adaptive", "weighted_rrf"})
#: The fusion every entry point (library, CLI, config file, service) uses unless told otherwise.
DEFAULT_FUSION = "adaptive"


@dataclass(frozen=True, slots=True)
class Fusion:
    method: str = DEFAULT_FUSION
    rrf_k: int = 60
    window: int = 50
    alpha: float = 0.5

    def __post_init__(self) -> None:
        if self.method not in FUSIONS:
            raise QueryError(f"fusion must be one of {', '.join(FUSIONS)}, got {self.method!r}")
        for name, value in (("rrf_k", self.rrf_k), ("window", self.window)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1 or value > 1000:
                raise QueryError(f"{name} must be an int in 1..1000, got {value!r}")
        if not isinstance(self.alpha, int | float) or isinstance(self.alpha, bool) or not (
            0.0 <= float(self.alpha) <= 1.0
        ):
            raise QueryError(f"alpha must be a number in 0..1, got {self.alpha!r}")

    @property
    def weighted(self) -> bool:
        """Whether this fusion needs the query's leg weights (``_adaptive``) to fuse."""
        return self.method in WEIGHTED_FUSIONS


@dataclass(frozen=True, slots=True)
class Leg:
    name: str
    pids: np.ndarray  # in rank order, best first
    scores: np.ndarray


def rrf_contributions(count: int, k: int, weight: float = 0.5) -> list[float]:
    """Each of a leg's ``count`` ranks' share of a (weighted) RRF score: 2 * weight / (k + rank).
    The factor 2 makes equal weights (0.5 each) exactly plain RRF's 1 / (k + rank)."""
    scale = 2.0 * weight
    return [scale / (k + r) for r in range(1, count + 1)]


def fuse(legs: list[Leg], fusion: Fusion, weights: LegWeights | None = None, explain: bool = False,
         ) -> tuple[np.ndarray, np.ndarray, dict[int, dict[str, Any]]]:
    """(passage ids, fused scores, per-passage explanation {leg: {rank, score}}, made only
    when ``explain`` is asked: a dictionary per candidate and leg is most of the fusion's
    work). Adaptive fusion and weighted RRF take the query's ``weights``; convex takes them
    from ``alpha``."""
    if fusion.weighted and weights is None:
        raise ValueError(f"{fusion.method} fusion needs the query's leg weights")
    why: dict[int, dict[str, Any]] = {}
    fused: dict[int, float] = {}
    for leg in legs:
        pids = leg.pids.tolist()
        if fusion.method == "rrf":
            contrib = rrf_contributions(len(pids), fusion.rrf_k)
        elif fusion.method == "weighted_rrf":
            assert weights is not None  # checked above
            weight = weights.vector if leg.name == "vector" else weights.keyword
            contrib = rrf_contributions(len(pids), fusion.rrf_k, weight)
        else:
            s = leg.scores
            lo, hi = (float(s.min()), float(s.max())) if len(s) else (0.0, 0.0)
            norm = (s - lo) / (hi - lo) if hi > lo else np.ones(len(s))
            if weights is not None:
                weight = weights.vector if leg.name == "vector" else weights.keyword
            else:
                weight = fusion.alpha if leg.name == "vector" else 1.0 - fusion.alpha
            contrib = (weight * norm).tolist()
        for pid, c in zip(pids, contrib, strict=True):
            fused[pid] = fused.get(pid, 0.0) + c
        if explain:
            for rank, (pid, raw) in enumerate(zip(pids, leg.scores.tolist(), strict=True), 1):
                why.setdefault(pid, {})[leg.name] = {"rank": rank, "score": raw}
    pids_out = np.fromiter(fused, dtype=np.int64, count=len(fused))
    scores_out = np.fromiter(fused.values(), dtype=np.float64, count=len(fused))
    return pids_out, scores_out, why
