"""Text normalisation shared by ranking, support, conflict detection and the answer decision:
the stop-word lists, the function words, and the light stem. Written once here, so "what is a
word that carries no evidence" and "which words are the same word" have one answer everywhere.

* ``stopwords(lang)``: the shipped stop lists (``evidex/data/stopwords-<lang>.txt``; English is
  Lucene's, German Snowball's) that the ``english`` and ``german`` analyzers drop.
* ``FUNCTION_WORDS``: English and German function words ("did", "viele"), which carry no
  evidence of their own whichever analyzer indexed the collection (``EN_FUNCTION_WORDS`` and
  ``DE_FUNCTION_WORDS`` apart, for telling the two languages apart).
* ``content_terms``: analysed terms without the stop lists and question words, for places where
  a word's mere presence is read as evidence.
* ``stem``: a light, language-independent stem of an analysed term (without one plural or
  inflection ending, cut to five letters; numbers whole), so "returns" meets "returned" and
  "Rückgabe" meets "Rückgaben" whatever analyzer the store uses.
* ``singular``: the lighter stem conflict detection compares subjects by (a final plural "s"
  only); ``SUBJECT_STOPWORDS``: the words it never takes as naming a subject (function words
  and the units of the amounts it compares: "days", "euro").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache, lru_cache
from importlib import resources

__all__ = ["DE_FUNCTION_WORDS", "EN_FUNCTION_WORDS", "FUNCTION_WORDS", "SUBJECT_STOPWORDS",
           "content_terms", "singular", "stem", "stopwords"]


@cache
def stopwords(lang: str) -> frozenset[str]:
    """The shipped stop list of ``lang`` ("en" or "de")."""
    raw = resources.files("evidex").joinpath("data", f"stopwords-{lang}.txt").read_text("utf-8")
    return frozenset(
        line.strip() for line in raw.splitlines() if line.strip() and not line.startswith("#")
    )


EN_FUNCTION_WORDS = frozenset(str.split("""
a about after all also am an and any are as at be been before being but by can could did do
does done during each for from had has have having he her him his how i if in into is it its
long many may me might more most much must my no not of often old on or other our over shall
she should so some such than that the their them then there these they this those to us was we
were what when where which who whom whose why will with would you your
"""))
DE_FUNCTION_WORDS = frozenset(str.split("""
aber als am an auch auf aus bei beim bis da das dem den der des dessen die dies diese dieser
dieses du durch ein eine einem einen einer eines er es für gab gegen gibt hat hatte hatten
haben ich ihr im in ins ist kann kein keine können konnte man mit muss nach nicht noch nur oder
ohne seit sein seine seiner sich sie sind soll sollte über um und unter viel viele vom von vor
war waren wann warum was welche welchem welchen welcher welches wem wen wer werden wessen wie
wieso wieviel wir wird wo woher wohin wurde wurden worden zu zum zur
"""))
#: Function words of both languages: they carry no evidence of their own, whichever analyzer
#: indexed the collection (so "did" or "viele" never count as a covered or missing word).
FUNCTION_WORDS = EN_FUNCTION_WORDS | DE_FUNCTION_WORDS


@cache
def _all_stopwords() -> frozenset[str]:
    return stopwords("en") | stopwords("de") | frozenset(
        {"what", "how", "when", "where", "who", "which", "why", "can", "do", "does", "i", "my",
         "you", "your", "we", "our", "me", "wie", "was", "wann", "wo", "wer", "welche", "warum",
         "kann", "ich", "mein", "meine"})


def content_terms(terms: Sequence[str]) -> list[str]:
    """``terms`` without English and German function words ("what", "the", "ist", "die").

    Used where a word's mere presence is read as evidence (coverage, sentence choice), so that
    "What is the capital of France?" is not half covered by any English page. If nothing but
    function words remain, all terms are kept.
    """
    stop = _all_stopwords()
    kept = [t for t in terms if t not in stop]
    return kept or list(terms)


_ENDING = re.compile(r"(?:ing|ed|es|en|er|e|n|s)$")


@lru_cache(maxsize=1 << 16)
def stem(term: str) -> str:
    """The analyzer's term without one plural or inflection ending (when three letters remain),
    cut to five letters; numbers stay whole ("2014" is not "2015")."""
    if term.isdigit():
        return term
    cut = _ENDING.sub("", term)
    return (cut if len(cut) >= 3 else term)[:5]


def singular(term: str) -> str:
    """``term`` without a final plural "s" (not "ss"; terms of five letters or more)."""
    return term[:-1] if len(term) > 4 and term.endswith("s") and not term.endswith("ss") else term


#: Words conflict detection never takes as naming a subject: function words of both
#: languages and the units of the amounts it compares (two pages about "days" are not
#: about one thing).
SUBJECT_STOPWORDS = frozenset(" ".join([
    "the and for with from that this are you your our can not will may any each per more less",
    "than after before about into out also only when which what how who use using has have its",
    "there their them been were was all but der die das und oder ein eine einen einem einer mit",
    "von für ist sind bei nach wir sie ihr ihre den dem des auf aus als auch wie wenn nur noch",
    "minute minutes minut hour hours day days week weeks month months year years stund stunde",
    "stunden tag tage tagen woche wochen woch monat monate monaten jahr jahre jahren uhr eur euro",
    "euros",
]).split())
