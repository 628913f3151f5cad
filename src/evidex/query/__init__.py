"""Query side of text handling: analyzers (text -> terms) and the query contract."""

from ._analyzers import (
    ANALYZERS,
    AUTO,
    Analyzer,
    analyzer_for,
    content_terms,
    get_analyzer,
    language_key,
    words,
)
from ._language import BASE_LANGUAGES, identify, identify_document, primary
from ._parse import DEFAULT_LIMITS, QueryLimits, parse_query

__all__ = [
    "ANALYZERS",
    "AUTO",
    "BASE_LANGUAGES",
    "DEFAULT_LIMITS",
    "Analyzer",
    "QueryLimits",
    "analyzer_for",
    "content_terms",
    "get_analyzer",
    "identify",
    "identify_document",
    "language_key",
    "parse_query",
    "primary",
    "words",
]
