"""`ask --explain` prints the decisions of any trace: also one decided without cosines (a
keyword-only store, or a search whose vector leg missed its deadline on a busy machine), whose
passages were compared by sentence coverage and carry no "score"."""

from __future__ import annotations

from evidex.cli._output import decision_lines


def _trace(scores: dict, thresholds: dict) -> dict:
    passage = {"n": 1, "document_id": "returns", "passage": 2, "rank": 1, "scores": scores,
               "thresholds": thresholds, "cross_language": False, "on_topic": True}
    return {"available": 1, "decision": {"on_topic": {"verdict": True, "passages": [passage]},
                                         "answer_bearing": None}}


def test_a_passage_decided_by_its_cosine_shows_its_score_and_parts() -> None:
    lines = decision_lines(_trace({"score": 0.41, "similarity": 0.8, "hubness": 0.6, "coverage": 0.5},
                                  {"score": 0.228}))
    assert lines[0] == "on topic: yes (a passage's score must reach 0.228)"
    assert lines[1] == "  [1] returns #2: 0.410 (similarity 0.800, hubness 0.600, coverage 0.500) on topic"


def test_a_passage_decided_by_words_alone_shows_its_coverage() -> None:
    lines = decision_lines(_trace({"sentence_coverage": 0.75}, {"sentence_coverage": 0.6}))
    assert lines[0] == "on topic: yes (a passage's sentence coverage must reach 0.6)"
    assert lines[1] == "  [1] returns #2: 0.750 () on topic"
