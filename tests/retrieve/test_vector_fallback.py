"""Hybrid search keeps answering when the vector leg cannot: an embedder made slow on purpose
(and a slow vector search) past ``retrieval.vector.timeout_ms``, and a keyword-only store, give
the keyword ranking with ``fallback: keyword`` and why, on a real SQLite store."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cli_runner import run_cli
from deadline_store import STAFF, TEXTS, docs, fresh, warm_store
from evidex import KnowledgeBase
from evidex.embed import get_embedder


@pytest.fixture
def store(tmp_path: Path) -> KnowledgeBase:
    return warm_store(tmp_path / "kb.db")


@pytest.fixture
def slow_embedder(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The store's embedder, made to take ``delay[0]`` seconds per query embedding."""
    embedder = get_embedder("hash-test")
    real = embedder.embed_queries
    delay = [0.0]

    def slow(texts):  # type: ignore[no-untyped-def]
        time.sleep(delay[0])
        return real(texts)

    monkeypatch.setattr(embedder, "embed_queries", slow)
    return delay


@pytest.fixture
def held_embedder(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, threading.Event]]:
    """The store's embedder, made to hold each query embedding until ``release`` is set (a
    hang guard of minutes); ``finished`` is set when a held one has finished."""
    embedder = get_embedder("hash-test")
    real = embedder.embed_queries
    gate = {"release": threading.Event(), "finished": threading.Event()}

    def held(texts):  # type: ignore[no-untyped-def]
        gate["release"].wait(300)
        try:
            return real(texts)
        finally:
            gate["finished"].set()

    monkeypatch.setattr(embedder, "embed_queries", held)
    yield gate
    gate["release"].set()


def ranking(hits) -> list[tuple[str, int]]:  # type: ignore[no-untyped-def]
    return [(h.document_id, h.passage) for h in hits]


def test_a_fast_vector_leg_is_fused_and_says_no_fallback(
        store: KnowledgeBase, slow_embedder: list[float]) -> None:
    slow_embedder[0] = 0.05
    store.vector_timeout_ms = 30_000
    res = store.search(STAFF, fresh("return boots refund"), explain=True)
    assert res.fallback is None and res.signals["similarity"] is not None
    assert any("vector" in (h.explain or {}) for h in res)


def test_a_slow_query_embedding_falls_back_to_the_keyword_ranking(
        store: KnowledgeBase, held_embedder: dict[str, threading.Event]) -> None:
    store.vector_timeout_ms = 100
    query = fresh("return boots refund")
    res = store.search(STAFF, query, explain=True)
    # The search did not wait for the embedding: it is still held (not how fast it answered).
    assert not held_embedder["finished"].is_set(), "the search waited for the slow embedding"
    held_embedder["release"].set()
    assert res.fallback == {"fallback": "keyword", "reason": "vector_timeout",
                            "detail": "the query embedding did not finish within "
                                      "retrieval.vector.timeout_ms (100 ms)"}
    keyword = store.search(STAFF, query, mode="keyword", explain=True)
    assert ranking(res) == ranking(keyword) and res[0].document_id == "returns"
    # The evidence decision used keyword signals only: no similarity, the keyword level.
    assert res.signals == keyword.signals and res.signals["similarity"] is None
    assert res.evidence == keyword.evidence
    assert all(set(h.explain or {}) <= {"fused_score", "keyword"} for h in res)


def test_an_answer_past_the_deadline_says_so_in_its_trace(
        store: KnowledgeBase, slow_embedder: list[float]) -> None:
    """The answer's trace (``ask --json``, ``POST /v1/answer``) says the keyword fallback and
    why, as the search does: an answer decided on keyword signals alone is not mistaken for a
    fused one."""
    slow_embedder[0] = 3.0
    store.vector_timeout_ms = 100
    ans = store.answer(STAFF, fresh("Can unworn boots be returned for a refund?"))
    assert ans.trace is not None and ans.trace["signals"]["similarity"] is None
    assert ans.trace["fallback"] == {"fallback": "keyword", "reason": "vector_timeout",
                                     "detail": "the query embedding did not finish within "
                                               "retrieval.vector.timeout_ms (100 ms)"}
    slow_embedder[0] = 0.0
    store.vector_timeout_ms = 30_000
    fused = store.answer(STAFF, fresh("Can unworn boots be returned for a refund?"))
    assert fused.trace is not None and fused.trace["fallback"] is None


def test_the_vector_mode_is_not_bounded_and_raises_nothing(
        store: KnowledgeBase, slow_embedder: list[float]) -> None:
    slow_embedder[0] = 0.3
    store.vector_timeout_ms = 10
    res = store.search(STAFF, fresh("jacket zips"), mode="vector")
    assert res.fallback is None and len(res) > 0


def test_a_keyword_only_store_answers_hybrid_searches_by_keywords(tmp_path: Path) -> None:
    with KnowledgeBase.open(tmp_path / "kw.db", embedder="none") as kb:
        kb.ingest(docs(), split="heading")
        res = kb.search(STAFF, "points checkout")
        assert res.fallback is not None and res.fallback["reason"] == "no_vectors"
        assert ranking(res) == ranking(kb.search(STAFF, "points checkout", mode="keyword"))
        assert res[0].document_id == "club"


def test_evidex_search_on_a_keyword_only_store_works_in_its_default_mode(tmp_path: Path) -> None:
    db = str(tmp_path / "kw.db")
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in TEXTS.items():
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
    run_cli("--embedder", "none", "ingest", folder, "--tenant", "acme", "--groups", "staff", db=db,
            check=True)
    out = run_cli("search", "free repairs jackets", "--tenant", "acme", "--groups", "staff",
                  "--visibilities", "public,internal", db=db, check=True).stdout
    assert out.startswith("fallback: keyword (no_vectors: this store is keyword-only")
    assert "repairs" in out.splitlines()[2]
    data = json.loads(run_cli("search", "free repairs", "--tenant", "acme", "--groups", "staff",
                              "--visibilities", "public,internal", "--json", db=db, check=True).stdout)
    assert data["fallback"]["reason"] == "no_vectors" and data["hits"][0]["document_id"] == "repairs.md"


def test_a_timeout_is_not_a_silent_change_of_results_when_fast(store: KnowledgeBase) -> None:
    """Same query, generous deadline: the fused ranking, identical to no deadline at all."""
    query = fresh("boots refund days")
    store.vector_timeout_ms = None
    unbounded = store.search(STAFF, query, evidence=True)
    store.vector_timeout_ms = 60_000
    bounded = store.search(STAFF, query, evidence=True)
    assert ranking(bounded) == ranking(unbounded) and bounded.fallback is None
    assert np.isclose(bounded.signals["similarity"], unbounded.signals["similarity"])


