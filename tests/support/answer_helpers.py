"""The extractive answer of a list of sources, as the facade composes it: the answer-bearing
decision chooses the quotes (``decide.answer_bearing``, here without vectors: a keyword-only
choice), the extractive generator writes them (``answer.extractive_answer``)."""

from __future__ import annotations

from collections.abc import Sequence

from evidex.answer import Source, extractive_answer
from evidex.decide import Calibration, PassageSupport, Question, answer_bearing, asked

#: Every quotable span may answer: these helpers test the choice and the writing, not the bar.
OPEN = Calibration(on_topic=-1.0, answer_bearing=-1.0, keyword_coverage=0.0)


def texts(sources: Sequence[Source]) -> list[str]:
    return [s.citation["quote"] for s in sources]


def extract(sources: Sequence[Source], support: Sequence[PassageSupport], question: str = "",
            max_sentences: int = 3) -> dict[str, object]:
    weights = dict(support[0].weights) if support else {}
    facts = Question(question, None, asked(question), (), weights, lambda t: t.lower().split())
    contexts = [(s.citation.get("title") or "", *s.citation.get("heading_path", ())) for s in sources]
    bearing = answer_bearing(texts(sources), contexts, support, facts, OPEN,
                             max_sentences=max_sentences)
    return extractive_answer(sources, bearing)
