"""Query side of text handling: analyzers (text -> terms) and the query contract."""

from ._analyzers import ANALYZERS, Analyzer, content_terms, get_analyzer, words
from ._parse import DEFAULT_LIMITS, QueryLimits, parse_query

__all__ = [
    "ANALYZERS",
    "DEFAULT_LIMITS",
    "Analyzer",
    "QueryLimits",
    "content_terms",
    "get_analyzer",
    "parse_query",
    "words",
]
