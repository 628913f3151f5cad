"""The answer stages' own internals (``evidex.answer._answer``): how the sources of an answer's
context are numbered, and the gate refusing a duplicate. Everything else about answers is tested
through the public names (test_answer.py and the other files here).

A ``slow`` mark on a test that starts no process keeps it where it was: it came from a
module whose imports mark all its tests slow (tests/conftest.py), and ``make test-fast`` runs
what it ran."""

from __future__ import annotations

import pytest

from evidex import Actor, AnswerSettings, EvidexError, KnowledgeBase, SearchResults
from evidex.answer._answer import gate, number_sources
from evidex.kb import QUESTION_LIMITS

WORN = "Can I return a worn jacket?"
DEFAULT = AnswerSettings()


def hits_for(kb: KnowledgeBase, actor: Actor, question: str, settings: AnswerSettings = DEFAULT
             ) -> SearchResults:
    """What kb.answer retrieves for ``question`` (same limit, mode and query limits)."""
    return kb.search(actor, question, limit=settings.top_k, mode=settings.mode, limits=QUESTION_LIMITS,
                     rerank=True)


@pytest.mark.slow
def test_number_sources_numbers_in_rank_order_and_rejects_duplicates(
        example_kb: KnowledgeBase, customer: Actor) -> None:
    hits = hits_for(example_kb, customer, WORN)
    assert len(hits) >= 2
    sources = number_sources(hits)
    assert [s.n for s in sources] == list(range(1, len(hits) + 1))
    assert [s.citation for s in sources] == [h.citation() for h in hits]
    dup = SearchResults([hits[0], hits[1], hits[0]], terms=hits.terms, evidence="strong")
    with pytest.raises(EvidexError, match="duplicate"):
        number_sources(dup)
    # A duplicate handed to the answer pipeline is refused, never answered from.
    with pytest.raises(EvidexError, match="duplicate"):
        gate(WORN, dup, DEFAULT, "extractive")
