"""Ranking: permission-exact BM25, exact filtered vector search, rank fusion, evidence."""

from ._access import Allowed, allowed_signatures
from ._bm25 import BM25, BM25Params
from ._evidence import EVIDENCE_THRESHOLDS, EvidenceThresholds, evidence_level
from ._fusion import DEFAULT_FUSION, FUSIONS, Fusion, Leg, fuse
from ._search import Candidates, hits_from, keyword_candidates
from ._select import select_top
from ._vector import vector_candidates

__all__ = [
    "BM25",
    "DEFAULT_FUSION",
    "EVIDENCE_THRESHOLDS",
    "FUSIONS",
    "Allowed",
    "BM25Params",
    "Candidates",
    "EvidenceThresholds",
    "Fusion",
    "Leg",
    "allowed_signatures",
    "evidence_level",
    "fuse",
    "hits_from",
    "keyword_candidates",
    "select_top",
    "vector_candidates",
]
