"""Query side of text handling: analyzers (text -> terms), the query contract, and the text
normalisation (stop words, function words, light stems) every later layer shares."""

from ._analyzers import (
    ANALYZERS,
    AUTO,
    Analyzer,
    analyzer_for,
    get_analyzer,
    language_key,
    words,
)
from ._language import BASE_LANGUAGES, identify, identify_document, primary
from ._parse import DEFAULT_LIMITS, QueryLimits, parse_query
from ._text import (
    DE_FUNCTION_WORDS,
    EN_FUNCTION_WORDS,
    FUNCTION_WORDS,
    SUBJECT_STOPWORDS,
    content_terms,
    singular,
    stem,
    stopwords,
)

__all__ = [
    "ANALYZERS",
    "AUTO",
    "BASE_LANGUAGES",
    "DEFAULT_LIMITS",
    "DE_FUNCTION_WORDS",
    "EN_FUNCTION_WORDS",
    "FUNCTION_WORDS",
    "SUBJECT_STOPWORDS",
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
    "singular",
    "stem",
    "stopwords",
    "words",
]
