"""Which of English and German a question is written in, from its function words.

Answers need to know when the question's language differs from a passage's: then the passage
cannot contain the question's words, so word coverage says nothing either way, and the
multilingual model's cosine runs lower for the same relevance than within one language. This
is a small, deterministic hint, not a language identifier: it knows English and German function
words (``query.EN_FUNCTION_WORDS``, ``query.DE_FUNCTION_WORDS``; and that umlauts and ß are
German), and says None when they do not decide, e.g. for keyword queries ("Eiffel tower
height"); callers then treat the question as being in the passage's language. A real identifier
(issue 28) can replace it behind the same function.
"""

from __future__ import annotations

import re

from ..query import DE_FUNCTION_WORDS, EN_FUNCTION_WORDS

__all__ = ["guess_language"]

_WORD = re.compile(r"[^\W\d_]+")


def guess_language(text: str) -> str | None:
    """"en", "de", or None when the function words do not decide."""
    low = text.lower()
    words = _WORD.findall(low)
    en = sum(w in EN_FUNCTION_WORDS for w in words)
    de = sum(w in DE_FUNCTION_WORDS for w in words) + 2 * sum(ch in "äöüß" for ch in low)
    if en == de:
        return None
    return "en" if en > de else "de"
