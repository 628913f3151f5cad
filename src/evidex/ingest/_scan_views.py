"""Normalised views of a passage, and the gated rule the injection scanner matches with them.

Normalisation makes the usual disguises read as plain words before any pattern runs:

1. Unicode tag characters are decoded (they spell ASCII invisibly); NFKC maps fullwidth,
   mathematical and circled letters to ASCII; invisible characters are dropped and look-alike
   letters from Greek, Cyrillic and other scripts are folded to Latin (`_confusables`).
2. Words broken at a line end ("instruc-\\ntions") are joined, and runs of three or more single
   letters separated by spaces, dots, hyphens and the like ("i g n o r e", "I-g-n-o-r-e") are
   joined into one word.
3. ``lines`` keeps line breaks and case (role markers are recognised at line starts); ``flat``
   drops HTML tags, Markdown emphasis and line-leading list or quote markers, joins all lines
   with single spaces and lowercases (instructions spread over lines read as one sentence);
   ``skeleton`` keeps letters only, for a few long phrases broken into arbitrary chunks
   ("ig nore all pre vious instruc tions").

Scanning runs on every ingested passage, so it must stay cheap. Each `Rule` names the words its
pattern cannot match without (``words``: groups of words, a passage must have one word of every
group) and literal strings (``contains``: groups of strings, one of every group); the pattern runs
only when the passage has them. A gate word is a whole word of ``flat``; a gate word ending in
``*`` is a word start ("ignorier*" admits "ignoriere", "ignorieren"), for patterns that allow
inflections and compounds. Gating never changes a result, it only skips patterns that cannot
match: the tests compare gated and ungated scans over the corpus.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ._confusables import FOLD, decode_tags

__all__ = ["Rule", "Views", "normalise"]

View = Literal["raw", "lines", "low_lines", "flat", "skeleton"]


@dataclass(frozen=True, slots=True)
class Views:
    """The normalised forms of one passage that rules match against.

    ``lines`` and ``low_lines`` start with a line break, so that patterns for line starts can
    begin with a literal newline (which the regex engine finds quickly). ``words`` are the words
    of ``flat`` and ``gate_text`` is ``flat`` with separators as single spaces (for word starts).
    """

    raw: str
    lines: str
    low_lines: str
    flat: str
    skeleton: bytes
    words: frozenset[bytes]
    gate_text: bytes


_LETTER = r"[^\W\d_]"
_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
_TAG_CHARS = re.compile("[\U000e0000-\U000e007f]")
# The code point ranges that hold every key of FOLD (a class of ranges is quick to search; the
# text is folded only when it holds one of them).
_FOLDABLE = re.compile("[\u061c\u200b-\u200f\u00ab-\u024f\u0250-\u02af\u034f\u0370-\u058f"
                       "\u115f\u1160\u17b4\u17b5\u180b-\u180f\u1d00-\u1d2b\u1e00-\u1eff\u2010-\u203a\u2060-\u206f\u2212-\u22c5\u3164"
                       "\ua730-\ua7ff\ufe00-\ufe0f\ufe58\ufe63\ufeff\uff0d\uffa0\U0001d173-\U0001d17a"
                       "\U000e0000-\U000e01ef]")
# A letter, "-", optional blanks, a line break, a letter: the word goes on on the next line.
_LINE_END_HYPHEN = re.compile(rf"-(?<={_LETTER}-)[ \t]*\n[ \t]*(?={_LETTER})")
# Three or more single letters, each separated by 1-3 of space, dot, hyphen ... or one line break.
_SEP = r"[ \t.\-_*/|+~]"
_SPACED = re.compile(rf"(?<![^\W_]){_LETTER}(?:(?:{_SEP}{{1,3}}|\n){_LETTER}(?![^\W_])){{2,}}")
# Cheap pre-check for _SPACED on the gate bytes (separators already turned into spaces).
_SPACED_HINT = re.compile(rb" [a-z] {1,3}[a-z] {1,3}[a-z](?![a-z])")
_COMMENT_MARKS = re.compile(r"<!--|-->")
_TAG = re.compile(r"</?[A-Za-z][^<>\n]{0,200}>")
_LINE_MARKUP = re.compile(r"(?m)^[ \t]*(?:[>*+\-|]+|#{1,6}|\d{1,3}[.)])[ \t]+")
_EDGE_UNDERSCORE = re.compile(r"\b_+|_+\b")
# ASCII bytes that are not letters or digits read as spaces when the gate words are cut out;
# bytes of non-ASCII letters (umlauts, other scripts) stay part of their word.
_TO_SPACE = bytes(b if chr(b).isalnum() or b >= 0x80 else 0x20 for b in range(256))
_NOT_LETTER = bytes(b for b in range(128) if not chr(b).isalpha())


_RUN_PARTS = re.compile(rf"({_LETTER})((?:{_SEP}{{1,3}}|\n)?)")


def _join_letters(m: re.Match[str]) -> str:
    """Join a run of spaced-out letters; a separator other than the run's usual one ("i g n o r e
    a l l" with two spaces, "i-g-n-o-r-e a-l-l") still separates words."""
    parts = _RUN_PARTS.findall(m.group())
    usual = Counter(sep for _, sep in parts[:-1]).most_common(1)[0][0]
    return "".join(ch + (" " if sep and sep != usual else "") for ch, sep in parts)


def normalise(text: str) -> Views:
    """The views of ``text`` that rules match (see the module docstring)."""
    t = text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    if not t.isascii():
        if _TAG_CHARS.search(t):
            t = decode_tags(t)
        t = unicodedata.normalize("NFKC", t)
        if _FOLDABLE.search(t):
            t = t.translate(FOLD)
        if _COMBINING.search(t):
            t = _COMBINING.sub("", t)
    if "-" in t and "\n" in t:
        t = _LINE_END_HYPHEN.sub("", t)
    low = t.lower()
    if _SPACED_HINT.search(b" " + low.encode().translate(_TO_SPACE)):
        t = _SPACED.sub(_join_letters, t)
        low = t.lower()
    flat = low
    if "<" in flat:
        if "<!--" in flat or "-->" in flat:
            flat = _COMMENT_MARKS.sub(" ", flat)
        flat = _TAG.sub("", flat)
    if "\n" in flat:
        flat = _LINE_MARKUP.sub("", flat)
    flat = flat.replace("*", "").replace("~", "").replace("`", "")
    if "_" in flat:
        flat = _EDGE_UNDERSCORE.sub(" ", flat)
    flat = " ".join(flat.split())
    encoded = flat.encode()
    gate_words = encoded.translate(_TO_SPACE).split()
    return Views(text, "\n" + t, "\n" + low, flat, encoded.translate(None, _NOT_LETTER),
                 frozenset(gate_words), b" " + b" ".join(gate_words) + b" ")


Group = tuple[frozenset[bytes], tuple[bytes, ...]]


def gate(*groups: str) -> tuple[Group, ...]:
    """Gate word groups, each a space-separated string: whole words, or word starts ending in
    ``*``. A passage passes when it has a word of every group."""
    out = []
    for g in groups:
        words = g.lower().split()
        out.append((frozenset(w.encode() for w in words if not w.endswith("*")),
                    tuple(b" " + w[:-1].encode() for w in words if w.endswith("*"))))
    return tuple(out)


Check = Callable[[Views, "re.Match[str] | re.Match[bytes]"], bool]


@dataclass(frozen=True, slots=True)
class Rule:
    """A pattern on one view, run only when its gate passes; ``check`` vets each match.

    ``contains`` holds groups of literal strings looked up in the view ``contains_in``: the
    passage passes when it has one string of every group."""

    view: View
    pattern: re.Pattern[str] | re.Pattern[bytes]
    words: tuple[Group, ...] = ()
    contains: tuple[tuple[str, ...], ...] | tuple[tuple[bytes, ...], ...] = ()
    contains_in: View = "flat"
    check: Check | None = field(default=None)

    def __post_init__(self) -> None:
        if not all(isinstance(g, tuple) for g in self.contains):
            raise TypeError(f"contains must be groups (tuples) of strings: {self.contains!r}")

    def admits(self, v: Views) -> bool:
        """The passage has what the pattern cannot match without."""
        for exact, starts in self.words:
            if exact.isdisjoint(v.words) and not any(s in v.gate_text for s in starts):
                return False
        if self.contains:
            text = getattr(v, self.contains_in)
            return all(any(s in text for s in group) for group in self.contains)
        return True

    def hit(self, v: Views, gated: bool = True) -> bool:
        if gated and not self.admits(v):
            return False
        text = getattr(v, self.view)
        if self.check is None:
            return self.pattern.search(text) is not None
        return any(self.check(v, m) for m in self.pattern.finditer(text))
