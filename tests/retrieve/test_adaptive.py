"""Adaptive fusion (issue 28): the weighting rule, the signals it reads, language identification,
and what a search shows of them (library, explain, CLI).

Stores use the deterministic hash-test embedder (tests/support/stores.py) on real SQLite files; the real
model's cross-language behaviour is in test_real_models.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from actors import PUBLIC_INTERNAL
from cli_runner import run_cli
from evidex import Actor, Document, KnowledgeBase, QueryError
from evidex.query import identify
from evidex.retrieve import Fusion, Leg, fuse
from evidex.retrieve._adaptive import AdaptiveRule, QuerySignals, leg_weights
from evidex.retrieve._signals import query_signals
from small_stores import two_language_store

A = Actor("acme", frozenset({"staff"}), visibilities=PUBLIC_INTERNAL)  # the documents are internal
RULE = AdaptiveRule()


# -- the rule ---------------------------------------------------------------------------------
def test_weights_sum_to_one_and_stay_in_range() -> None:
    for cov in np.linspace(0, 1, 11):
        for foreign in (0.0, 0.5, 1.0):
            for peak in (0.0, 0.5, 1.0):
                w = leg_weights(QuerySignals(float(cov), foreign, peak, "en"))
                assert 0.0 <= w.keyword <= RULE.ceiling
                assert w.keyword + w.vector == pytest.approx(1.0)
                assert w.why and all(isinstance(r, str) for r in w.why)


def test_keyword_weight_grows_with_coverage_and_peak_and_falls_with_foreign_passages() -> None:
    def kw(cov: float, foreign: float = 0.0, peak: float = 0.5) -> float:
        return leg_weights(QuerySignals(cov, foreign, peak, "de")).keyword

    covs = [kw(c) for c in np.linspace(0, 1, 21)]
    assert covs == sorted(covs) and covs[0] < covs[-1]
    assert kw(0.9, peak=1.0) > kw(0.9, peak=0.1)
    assert kw(0.3, foreign=1.0) < kw(0.3, foreign=0.0)


def test_nothing_useful_from_the_keyword_leg_gives_about_the_vector_ranking() -> None:
    w = leg_weights(QuerySignals(0.0, 0.0, 0.0))
    assert w.keyword == pytest.approx(RULE.floor) and w.keyword <= 0.2
    # A cross-language query: a foreign vector top and a keyword leg that covers only a name.
    cross = leg_weights(QuerySignals(0.15, 1.0, 1.0, "de", known=0.4))
    assert cross.keyword == pytest.approx(RULE.floor)
    assert any("not in the query's language (de)" in r for r in cross.why)
    assert any("cover 15% of the query" in r for r in cross.why)


def test_an_exact_code_covered_and_peaked_gets_more_than_equal_keyword_weight() -> None:
    w = leg_weights(QuerySignals(1.0, 0.0, 1.0, None))
    assert w.keyword > 0.5 and any("stands out" in r for r in w.why)


def test_rule_is_pure() -> None:
    s = QuerySignals(0.42, 0.3, 0.7, "en")
    assert leg_weights(s) == leg_weights(s)


def test_adaptive_fuse_needs_weights_and_uses_them() -> None:
    kw = Leg("keyword", np.array([1, 2]), np.array([3.0, 1.0]))
    vec = Leg("vector", np.array([2, 1]), np.array([0.9, 0.1]))
    with pytest.raises(ValueError, match="weights"):
        fuse([kw, vec], Fusion("adaptive"))
    vector_only = leg_weights(QuerySignals(0.0, 0.0, 0.0), AdaptiveRule(floor=0.0))
    pids, scores, _ = fuse([kw, vec], Fusion("adaptive"), vector_only)
    assert dict(zip(pids.tolist(), scores.tolist(), strict=True)) == {1: 0.0, 2: 1.0}


# -- the signals --------------------------------------------------------------------------------
def test_coverage_is_idf_weighted_and_unknown_words_count_against_it() -> None:
    kw = Leg("keyword", np.array([7, 8]), np.array([5.0, 1.0]))
    vec = Leg("vector", np.array([8, 7]), np.array([0.9, 0.8]))
    term_pids = {"benz": np.array([7], dtype=np.int64), "patent": np.array([7, 8, 9], dtype=np.int64),
                 "erhielt": np.array([], dtype=np.int64)}
    s = query_signals(kw, vec, ["benz", "erhielt", "patent"], term_pids, 100, {7: "en", 8: "en"}, "de")
    assert 0.3 < s.coverage < 0.7  # benz and patent found, erhielt (rarest: absent) not
    assert s.foreign == 1.0 and s.peak == pytest.approx(0.8) and s.language == "de"
    full = query_signals(kw, vec, ["benz", "patent"], term_pids, 100, {7: "en", 8: None}, "en")
    assert full.coverage == 1.0 and full.foreign == 0.0
    # Unknown passage languages and an unidentified query give no language signal.
    assert query_signals(kw, vec, ["benz"], term_pids, 100, {7: None, 8: None}, "de").foreign == 0.0
    assert query_signals(kw, vec, ["benz"], term_pids, 100, {7: "en", 8: "en"}, None).foreign == 0.0
    empty = Leg("keyword", np.array([], dtype=np.int64), np.array([]))
    assert query_signals(empty, vec, ["x"], {}, 100, {}, "en").coverage == 0.0
    assert query_signals(None, vec, [], None, 100, {}, "en").coverage == 0.0


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
