"""Query side of text handling: analyzers (text -> terms) and the query contract."""

from ._analyzers import ANALYZERS, Analyzer, content_terms, get_analyzer, words
from ._language import BASE_LANGUAGES, identify, primary
from ._parse import DEFAULT_LIMITS, QueryLimits, parse_query

__all__ = [
    "ANALYZERS",
    "BASE_LANGUAGES",
    "DEFAULT_LIMITS",
    "Analyzer",
    "QueryLimits",
    "content_terms",
    "get_analyzer",
    "identify",
    "parse_query",
    "primary",
    "words",
]
