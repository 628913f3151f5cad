"""What the keyword leg matches: the query's terms per language of the passages they are matched
against.

A store with one analyzer (``exact``, ``english``, ``german``) analyses the query once and
matches it against every passage. Under ``auto`` each passage was analysed with its document's
language (``query.analyzer_for``), so the query is analysed once per language of the passages
the actor may read, and each analysis is matched only against the passages of its language,
with BM25 statistics (passage count, average length, document frequencies) over exactly the
passages of that language the actor may read (``Access.by_language``): a
German stem never meets an English passage's terms, and German passages do not dilute the
statistics of English ones. Passages without a known language form one more part, analysed
``exact``. Passages are partitioned by language, so the parts' candidates never overlap and their
scores are concatenated.

Every readable language, not only the query's: restricted to the query's language, the keyword
leg of a question whose answer is in another language ranks unrelated passages of the query's
language with full confidence (every word known, the query covered), which adaptive fusion then
trusts; matched in every language, it finds the names and numbers the languages share and its
unknown words tell adaptive fusion to trust the vector leg (benchmarks/RESULTS.md,
development groups). The query's language is still identified (``query.identify``, among the
readable languages) for adaptive fusion and for measuring coverage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..query import AUTO, analyzer_for, identify
from ._access import Access

__all__ = ["KeywordQuery", "keyword_query"]


@dataclass(frozen=True, slots=True)
class KeywordQuery:
    """The analysed query: (language key, or None for every passage; its distinct terms) per
    part, and the language the query was identified in (``identified`` says whether that was
    asked: a store with one analyzer does not need it)."""

    parts: tuple[tuple[str | None, tuple[str, ...]], ...]
    language: str | None = None
    identified: bool = False

    @classmethod
    def of(cls, terms: Sequence[str]) -> KeywordQuery:
        """One analysis matched against every passage."""
        return cls(((None, tuple(terms)),))

    @property
    def own_language(self) -> str | None:
        """The query's language when it is the only language matched (besides passages without
        one): coverage is then measured with its analysis; else None (``exact``)."""
        return self.language if [k for k, _ in self.parts if k] == [self.language] else None

    @property
    def terms(self) -> list[str]:
        """Every part's terms, distinct and sorted (what evidence and explain report)."""
        return sorted({t for _, ts in self.parts for t in ts})


def keyword_query(access: Access, analyzer: str, words: list[str], query: str) -> KeywordQuery:
    """``words`` (the parsed query) analysed as the store ``analyzer`` requires (see the module
    docstring); ``access`` (by language under ``auto``) says which languages the actor can read;
    ``query`` is the text the language is identified from."""
    if analyzer != AUTO:
        return KeywordQuery.of(analyzer_for(analyzer, None).query_terms(words))
    found = identify(query, access.languages) if query else None
    return KeywordQuery(tuple((key, tuple(analyzer_for(AUTO, key).query_terms(words)))
                              for key in sorted(access.languages) or [""]), found, True)
