"""The query contract: what a search string may be, checked before anything touches the store.

Queries are bags of words, never a query language: ``OR``, ``NOT``, quotes, parentheses,
``field:`` prefixes, ``*`` and ``^`` are plain words or separators. That keeps every query
literal (no operator injection into a full-text engine) and makes the limits meaningful.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import QueryError, check_unicode
from ._analyzers import words

__all__ = ["QueryLimits", "parse_query"]


@dataclass(frozen=True, slots=True)
class QueryLimits:
    """Bounds that keep a single query cheap and predictable. Evaluation on BEIR sets, whose
    queries are whole sentences, raises them explicitly; the service never does."""

    max_chars: int = 200
    max_words: int = 12
    max_word_chars: int = 40


DEFAULT_LIMITS = QueryLimits()
#: Unicode's control characters (general category Cc): exactly these two ranges, a set the
#: Unicode stability policy keeps fixed. One scan in C, not a category lookup per character
#: in Python (which every search pays).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def parse_query(query: object, limits: QueryLimits = DEFAULT_LIMITS) -> list[str]:
    """Validate ``query`` and return its distinct normalised words in first-seen order.

    Returns ``[]`` for an empty or punctuation-only query (a search for nothing finds nothing).
    """
    if not isinstance(query, str):
        raise QueryError(f"query must be a string, got {type(query).__name__}")
    if len(query) > limits.max_chars:
        raise QueryError(f"query is {len(query)} characters long; the limit is {limits.max_chars}")
    control = _CONTROL.search(query)
    if control:
        raise QueryError(f"query contains the control character U+{ord(control.group()):04X}")
    check_unicode(query, "the query", QueryError)
    distinct = list(dict.fromkeys(words(query)))
    if len(distinct) > limits.max_words:
        raise QueryError(
            f"query has {len(distinct)} distinct words; the limit is {limits.max_words}"
        )
    for w in distinct:
        if len(w) > limits.max_word_chars:
            raise QueryError(
                f"query word {w[:20]!r}... is {len(w)} characters long; the limit is "
                f"{limits.max_word_chars}"
            )
    return distinct
