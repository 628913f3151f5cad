"""Analyzers: how text becomes index terms.

An analyzer is a per-store setting fixed when the store is created, because postings written with
one analyzer cannot be searched with another. Each analyzer is a small pipeline over the same word
splitter so the query contract (what a "word" is) never depends on the analyzer:

* ``exact`` (default): NFC, lower case, words = runs of letters and digits. No stemming, no
  diacritic folding, no stop words: "Übernachtung" and "Ubernachtung" are different words, and
  "ERR-401" is the two words "err" and "401".
* ``english``: ``exact`` words minus Lucene's 33 English stop words and single-character words,
  then the Snowball English stemmer ("returns", "returned" -> "return").
* ``german``: ``exact`` words minus the Snowball German stop words, then the Snowball German
  stemmer, which also removes umlauts after stemming ("Übernachtungen" -> "ubernachtung"), so
  in this analyzer "Ubernachtung" does match "Übernachtung".
* ``auto`` (default of new stores): each passage with its document's language
  (``analyzer_for``): English and German as above, every other language PyStemmer ships a
  Snowball stemmer for with that stemmer (no stop words: evidex ships lists for English and
  German only, and BM25's idf already weighs common words down), and ``exact`` for a passage
  without a language or in one no stemmer knows. Text whose language is not known (the
  analyzer's own ``terms``) is analysed ``exact``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import Stemmer

from ..model import StoreError, nfc_lower
from ._text import stopwords

__all__ = ["ANALYZERS", "AUTO", "Analyzer", "analyzer_for", "get_analyzer", "language_key",
           "words"]

# \w in Python's re is Unicode-aware letters, digits and underscore; excluding "_" leaves runs of
# letters and digits, which is the contract's definition of a word.
_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """Normalised words of ``text`` in order (duplicates kept)."""
    return _WORD.findall(nfc_lower(text))


@dataclass(frozen=True)
class Analyzer:
    name: str
    terms_of: Callable[[list[str]], list[str]]

    def terms(self, text: str) -> list[str]:
        """Index terms of ``text`` in order (duplicates kept, for term frequencies)."""
        return self.terms_of(words(text))

    def query_terms(self, query_words: list[str]) -> list[str]:
        """Distinct index terms for already-validated query words, sorted so that scores are
        summed in the same order on every run (bit-for-bit reproducible floats)."""
        return sorted(set(self.terms_of(query_words)))


def _exact() -> Analyzer:
    return Analyzer("exact", lambda ws: ws)


def _snowball(name: str, lang: str, min_len: int) -> Analyzer:
    stop = stopwords(lang)
    stemmer = Stemmer.Stemmer(name)
    stem_words = stemmer.stemWords

    def terms_of(ws: list[str]) -> list[str]:
        return stem_words([w for w in ws if len(w) >= min_len and w not in stop])

    return Analyzer(name, terms_of)


#: The per-language analyzer's name.
AUTO = "auto"

_FACTORIES: dict[str, Callable[[], Analyzer]] = {
    AUTO: lambda: Analyzer(AUTO, lambda ws: ws),
    "exact": _exact,
    "english": lambda: _snowball("english", "en", 2),
    "german": lambda: _snowball("german", "de", 1),
}

ANALYZERS: tuple[str, ...] = tuple(_FACTORIES)


@cache
def get_analyzer(name: str) -> Analyzer:
    try:
        factory = _FACTORIES[name]
    except (KeyError, TypeError):
        raise StoreError(f"unknown analyzer {name!r}; known analyzers: {', '.join(ANALYZERS)}") from None
    return factory()


def language_key(tag: str | None) -> str:
    """The primary subtag of a language tag in lower case ("de-CH" -> "de"; "" for none): the
    partition of passages the ``auto`` analyzer analyses, and keeps statistics for, alike."""
    return tag.split("-", 1)[0].lower() if tag else ""


def _stemmer_name(key: str) -> str | None:
    """``key`` when PyStemmer has a Snowball stemmer for that ISO 639 code, else None. Only
    codes of two or three letters are asked: Snowball also knows names such as "porter"."""
    if not (2 <= len(key) <= 3 and key.isalpha()):
        return None
    try:
        Stemmer.Stemmer(key)
    except KeyError:
        return None
    return key


@cache
def analyzer_for(name: str, language: str | None) -> Analyzer:
    """The analyzer of a passage (or a query) in ``language`` under the store analyzer ``name``:
    the store's own analyzer unless it is ``auto`` (see the module docstring)."""
    if name != AUTO:
        return get_analyzer(name)
    key = language_key(language)
    if key in ("en", "de"):
        return get_analyzer("english" if key == "en" else "german")
    stemmer = _stemmer_name(key)
    if stemmer is None:
        return get_analyzer("exact")
    stem_words = Stemmer.Stemmer(stemmer).stemWords
    return Analyzer(f"snowball-{key}", stem_words)
