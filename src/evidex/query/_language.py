"""Which language a query (or a text) is in, among the languages that matter for a store.

The model is py3langid's (a naive Bayes classifier over byte n-grams, shipped inside the
package: nothing is downloaded). It is loaded on first use, once per process. Identification is
restricted to a candidate set (the store's languages plus the languages evidex ships stop words
for) because short queries are often ambiguous across the full set of languages the model
knows: "Mauerbau Datum" is German when the choice is English or German, and Luxembourgish when
the model may choose among all of them.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable
from typing import Any

from ._analyzers import words

__all__ = ["BASE_LANGUAGES", "identify", "identify_document", "primary"]

#: Languages always among the candidates: those evidex ships stop-word lists for.
BASE_LANGUAGES = frozenset({"en", "de"})

_lock = threading.Lock()
_model: Any = None


def primary(tag: str | None) -> str | None:
    """The primary language subtag of a tag, lower case ("de-CH" -> "de"); None stays None."""
    return tag.split("-", 1)[0].lower() if tag else None


def _identifier() -> Any:
    global _model
    with _lock:
        if _model is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _model = LanguageIdentifier.from_model_file(MODEL_FILE)
        return _model


#: A text needs this many words of letters only (two letters or more) to be identified: "ERR-401"
#: or "B2" is in no language, and a lone word is too often in several.
_MIN_WORDS = 2


def identify(text: str, candidates: Iterable[str | None] = ()) -> str | None:
    """The most likely language of ``text`` among ``candidates`` (language tags; their primary
    subtags count) and ``BASE_LANGUAGES``, or None for text too short to tell (fewer than two
    words of letters only: codes, numbers, a single word)."""
    if sum(1 for w in words(text) if len(w) > 1 and w.isalpha()) < _MIN_WORDS:
        return None
    wanted = frozenset(p for p in (primary(c) for c in candidates) if p) | BASE_LANGUAGES
    for label, _ in _identifier().rank(text):  # best first
        if label in wanted:
            return str(label)
    return None


#: A document's language is identified from its first characters (enough for a confident
#: decision; identification reads every byte n-gram, so whole books would cost seconds).
_DOCUMENT_CHARS = 4000
#: ... and only taken when the model is this sure among all its languages and the text has
#: this many words: titles and one-liners ("T-cell activation.") stay without a language.
_DOCUMENT_CONFIDENCE = 0.9
_DOCUMENT_WORDS = 5


def identify_document(text: str) -> str | None:
    """The language of a document that states none, among every language the model knows (a
    document, unlike a query, is long enough for that), or None when the model is not confident
    or the text is too short. Deterministic, so re-ingesting an unchanged document finds it
    unchanged."""
    head = text[:_DOCUMENT_CHARS]
    if sum(1 for w in words(head) if len(w) > 1 and w.isalpha()) < _DOCUMENT_WORDS:
        return None
    ranked = _identifier().rank(head)  # (label, log-probability), best first
    best = ranked[0][1]
    share = 1.0 / sum(math.exp(score - best) for _, score in ranked)  # the best's probability
    return str(ranked[0][0]) if share >= _DOCUMENT_CONFIDENCE else None
