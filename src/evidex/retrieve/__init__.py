"""Ranking: permission-exact BM25, exact filtered vector search, rank fusion, evidence.

``search`` is the one entry point for a whole search (any mode) inside a read view; the other
names are its parts, for callers (benchmarks, tests) that measure or check one of them alone.
"""

from ..ingest import sentence_spans
from ._access import Allowed, allowed_signatures
from ._bm25 import BM25, BM25Params
from ._deadline import Deadline, Fallback, embed_within
from ._evidence import (
    DECIDE_DEPTH,
    EVIDENCE_THRESHOLDS,
    EvidenceThresholds,
    answer_score,
    evidence_level,
    supports,
    terms_in_hits,
)
from ._fusion import DEFAULT_FUSION, FUSIONS, Fusion, Leg, fuse
from ._hybrid import MODES, search
from ._keywords import KeywordQuery, keyword_query
from ._language import FUNCTION_WORDS, guess_language
from ._meaning import (
    SENTENCES_PER_PASSAGE,
    SentenceVectors,
    candidate_sentences,
    in_context,
    with_meaning,
)
from ._rerank import RANKER, RERANK_DEPTH, RankerWeights, rank_score, rerank_order
from ._search import Candidates, hits_from, keyword_candidates
from ._select import select_top
from ._support import (
    PassageSupport,
    SentenceMatch,
    coverage,
    has_number,
    is_title_line,
    passage_support,
    stem,
    term_weights,
    wants_number,
)
from ._vector import vector_candidates

__all__ = [
    "BM25",
    "DECIDE_DEPTH",
    "DEFAULT_FUSION",
    "EVIDENCE_THRESHOLDS",
    "FUNCTION_WORDS",
    "FUSIONS",
    "MODES",
    "RANKER",
    "RERANK_DEPTH",
    "SENTENCES_PER_PASSAGE",
    "Allowed",
    "BM25Params",
    "Candidates",
    "Deadline",
    "EvidenceThresholds",
    "Fallback",
    "Fusion",
    "KeywordQuery",
    "Leg",
    "PassageSupport",
    "RankerWeights",
    "SentenceMatch",
    "SentenceVectors",
    "allowed_signatures",
    "answer_score",
    "candidate_sentences",
    "coverage",
    "embed_within",
    "evidence_level",
    "fuse",
    "guess_language",
    "has_number",
    "hits_from",
    "in_context",
    "is_title_line",
    "keyword_candidates",
    "keyword_query",
    "passage_support",
    "rank_score",
    "rerank_order",
    "search",
    "select_top",
    "sentence_spans",
    "stem",
    "supports",
    "term_weights",
    "terms_in_hits",
    "vector_candidates",
    "wants_number",
    "with_meaning",
]
