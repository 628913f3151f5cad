"""Ranking: permission-exact BM25, exact filtered vector search, rank fusion.

``search(view, bm25, query)`` ranks one ``Query`` (built once per search by ``make_query``)
inside a read view and returns a ``Ranking``; whether the passages answer the question is
``evidex.decide``'s. The other names are the parts other packages use, and ``CENTRING``: the
weight of the language centring in a vector score, ``cos(q, p) + CENTRING * (max_M q . mean_M -
q . mean_L)`` for a passage in language L (ARCHITECTURE.md), for a caller that works a vector
score out or explains one.
"""

from ._access import access, allowed_signatures
from ._bm25 import BM25, BM25Params, idf
from ._deadline import Deadline, Fallback, embed_within, within
from ._fusion import DEFAULT_FUSION, Fusion, Leg, fuse
from ._keyword_leg import Candidates, hits_from, keyword_candidates
from ._query import Query, make_query
from ._search import MODES, Ranking, search
from ._select import select_top
from ._vector import CENTRING

__all__ = [
    "BM25",
    "CENTRING",
    "DEFAULT_FUSION",
    "MODES",
    "BM25Params",
    "Candidates",
    "Deadline",
    "Fallback",
    "Fusion",
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
    "make_query",
    "search",
    "select_top",
    "within",
]
