"""The extractive generator: no model, deterministic, writes the spans the answer-bearing
decision chose (``decide.answer_bearing``) with their [n] markers, as a reader should see them
(``decide.shown``: no Markdown emphasis, heading marks, bullets or table pipes; the citation's
offsets still point at the span in the source); when the sources disagree, "Sources disagree."
first.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from ..decide import AnswerBearing, shown, table_header
from ..ingest import sentence_spans
from ._types import Source

__all__ = ["DISAGREE_TEXT", "extractive_answer"]

#: What the answer says before quoting sources that state different values.
DISAGREE_TEXT = "Sources disagree."


def extractive_answer(sources: Sequence[Source], bearing: AnswerBearing) -> dict[str, object]:
    """Output in the same shape a model must produce: {"answer": ..., "citations": [...]}, for
    the quotes ``bearing`` chose (its ``source`` indexes ``sources``)."""
    quotes = bearing.quotes
    if not quotes:
        return {"answer": "", "citations": []}
    parts = [DISAGREE_TEXT] if bearing.disagree else []
    # Passages in the order they were first quoted; within one, quotes in its own order.
    first: dict[int, int] = {}
    for q in quotes:
        first.setdefault(q.source, len(first))
    ordered = sorted(quotes, key=lambda q: (first[q.source], q.start))
    for q in ordered:
        src = sources[q.source]
        # Each sentence of a quote (and each line: a step, a table row) carries the marker of
        # its source, as the output contract reads sentences.
        quote = src.citation["quote"]
        said = shown(quote[q.start:q.end], table_header(quote, q.start))
        parts.extend(f"{said[a:b]} [{src.n}]" for a, b in sentence_spans(said))
    # Each quote stays one sentence to the output contract: a quoted line without final
    # punctuation (a list item), or one before a quote that opens in lower case, ends with a
    # line break rather than a space.
    text = parts[0]
    for prev, part in itertools.pairwise(parts):
        ends = re.search(r"[.!?]\s*\[\d{1,3}\]$", prev) or prev == DISAGREE_TEXT
        text += (" " if ends and not part[:1].islower() else "\n") + part
    return {"answer": text, "citations": sorted({sources[q.source].n for q in quotes})}
