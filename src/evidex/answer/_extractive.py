"""The extractive generator: no model, deterministic, quotes sentences verbatim.

It picks the sentences of the context sources that share the most (rare) words with the
question, and quotes each verbatim with its [n] marker. When no sentence shares a word (a
paraphrase matched by the vector leg), it quotes the opening sentences of the best-ranked source,
which retrieval judged relevant. Sentences with markup, links or bracketed numbers are skipped,
since the output contract would reject them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from ..query import content_terms
from ._contract import sentences
from ._types import Source

__all__ = ["extractive_answer", "split_sentences"]

#: Markup and links would break the output contract, and so would a bracketed number quoted
#: from the source (reference lists such as "... since 1979 [14]."): the contract reads it as
#: a citation marker of a source that was never provided.
_SKIP = re.compile(r"<\s*/?\s*[a-zA-Z]|&[a-zA-Z]+;|https?://|www\.|\[\d{1,3}\]", re.IGNORECASE)


def split_sentences(text: str) -> list[str]:
    out = []
    # The validator's own sentence boundaries: a quoted unit is exactly one sentence to the
    # output contract, so its marker always belongs to all of it.
    for part in sentences(text):
        s = part.strip()
        if s and not s.startswith("#") and len(re.findall(r"[^\W_]+", s)) >= 3 and not _SKIP.search(s):
            out.append(s)
    return out


def extractive_answer(
    question_terms: list[str],
    sources: list[Source],
    terms_of: Callable[[str], list[str]],
    max_sentences: int = 3,
) -> dict[str, object]:
    """Output in the same shape a model must produce: {"answer": ..., "citations": [...]}."""
    cands: list[tuple[int, int, str, set[str]]] = []  # (source rank, position, sentence, terms)
    for rank, src in enumerate(sources):
        for pos, sent in enumerate(split_sentences(src.citation["quote"])):
            cands.append((rank, pos, sent, set(terms_of(sent))))
    if not cands:
        return {"answer": "", "citations": []}
    wanted = set(content_terms(question_terms))
    sf = {t: sum(t in c[3] for c in cands) for t in wanted}
    weight = {t: math.log(1 + len(cands) / (1 + sf[t])) for t in wanted}
    scored = []
    for rank, pos, sent, terms in cands:
        overlap = sum(weight[t] for t in terms & wanted)
        if overlap > 0:
            # A little preference for better-ranked sources and earlier sentences breaks ties
            # deterministically without outweighing a real word match.
            scored.append((overlap - 0.01 * rank - 0.001 * pos, rank, pos, sent))
    if scored:
        scored.sort(key=lambda x: (-x[0], x[1], x[2]))
        best = scored[0][0]
        # Retrieval ranked the sources with more than word overlap (both legs), so the answer
        # quotes the best sentence of each of the best-ranked sources that match well, in rank
        # order, rather than the sentences with the most shared words wherever they are.
        per_source: dict[int, tuple[float, int, int, str]] = {}
        for x in scored:
            if x[0] >= 0.5 * best and x[1] not in per_source:
                per_source[x[1]] = x
        chosen = [(r, p, s) for _, r, p, s in sorted(per_source.values(), key=lambda x: x[1])]
        chosen = chosen[:max_sentences]
    else:
        first = [c for c in cands if c[0] == 0][:2]
        chosen = [(r, p, s) for r, p, s, _ in first]
    chosen.sort(key=lambda x: (x[0], x[1]))
    parts = [f"{s} [{sources[r].n}]" for r, _, s in chosen]
    cited = sorted({sources[r].n for r, _, _ in chosen})
    out = {"answer": " ".join(parts), "citations": cited}
    return out
