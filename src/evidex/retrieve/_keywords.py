"""What the keyword leg matches: the query's terms per language of the passages they are matched
against.

A store with one analyzer (``exact``, ``english``, ``german``) analyses the query once and
matches it against every passage. Under ``auto`` each passage was analysed with its document's
language (``query.analyzer_for``), so a query is analysed per language and each analysis is
matched only against the passages of that language, with BM25 statistics (passage count,
average length, document frequencies) over exactly the passages of that language the actor may
read (``allowed_signatures(..., language=...)``): a German stem never meets an English passage,
and German passages do not dilute the idf of an English query.

Which languages: the one the query is identified in (``query.identify_share``, among the
languages of the passages the actor may read), when the identifier is sure (``SURE``), plus the
passages without a known language (analysed ``exact``), which no identified query could
otherwise reach by keyword. A query the identifier cannot place (a code such as "ERR-401", a
single word, "refund NOT"), or one in a language none of the readable passages is in, is
analysed for every readable language. Passages are partitioned by
language, so the parts' candidates never overlap and their scores are concatenated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..model import Actor, Filters
from ..query import AUTO, analyzer_for, identify_share, language_key
from ..store import ReadView
from ._access import allowed_signatures

__all__ = ["SURE", "KeywordQuery", "keyword_query", "readable_languages"]

#: The identifier's share of the probability among the readable languages above which a query
#: is analysed for its language alone; a less certain query is analysed for every readable
#: language, because a wrong choice would hide every passage of the right one from the keyword
#: leg, while an extra analysis costs little.
SURE = 0.95


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
    def terms(self) -> list[str]:
        """Every part's terms, distinct and sorted (what evidence and explain report)."""
        return sorted({t for _, ts in self.parts for t in ts})


def readable_languages(view: ReadView, actor: Actor, filters: Filters) -> set[str]:
    """Language keys of the passages ``actor`` may read under ``filters`` ("" for none):
    nothing about other passages, not even their languages, reaches a query's analysis."""
    allowed = allowed_signatures(view, actor, filters)
    table = allowed.table
    return {language_key(s.language) for s in view.signatures(actor.tenant)
            if s.passages and s.id + 1 < len(table) and table[s.id + 1]}


def keyword_query(view: ReadView, actor: Actor, filters: Filters, analyzer: str,
                  words: list[str], query: str) -> KeywordQuery:
    """``words`` (the parsed query) analysed as the store ``analyzer`` requires (see the module
    docstring); ``query`` is the text the language is identified from."""
    if analyzer != AUTO:
        return KeywordQuery.of(analyzer_for(analyzer, None).query_terms(words))
    languages = readable_languages(view, actor, filters)
    found, share = identify_share(query, languages) if query else (None, 0.0)
    if found is not None and found in languages and share >= SURE:
        chosen = [found, *([""] if "" in languages and found != "" else [])]
    else:
        chosen = sorted(languages) or [""]
    return KeywordQuery(tuple((key, tuple(analyzer_for(AUTO, key).query_terms(words)))
                              for key in chosen), found, True)
