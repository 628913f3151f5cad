"""The answer decision, between retrieval and answering (retrieve <- decide <- answer).

Two decisions, named and separate:

* ``on_topic`` (``_topic``): do the passages the caller may read cover the question's subject
  at all? It gates every generator (a language model is called only for an on-topic question).
* ``answer_bearing`` (``_bearing``, extractive answers only): does a span of those passages
  state what is asked, and which? A model decides that itself, and its output is then checked
  sentence by sentence.

Both read what ``evidence`` measures over a ``retrieve.Ranking``, computed only when asked (a
search with ``evidence=True``, ``explain`` or the ranker, or an answer): the question's facts
(``Question``: language, what it asks for, idf weights), each passage's support
(``_support``), the second-stage ranker (``_rerank``) and each passage's closeness to questions
in general (``_probes``). The values they compare with are per embedding model
(``_calibration``).
"""

from ._bearing import CHOOSE_DEPTH, FEATURES, AnswerBearing, Candidate, Quote, answer_bearing, candidates
from ._calibration import CALIBRATIONS, Calibration, calibration
from ._decide import Evidence, Question, depth, evidence, question
from ._language import guess_language
from ._meaning import SentenceVectors, in_context
from ._probes import Probes, probe_texts
from ._rerank import RERANK_DEPTH
from ._spans import shown
from ._support import PassageSupport, SentenceMatch
from ._topic import TOPIC_DEPTH, OnTopic, PassageDecision, on_topic

__all__ = [
    "CALIBRATIONS",
    "CHOOSE_DEPTH",
    "FEATURES",
    "RERANK_DEPTH",
    "TOPIC_DEPTH",
    "AnswerBearing",
    "Calibration",
    "Candidate",
    "Evidence",
    "OnTopic",
    "PassageDecision",
    "PassageSupport",
    "Probes",
    "Question",
    "Quote",
    "SentenceMatch",
    "SentenceVectors",
    "answer_bearing",
    "calibration",
    "candidates",
    "depth",
    "evidence",
    "guess_language",
    "in_context",
    "on_topic",
    "probe_texts",
    "question",
    "shown",
]
