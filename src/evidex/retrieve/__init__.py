"""Ranking: permission-exact BM25, exact filtered vector search, rank fusion, evidence.

``search`` is the one entry point for a whole search (any mode) inside a read view; the other
names are its parts, for callers (benchmarks, tests) that measure or check one of them alone.
"""

from ._access import Allowed, allowed_signatures
from ._bm25 import BM25, BM25Params
from ._conflicts import find_conflicts
from ._deadline import Deadline, Fallback, embed_within
from ._evidence import EVIDENCE_THRESHOLDS, EvidenceThresholds, evidence_level, terms_in_hits
from ._fusion import DEFAULT_FUSION, FUSIONS, Fusion, Leg, fuse
from ._hybrid import MODES, search
from ._search import Candidates, hits_from, keyword_candidates
from ._select import select_top
from ._vector import vector_candidates

__all__ = [
    "BM25",
    "DEFAULT_FUSION",
    "EVIDENCE_THRESHOLDS",
    "FUSIONS",
    "MODES",
    "Allowed",
    "BM25Params",
    "Candidates",
    "Deadline",
    "EvidenceThresholds",
    "Fallback",
    "Fusion",
    "Leg",
    "allowed_signatures",
    "embed_within",
    "evidence_level",
    "find_conflicts",
    "fuse",
    "hits_from",
    "keyword_candidates",
    "search",
    "select_top",
    "terms_in_hits",
    "vector_candidates",
]
