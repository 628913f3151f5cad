"""The answer decision, between retrieval and answering (retrieve <- decide <- answer).

Two decisions, named and separate:

* ``on_topic``: do the passages the caller may read cover the question's subject at all? It
  gates every generator (a language model is called only for an on-topic question).
* ``answer_bearing`` (extractive answers only): does a sentence state what is asked? A model
  decides that itself, and its output is then checked sentence by sentence.

Both read what ``evidence`` measures over a ``retrieve.Ranking``, computed only when asked (a
search with ``evidence=True``, ``explain`` or the ranker, or an answer): the question's facts
(``Question``: language, whether it asks for a number, idf weights), each passage's support
(``_support``), the second-stage ranker (``_rerank``) and the comparison by meaning
(``_meaning``).
"""

from ._bearing import AnswerBearing, Quote, answer_bearing, choose_sentences
from ._decide import Evidence, Question, depth, evidence, question
from ._evidence import (
    DECIDE_DEPTH,
    EVIDENCE_THRESHOLDS,
    EvidenceThresholds,
    OnTopic,
    PassageDecision,
    answer_score,
    on_topic,
    supports,
)
from ._language import guess_language
from ._meaning import SentenceVectors, in_context
from ._rerank import RERANK_DEPTH
from ._support import PassageSupport, SentenceMatch, passage_support, term_weights

__all__ = [
    "DECIDE_DEPTH",
    "EVIDENCE_THRESHOLDS",
    "RERANK_DEPTH",
    "AnswerBearing",
    "Evidence",
    "EvidenceThresholds",
    "OnTopic",
    "PassageDecision",
    "PassageSupport",
    "Question",
    "Quote",
    "SentenceMatch",
    "SentenceVectors",
    "answer_bearing",
    "answer_score",
    "choose_sentences",
    "depth",
    "evidence",
    "guess_language",
    "in_context",
    "on_topic",
    "passage_support",
    "question",
    "supports",
    "term_weights",
]
