"""Sentence boundaries: one rule for the passages evidex quotes and the answers it checks.

The extractive generator quotes whole sentences of a passage and the output contract checks the
answer sentence by sentence; both use these boundaries, so a quoted unit is exactly one sentence
to the contract and its marker belongs to all of it. A sentence ends after ``.``, ``!`` or ``?``
(and any ``[n]`` markers right after it) before whitespace, or at a line break (list items and
headings are units of their own); "e.g. the", "P. chabaudi" or "z. B. die" do not end one,
because a lower-case letter follows. Nor does an ordinal written with a period, as German writes
them: a date's day ("am 3. Januar 2027", "bis 24. Dezember"), whose ordinal dot is followed by
the month's capital; or a one- or two-digit number after an article or preposition ("im 19.
Jahrhundert", "in der 85. Minute"). "aged 68. The" still ends one, and so does a list item's
number ("1. Sign in": the item is quoted without it).
"""

from __future__ import annotations

import re

__all__ = ["sentence_spans"]

_SENTENCE_END = re.compile(
    r"(?<=[.!?])(?:[ \t]*(?:\[\d{1,3}\])+)?\s+(?=\S)(?!\[\d{1,3}\])"  # after . ! ? (+ markers)
    # or at a line break: list items are sentences. Tried only from the start of a run of blanks
    # (the lookbehind) and over at most 8 markers, so neither a long run of blanks nor one of
    # markers is scanned again from each of its characters (where such a match starts does not
    # matter: a sentence ends where the match ends).
    r"|(?<![ \t])(?:[ \t]*(?:\[\d{1,3}\]){1,8})?[ \t]*\n\s*"
)

#: A day of the month written as a German ordinal, right before the boundary ("am 3."). At most
#: three characters: each boundary searches only that far back (``_DAY_REACH``), so splitting
#: stays linear in the text's length.
_DAY_REACH = 3
_DAY = re.compile(r"(?<![\d.])(?:[1-9]|[12]\d|3[01])\.$")
_MONTH = re.compile(r"(?:Januar|Jänner|Februar|Feber|März|April|Mai|Juni|Juli|August|September|"
                    r"Oktober|November|Dezember)\b")
_ARTICLES = ("am|im|vom|zum|beim|der|die|das|dem|den|des|zur|ihrer|ihrem|ihre|ihren|seiner|seinem|"
             "seine|seinen|bis|seit|ab|nach|vor|um|an|in|ins|auf|bei|jede[mnrs]?")
#: An ordinal right before the boundary: "<article or preposition> 19.".
_ORDINAL = re.compile(rf"(?:^|\s)(?:{_ARTICLES})\s+\d{{1,2}}\.$", re.IGNORECASE)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every sentence of ``text``, in order, without surrounding whitespace:
    ``text[start:end]`` is the sentence, trailing markers included."""
    out: list[tuple[int, int]] = []
    pos = 0
    for m in _SENTENCE_END.finditer(text):
        if "\n" not in m.group(0) and text[m.end(): m.end() + 1].islower():
            continue  # an abbreviation, not the end of a claim
        if m.group(0).isspace() and "\n" not in m.group(0) and (
                (_DAY.search(text, max(0, m.start() - _DAY_REACH), m.start()) and _MONTH.match(text, m.end()))
                or _ORDINAL.search(text, max(0, m.start() - 24), m.start())):
            continue  # "3. Januar", "in der 85. Minute": an ordinal
        _add(text, pos, m.end(), out)
        pos = m.end()
    _add(text, pos, len(text), out)
    return out


def _add(text: str, start: int, end: int, out: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        out.append((start, end))
