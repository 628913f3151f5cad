"""How much the retrieved passages support answering: ``none``, ``weak`` or ``strong``.

A retrieval signal for the decline decision of answers, never a probability of truth, and never
shown as a percentage. Two observations go in:

* coverage: the share of the query's content terms (index terms that are not English or German
  function words) that occur in the returned passages;
* similarity: the best cosine between the query and an allowed passage (vector and hybrid
  modes). Cosines are on each model's own scale (multilingual-e5-small bunches related and
  unrelated texts between about 0.75 and 0.92), so thresholds are per embedding model,
  calibrated on evaluation data (see benchmarks/RESULTS.md, "Evidence thresholds").

strong: similarity >= strong_similarity, or coverage >= min_coverage with similarity at least
weak_similarity (or no vector leg). weak: anything else that returned passages. none: no hits.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..query import content_terms

__all__ = ["EVIDENCE_THRESHOLDS", "EvidenceThresholds", "evidence_level"]


@dataclass(frozen=True, slots=True)
class EvidenceThresholds:
    strong_similarity: float
    weak_similarity: float
    min_coverage: float = 0.5


#: Per embedding model; "none" is the keyword-only store. Calibrated values are recorded with
#: the command that produced them in benchmarks/RESULTS.md.
EVIDENCE_THRESHOLDS: dict[str, EvidenceThresholds] = {
    "multilingual-e5-small": EvidenceThresholds(0.89, 0.85),
    "multilingual-e5-small-int8": EvidenceThresholds(0.89, 0.85),
    "all-minilm-l6-v2": EvidenceThresholds(0.62, 0.44),
    "hash-test": EvidenceThresholds(0.8, 0.3),
    "none": EvidenceThresholds(2.0, -2.0),
}


def evidence_level(
    terms: Iterable[str],
    hit_terms: Iterable[Iterable[str]],
    best_similarity: float | None,
    thresholds: EvidenceThresholds,
) -> tuple[str, dict[str, float | None]]:
    wanted = set(content_terms(list(terms)))
    hits = [set(t) for t in hit_terms]
    if not hits:
        return "none", {"coverage": 0.0, "similarity": best_similarity}
    covered = set().union(*hits) & wanted
    coverage = len(covered) / len(wanted) if wanted else 0.0
    sim_ok = best_similarity is None or best_similarity >= thresholds.weak_similarity
    strong = (best_similarity is not None and best_similarity >= thresholds.strong_similarity) or (
        coverage >= thresholds.min_coverage and sim_ok
    )
    return ("strong" if strong else "weak"), {"coverage": round(coverage, 4),
                                              "similarity": best_similarity}
