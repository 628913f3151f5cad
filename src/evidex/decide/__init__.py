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

The parts of that measure a caller builds on, exported for it: ``asked`` (what a question asks
for: a place, a number, a procedure...), ``term_weights`` (a question's idf weight per stem),
``passage_support`` (one passage's lexical evidence for those weights), ``coverage`` (the
weighted share of the question's stems a text holds) and ``spans`` (a passage's candidate
quotes). A caller that builds a ``Question`` itself (the first two make one) or checks a
passage the way the decisions do uses these rather than the modules behind them.
"""

from ._bearing import AnswerBearing, Reading, answer_bearing
from ._calibration import Calibration, calibration
from ._decide import Question, depth, evidence
from ._language import guess_language
from ._meaning import in_context
from ._probes import Probes, probe_texts
from ._spans import shown, spans, table_header
from ._support import PassageSupport, coverage, passage_support, term_weights
from ._topic import on_topic
from ._types import asked

__all__ = [
    "AnswerBearing",
    "Calibration",
    "PassageSupport",
    "Probes",
    "Question",
    "Reading",
    "answer_bearing",
    "asked",
    "calibration",
    "coverage",
    "depth",
    "evidence",
    "guess_language",
    "in_context",
    "on_topic",
    "passage_support",
    "probe_texts",
    "shown",
    "spans",
    "table_header",
    "term_weights",
]
