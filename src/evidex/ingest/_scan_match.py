"""Building blocks shared by the injection scanner's rule modules (`_scan_steer`, `_scan_leak`):
pattern helpers, and the checks that vet a match where plain wording is ambiguous (a negation
just before it, a declarative subject, the rest of its sentence).
"""

from __future__ import annotations

import re

from ._scan_views import Check, Rule, Views, gate

__all__ = ["alt", "declarative", "flat", "negated", "noun_use", "requested", "sentence", "words_between"]


def alt(*words: str) -> str:
    return "(?:" + "|".join(words) + ")"


def words_between(n: int) -> str:
    """Up to ``n`` intervening words (lazy), ending before the next word."""
    return rf"(?:\W+\w+){{0,{n}}}?\W+"


def flat(pattern: str, *words: str, contains: tuple[tuple[str, ...], ...] = (),
         check: Check | None = None) -> Rule:
    """A rule on the ``flat`` view, gated by word groups (see `_scan_views.gate`)."""
    return Rule("flat", re.compile(pattern), gate(*words), contains, "flat", check)


_NEG = re.compile(r"\b(?:not|never|no|nie|nicht|niemals|nobody|niemandem|niemand|keine[nmrs]?|kein)"
                  r"\b(?:\W+\w+){0,2}\W*$|n't\W+(?:\w+\W+){0,2}$")
_DETERMINER = re.compile(r"\b(?:a|an|the|this|that|our|your|its|my|each|every)\W+$")
_SENTENCE_END = re.compile(r"[.!?\n](?:\s|$)")


_SUBJECT = re.compile(r"\b(?:we|they|he|she|it|who|which|that|i|one)\W+(?:(?:may|might|can|could|will|would|"
                      r"shall|should|must|do|does|did|also|only|sometimes|generally|usually)\W+)?$")


def declarative(v: Views, m: re.Match[str]) -> bool:
    """The verb states what someone does ("we disclose personal data where the law requires it"),
    rather than asking for it."""
    return _SUBJECT.search(v.flat, max(0, m.start() - 30), m.start()) is not None


def negated(v: Views, m: re.Match[str]) -> bool:
    """The match is in the scope of a negation just before it ("never send passwords")."""
    return bool(_NEG.search(v.flat, max(0, m.start() - 40), m.start()))


def noun_use(v: Views, m: re.Match[str]) -> bool:
    """The verb is used as a noun ("a copy of your data", "the dump")."""
    return _DETERMINER.search(v.flat, max(0, m.start() - 8), m.start()) is not None


def sentence(v: Views, m: re.Match[str], after: int = 160) -> str:
    """The match and the rest of its sentence (for cues that may follow the object)."""
    end = _SENTENCE_END.search(v.flat, m.end(), m.end() + after)
    return v.flat[m.start():end.start() if end else m.end() + after]


def requested(v: Views, m: re.Match[str]) -> bool:
    """The verb at ``m`` asks for something: not negated, not a noun, not a statement of fact."""
    return not (negated(v, m) or noun_use(v, m) or declarative(v, m))
