"""Which of English and German a question is written in, from its function words.

Answers need to know when the question's language differs from a passage's: then the passage
cannot contain the question's words, so word coverage says nothing either way, and the
multilingual model's cosine runs lower for the same relevance than within one language. This
is a small, deterministic hint, not a language identifier: it knows English and German function
words (and that umlauts and ß are German), and says None when they do not decide, e.g. for
keyword queries ("Eiffel tower height"); callers then treat the question as being in the
passage's language. A real identifier (issue 28) can replace it behind the same function.
"""

from __future__ import annotations

import re

__all__ = ["FUNCTION_WORDS", "guess_language"]

_EN = frozenset(str.split("""
a about after all also am an and any are as at be been before being but by can could did do
does done during each for from had has have having he her him his how i if in into is it its
long many may me might more most much must my no not of often old on or other our over shall
she should so some such than that the their them then there these they this those to us was we
were what when where which who whom whose why will with would you your
"""))
_DE = frozenset(str.split("""
aber als am an auch auf aus bei beim bis da das dem den der des dessen die dies diese dieser
dieses du durch ein eine einem einen einer eines er es für gab gegen gibt hat hatte hatten
haben ich ihr im in ins ist kann kein keine können konnte man mit muss nach nicht noch nur oder
ohne seit sein seine seiner sich sie sind soll sollte über um und unter viel viele vom von vor
war waren wann warum was welche welchem welchen welcher welches wem wen wer werden wessen wie
wieso wieviel wir wird wo woher wohin wurde wurden worden zu zum zur
"""))
#: Function words of both languages: they carry no evidence of their own, whichever analyzer
#: indexed the collection (so "did" or "viele" never count as a covered or missing word).
FUNCTION_WORDS = _EN | _DE
_WORD = re.compile(r"[^\W\d_]+")


def guess_language(text: str) -> str | None:
    """"en", "de", or None when the function words do not decide."""
    low = text.lower()
    words = _WORD.findall(low)
    en = sum(w in _EN for w in words)
    de = sum(w in _DE for w in words) + 2 * sum(ch in "äöüß" for ch in low)
    if en == de:
        return None
    return "en" if en > de else "de"
