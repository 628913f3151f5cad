"""Ranking: permission-exact BM25, selection and (later) vector and fused legs."""

from ._access import Allowed, allowed_signatures
from ._bm25 import BM25, BM25Params
from ._search import Candidates, hits_from, keyword_candidates
from ._select import select_top

__all__ = [
    "BM25",
    "Allowed",
    "BM25Params",
    "Candidates",
    "allowed_signatures",
    "hits_from",
    "keyword_candidates",
    "select_top",
]
