"""The answer-bearing decision as a pure function over a few texts (no store): the question's
facts, each text's support read by words, one calibration; shared by the decision tests."""

from __future__ import annotations

import numpy as np

from evidex.decide import (
    AnswerBearing,
    Calibration,
    Question,
    answer_bearing,
    asked,
    passage_support,
    term_weights,
)
from evidex.kb import QUESTION_LIMITS
from evidex.query import get_analyzer, parse_query

EN = get_analyzer("english")
CAL = Calibration(on_topic=0.5, answer_bearing=0.5, hub_weight=0.5, coverage_weight=0.1,
                  keyword_coverage=0.3)


def facts(question: str, df: dict[str, int] | None = None) -> Question:
    terms = tuple(EN.query_terms(parse_query(question, QUESTION_LIMITS)))
    return Question(question, "en", asked(question), terms, term_weights(terms, df or {}, 10, EN.terms),
                    EN.terms)


def decide_on(question: str, texts: list[str], cal: Calibration = CAL, **kw: object) -> AnswerBearing:
    q = facts(question)
    sup = [passage_support(t, (), EN.terms, q.weights, similarity=None, cross_language=False, keyword=0.0)
           for t in texts]
    return answer_bearing(texts, [()] * len(texts), sup, q, cal, **kw)  # type: ignore[arg-type]


def quoted(bearing: AnswerBearing, texts: list[str]) -> list[str]:
    return [texts[q.source][q.start:q.end] for q in bearing.quotes]


class Scores:
    """Scores each span by the first listed phrase it contains (0 otherwise); records calls."""

    def __init__(self, by_phrase: dict[str, float]) -> None:
        self.by_phrase = by_phrase
        self.read: list[list[str]] = []

    def __call__(self, question: str, texts: list[str]) -> np.ndarray:
        self.read.append(texts)
        return np.array([next((v for k, v in self.by_phrase.items() if k in t), 0.0) for t in texts])


#: Two passages for the reader's tests: the answer's sentence beside one that merely shares words.
READER_TEXTS = ["Returns are free of charge for members. You can return items within 30 days of delivery.",
                "Our stores open at 9:00. Returns can be dropped at any store."]
