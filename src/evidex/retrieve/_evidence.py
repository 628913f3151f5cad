"""How much the retrieved passages support answering: ``none``, ``weak`` or ``strong``.

A retrieval signal for the decline decision of answers, never a probability of truth, and never
shown as a percentage. Two observations go in:

* coverage: the share of the query's content terms (index terms that are not English or German
  function words) that occur in the returned passages;
* similarity: the best cosine between the query and an allowed passage (vector and hybrid
  modes). Cosines are on each model's own scale (multilingual-e5-small puts related and
  unrelated texts close together), so thresholds are per embedding model, calibrated on
  evaluation data (see benchmarks/RESULTS.md, "Evidence thresholds").

strong: similarity >= strong_similarity, or coverage >= min_coverage with similarity at least
weak_similarity (or no vector leg). weak: anything else that returned passages. none: no hits.

Which query terms the hits contain is read from the postings (``terms_in_hits``), never by
analysing the hit texts again, so it is exactly what the index matched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..model import Hit, SearchResults
from ..query import content_terms
from ..store import ReadView

__all__ = ["EVIDENCE_THRESHOLDS", "EvidenceThresholds", "evidence_level", "terms_in_hits",
           "with_evidence"]


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
                  thresholds: EvidenceThresholds) -> SearchResults:
    """The search results: ``hits`` with the evidence level and the signals it came from."""
    contained = terms_in_hits(view, hits, terms, term_pids)
    level, signals = evidence_level(terms, contained, best_similarity, thresholds)
    res = SearchResults(hits, terms=terms, evidence=level)
    res.signals = signals
    return res
