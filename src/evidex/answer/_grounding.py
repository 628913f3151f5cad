"""Which sentences of a cited passage support a sentence of the answer.

One check for every generator: a released sentence is supported by a passage it cites when one
sentence of that passage, or two adjacent ones, contain at least ``SUPPORT_SHARE`` of the
answer sentence's content words (compared by light stems, so "returns" is backed by
"returned"). The supporting span is what the citation's ``sentence_start``/``sentence_end``
point at, so the page highlights the words that back the claim. A verbatim quote is found as
such (its own span). This is a grounding check on words, not proof of entailment.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..ingest import sentence_spans
from ..query import content_terms, stem

__all__ = ["SUPPORT_SHARE", "supporting_span"]

#: Share of an answer sentence's content words that the supporting passage sentence(s) must hold.
SUPPORT_SHARE = 0.5
_MARKERS = re.compile(r"(?<!\s)\s*\[\d{1,3}\]")  # from a run's start only: linear
_URLS = re.compile(r"(?:https?|ftp)://\S+|www\.\S+", re.IGNORECASE)


def _stems(text: str, terms_of: Callable[[str], list[str]]) -> set[str]:
    return {stem(t) for t in content_terms(terms_of(text))}


def supporting_span(sentence: str, passage: str, terms_of: Callable[[str], list[str]]
                    ) -> tuple[int, int] | None:
    """(start, end) in ``passage`` of the sentence(s) that support ``sentence`` (an answer
    sentence, markers allowed), or None when none does."""
    bare = _MARKERS.sub("", sentence).strip()
    at = passage.find(bare) if bare else -1
    if at >= 0:
        return at, at + len(bare)
    # Links are judged by the allowlist, not here; the words around them must be supported.
    wanted = _stems(_URLS.sub(" ", bare), terms_of)
    if not wanted:
        return None
    spans = sentence_spans(passage)
    sets = [_stems(passage[s:e], terms_of) for s, e in spans]
    best: tuple[float, int, int] | None = None
    for i, (s, _) in enumerate(spans):
        for j in (i, i + 1)[: len(spans) - i]:  # one sentence, then it and the next
            share = len(wanted & (sets[i] | sets[j])) / len(wanted)
            if share >= SUPPORT_SHARE and (best is None or share > best[0]):
                best = (share, s, spans[j][1])
    return None if best is None else (best[1], best[2])
