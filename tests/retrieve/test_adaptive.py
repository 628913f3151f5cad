"""Adaptive fusion (issue 28): the weighting rule, the signals it reads, language identification,
and what a search shows of them (library, explain, CLI).

Stores use the deterministic hash-test embedder (tests/support/stores.py) on real SQLite files; the real
model's cross-language behaviour is in test_real_models.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors import PUBLIC_INTERNAL
from cli_runner import run_cli
from evidex import Actor, Document, KnowledgeBase, QueryError
from evidex.query import identify
from small_stores import two_language_store

A = Actor("acme", frozenset({"staff"}), visibilities=PUBLIC_INTERNAL)  # the documents are internal


def test_language_identification_among_candidates() -> None:
    assert identify("Kann ich eine getragene Jacke zurückgeben?", ["en"]) == "de"
    assert identify("Can I return a worn jacket?", ["de"]) == "en"
    assert identify("Mauerbau Datum", ["en", "de"]) == "de"
    assert identify("Où se trouve la gare centrale de Lyon ?", ["fr", "en"]) == "fr"
    # Codes, numbers and single words are in no language.
    for text in ("ERR-401", "B2", "Jacke", "2024 401", ""):
        assert identify(text, ["en", "de"]) is None


# -- through a search -------------------------------------------------------------------------
def test_adaptive_is_the_default_and_explain_shows_the_weights(tmp_path: Path) -> None:
    kb = two_language_store(tmp_path)
    res = kb.search(A, "Kann ich eine getragene Jacke zurückgeben?", explain=True, max_per_document=None)
    assert res.weights is not None and res.weights.keyword < 0.5
    assert all(h.explain is not None and h.explain["weights"] == res.weights.as_dict() for h in res)
    adaptive = kb.search(A, "Kann ich eine getragene Jacke zurückgeben?", fusion="adaptive",
                         max_per_document=None)
    assert [(h.document_id, h.passage, h.score) for h in adaptive] == [
        (h.document_id, h.passage, h.score) for h in res]
    # The fixed fusions stay selectable and carry no weights.
    for method in ("convex", "rrf"):
        fixed = kb.search(A, "return worn jacket", fusion=method, explain=True)
        assert fixed.weights is None and all("weights" not in (h.explain or {}) for h in fixed)
    assert kb.search(A, "return", mode="keyword").weights is None
    with pytest.raises(QueryError):
        kb.search(A, "return", fusion="adaptiv")
    kb.close()


def test_a_query_the_keyword_leg_cannot_match_gets_the_vector_ranking(tmp_path: Path) -> None:
    kb = two_language_store(tmp_path)
    for q in ("Wie lange dauert die Lieferung nach Wien?", "quux zorble"):
        hybrid = kb.search(A, q, max_per_document=None, limit=10)
        vector = kb.search(A, q, max_per_document=None, limit=10, mode="vector")
        assert [(h.document_id, h.passage) for h in hybrid] == [(h.document_id, h.passage) for h in vector]
    kb.close()


def test_exact_code_keeps_its_keyword_hit_first(tmp_path: Path) -> None:
    kb = two_language_store(tmp_path)
    for q in ("ERR-401", "ERR-403", "err 401"):
        res = kb.search(A, q, explain=True, max_per_document=None)
        want = 1 if "401" in q else 2
        assert (res[0].document_id, res[0].passage) == ("errors", want), (q, res.weights)
    kb.close()


def test_permission_exact_languages(tmp_path: Path) -> None:
    """The query's language is chosen among the languages of what the actor may read only."""
    kb = KnowledgeBase.open(tmp_path / "kb.db")
    kb.ingest([Document("en", "acme", {"staff"}, "1", "Returns within thirty days.", language="en"),
               Document("fr", "acme", {"secret"}, "1", "Retours sous trente jours.", language="fr")])
    q = "retours sous trente jours"
    staff = kb.search(A, q, explain=True)
    both = kb.search(Actor("acme", frozenset({"staff", "secret"}), visibilities=PUBLIC_INTERNAL), q,
                     explain=True)
    assert staff.weights.language == "en" and both.weights.language == "fr"
    kb.close()


def test_cli_explain_prints_the_weights(tmp_path: Path) -> None:
    kb = two_language_store(tmp_path)
    kb.close()
    out = run_cli("search", "Kann ich eine getragene Jacke zurückgeben?", "--tenant", "acme",
                  "--groups", "staff", "--visibilities", "public,internal", "--explain",
                  db=tmp_path / "kb.db", check=True)
    assert "leg weights: keyword" in out.stdout and "(query language: de)" in out.stdout
    assert "0% of the query's words occur in the passages you may read" in out.stdout
    js = run_cli("search", "ERR-401", "--tenant", "acme", "--groups", "staff", "--visibilities",
                 "public,internal", "--explain", "--json", db=tmp_path / "kb.db", check=True)
    hits = json.loads(js.stdout)["hits"]
    assert hits[0]["explain"]["weights"]["keyword"] >= 0.5
