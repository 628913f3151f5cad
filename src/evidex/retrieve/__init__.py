"""Ranking: permission-exact BM25, exact filtered vector search, rank fusion.

``search(view, bm25, query)`` ranks one ``Query`` (built once per search by ``make_query``)
inside a read view and returns a ``Ranking``; whether the passages answer the question is
``evidex.decide``'s. The other names are the parts other packages use.
"""

from ._access import Access, Allowed, access, allowed_signatures
from ._bm25 import BM25, BM25Params, idf
from ._deadline import Deadline, Fallback, embed_within, within
from ._fusion import DEFAULT_FUSION, FUSIONS, Fusion, Leg, fuse
from ._keyword_leg import Candidates, hits_from, keyword_candidates
from ._keywords import KeywordQuery, keyword_query
from ._query import Query, make_query
from ._search import MODES, Ranking, search
from ._select import select_top
from ._vector import vector_candidates

__all__ = [
    "BM25",
    "DEFAULT_FUSION",
    "FUSIONS",
    "MODES",
    "Access",
    "Allowed",
    "BM25Params",
    "Candidates",
    "Deadline",
    "Fallback",
    "Fusion",
    "KeywordQuery",
    "Leg",
    "Query",
    "Ranking",
    "access",
    "allowed_signatures",
    "embed_within",
    "fuse",
    "hits_from",
    "idf",
    "keyword_candidates",
    "keyword_query",
    "make_query",
    "search",
    "select_top",
    "vector_candidates",
    "within",
]
