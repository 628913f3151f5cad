"""The extractive answer of a list of sources, as the facade composes it: the answer-bearing
decision chooses the quotes (``decide.choose_sentences``), the extractive generator writes them
(``answer.extractive_answer``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evidex.answer import Source, extractive_answer
from evidex.decide import AnswerBearing, PassageSupport, choose_sentences


def texts(sources: Sequence[Source]) -> list[str]:
    return [s.citation["quote"] for s in sources]


def extract(sources: Sequence[Source], support: Sequence[PassageSupport],
            similar: Callable[[list[str]], Sequence[float]] | None = None,
            max_sentences: int = 3, number: bool = False) -> dict[str, object]:
    quotes, disagree = choose_sentences(texts(sources), support, similar, max_sentences, number)
    return extractive_answer(sources, AnswerBearing(bool(quotes), tuple(quotes), disagree))
