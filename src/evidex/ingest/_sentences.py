"""Sentence boundaries: one rule for the passages evidex quotes and the answers it checks.

The extractive generator quotes whole sentences of a passage and the output contract checks the
answer sentence by sentence; both use these boundaries, so a quoted unit is exactly one sentence
to the contract and its marker belongs to all of it. A sentence ends after ``.``, ``!`` or ``?``
(and any ``[n]`` markers right after it) before whitespace, or at a line break (list items and
headings are units of their own); "e.g. the", "P. chabaudi" or "z. B. die" do not end one,
because a lower-case letter follows. Nor does an ordinal written with a period, as German writes
them: a one- or two-digit number before a month ("am 5. Mai 1189", "1. September") or after an
article or preposition ("im 19. Jahrhundert", "in der 85. Minute"), or a list item's number at
the start of a line ("1. Sign in"); "aged 68. The" still ends one.
"""

from __future__ import annotations

import re

__all__ = ["sentence_spans"]

_MONTHS = ("januar|jänner|februar|märz|april|mai|juni|juli|august|september|oktober|november|"
           "dezember|january|february|march|may|june|july|october|december")
_ARTICLES = ("am|im|vom|zum|beim|der|die|das|dem|den|des|zur|ihrer|ihrem|ihre|ihren|seiner|seinem|"
             "seine|seinen|bis|seit|ab|nach|vor|um|an|in|ins|auf|bei|jede[mnrs]?")
#: Text before a period that makes it an ordinal's: "<article> 19" or "<line start> 1".
_ORDINAL_BEFORE = re.compile(rf"(?:(?:^|\s)(?:{_ARTICLES})\s+|(?:^|\n)[ \t]*)\d{{1,2}}\.$", re.IGNORECASE)
_NUMBER_BEFORE = re.compile(r"(?:^|[\s(])\d{1,2}\.$")
_MONTH_AFTER = re.compile(rf"(?:{_MONTHS})\b", re.IGNORECASE)

_SENTENCE_END = re.compile(
    r"(?<=[.!?])(?:[ \t]*(?:\[\d{1,3}\])+)?\s+(?=\S)(?!\[\d{1,3}\])"  # after . ! ? (+ markers)
    r"|(?:[ \t]*(?:\[\d{1,3}\])+)?[ \t]*\n\s*"  # or at a line break: list items are sentences
)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every sentence of ``text``, in order, without surrounding whitespace:
    ``text[start:end]`` is the sentence, trailing markers included."""
    out: list[tuple[int, int]] = []
    pos = 0
    for m in _SENTENCE_END.finditer(text):
        if "\n" not in m.group(0) and (text[m.end(): m.end() + 1].islower()
                                       or _ordinal(text, m.start(), m.end())):
            continue  # an abbreviation or an ordinal, not the end of a claim
        _add(text, pos, m.end(), out)
        pos = m.end()
    _add(text, pos, len(text), out)
    return out


def _ordinal(text: str, dot: int, after: int) -> bool:
    """The text before ``dot`` ends in an ordinal (see the module docstring)."""
    pos = max(0, dot - 24)
    if not _NUMBER_BEFORE.search(text, pos, dot):
        return False
    return bool(_MONTH_AFTER.match(text, after) or _ORDINAL_BEFORE.search(text, pos, dot))


def _add(text: str, start: int, end: int, out: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        out.append((start, end))
