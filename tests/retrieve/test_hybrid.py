"""Hybrid retrieval (issue 3), example by example: modes, explanation, fusion parameters, the
model recorded in the store, vectors kept in step with passages, evidence levels, the embedding
cache and re-embedding (library and command line).

Unless a test names a real model, stores use the deterministic hash-test embedder (tests/support/stores.py)
and real SQLite files in pytest's temporary folders.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from actors import PUBLIC_INTERNAL
from cli_runner import run_cli
from documents import doc
from evidex import Actor, KnowledgeBase, QueryError, StoreError
from evidex.embed import get_embedder
from evidex.retrieve import CENTRING

A = Actor("acme", frozenset({"staff"}), visibilities=PUBLIC_INTERNAL)
NOBODY = Actor("acme", frozenset({"interns"}), visibilities=PUBLIC_INTERNAL)


_doc = partial(doc, tenant="acme", groups=("staff",))


DOCS = [
    _doc("returns", "You can return most items within 30 days of delivery.\n\n"
         "Print the prepaid return label and drop the parcel at any post office.\n\n"
         "Refunds are issued within 5 business days after the returned item arrived."),
    _doc("plans", "Plan B1 includes 3 users and email support.\n\n"
         "Plan B2 includes 10 users, API access and phone support."),
    _doc("errors", "ERR-401 appears when your session has expired. Sign in again.\n\n"
         "ERR-403 means your plan does not include this feature."),
    _doc("travel", "Belege sind innerhalb von 30 Tagen einzureichen.\n\n"
         "Reisen zwei Personen gemeinsam, erhält jede ein Einzelzimmer.", language="de"),
]
N_PASSAGES = 9


@pytest.fixture
def store(tmp_path: Path) -> Iterator[KnowledgeBase]:
    kb = KnowledgeBase.open(tmp_path / "kb.db")
    kb.ingest(DOCS)
    yield kb
    kb.close()


def keys(hits: Sequence[Any]) -> list[tuple[str, int]]:
    return [(h.document_id, h.passage) for h in hits]


def full(hits: Sequence[Any]) -> list[tuple[str, str, int, float, int]]:
    return [(h.document_id, h.version, h.passage, h.score, h.rank) for h in hits]


class CountingEmbedder:
    """Records every passage text the process-wide ``model_id`` embedder (the one
    ``get_embedder`` hands every store) is asked to embed, once ``install``ed on it."""

    def __init__(self, model_id: str, fail_on: str | None = None) -> None:
        self.inner = get_embedder(model_id)
        self.embed = self.inner.embed_passages  # the model's own, bound before it is replaced
        self.passages: list[str] = []
        self.fail_on = fail_on

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail_on is not None and any(self.fail_on in t for t in texts):
            raise RuntimeError("embedding failed")
        self.passages.extend(texts)
        return self.embed(texts)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> CountingEmbedder:
        """For this test the embedder's passages go through ``embed_passages``."""
        monkeypatch.setattr(self.inner, "embed_passages", self.embed_passages)
        return self


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> CountingEmbedder:
    """Every KnowledgeBase in the test embeds hash-test passages through a counting wrapper."""
    return CountingEmbedder("hash-test").install(monkeypatch)


# -- modes and explanation -------------------------------------------------------------------------
def test_default_mode_is_hybrid(store: KnowledgeBase) -> None:
    default = store.search(A, "refunds", limit=6, max_per_document=None, explain=True)
    hybrid = store.search(A, "refunds", limit=6, max_per_document=None, explain=True, mode="hybrid")
    keyword = store.search(A, "refunds", limit=6, max_per_document=None, mode="keyword")
    vector = store.search(A, "refunds", limit=6, max_per_document=None, mode="vector")
    assert full(default) == full(hybrid)
    assert [h.explain for h in default] == [h.explain for h in hybrid]
    # Only one passage has the word, yet six come back: the vector leg is on by default ...
    assert keys(keyword) == [("returns", 3)]
    assert len(default) == 6
    # ... and the scores are fused convex scores (weighted min-max normalised leg scores, so
    # within 0..1), neither BM25 nor cosine: the only keyword match, which covers the query,
    # gets the whole keyword weight, at least half (adaptive fusion).
    assert all(0.0 <= h.score <= 1.0 for h in default)
    assert default.weights is not None and default.weights.keyword >= 0.5
    assert default[0].explain["keyword"]["rank"] == 1 and default[0].score >= default.weights.keyword
    assert full(default) != full(keyword) and full(default) != full(vector)
    assert default[0].explain is not None and set(default[0].explain) == {
        "fused_score", "keyword", "vector", "weights"}


def test_explain_reports_each_legs_rank_and_score_for_every_hit(store: KnowledgeBase) -> None:
    """limit 4 and window 1: each leg's window is max(window, limit) = 4 passages. Every hit
    carries the leg entries of exactly the windows it is in, with the rank and score that leg
    gives it when searched alone, and its fused score is the RRF sum of those ranks."""
    q = "plan users support"
    hits = store.search(A, q, limit=4, window=1, max_per_document=None, explain=True,
                       fusion="rrf")
    legs = {}
    for mode in ("keyword", "vector"):
        alone = store.search(A, q, limit=4, max_per_document=None, mode=mode)
        legs[mode] = {(h.document_id, h.passage): {"rank": h.rank, "score": h.score} for h in alone}
    # (The German passage about travel is in the vector leg on its language's footing: see
    # retrieve._vector.)
    assert keys(hits) == [("plans", 1), ("plans", 2), ("errors", 2), ("travel", 1)]
    for h in hits:
        assert h.explain is not None
        k = (h.document_id, h.passage)
        for mode, leg in legs.items():
            assert h.explain.get(mode) == leg.get(k), (k, mode, h.explain)
        assert h.explain["fused_score"] == h.score == sum(
            1 / (60 + e["rank"]) for m, e in h.explain.items() if m in legs)
    by_key = {(h.document_id, h.passage): h.explain or {} for h in hits}
    # A keyword match whose vector rank (5) is outside the vector window has no vector entry,
    # and a passage without the query words has no keyword entry.
    assert "vector" not in by_key[("errors", 2)] and "keyword" in by_key[("errors", 2)]
    assert "keyword" not in by_key[("travel", 1)] and "vector" in by_key[("travel", 1)]
    # In a store smaller than the window every hit has a vector entry.
    wide = store.search(A, q, limit=N_PASSAGES, max_per_document=None, explain=True)
    assert len(wide) == N_PASSAGES and all("vector" in (h.explain or {}) for h in wide)
    # Without explain there is no explanation.
    assert all(h.explain is None for h in store.search(A, q))


@pytest.mark.parametrize("mode", ["keyword", "vector"])
def test_single_leg_explain(store: KnowledgeBase, mode: str) -> None:
    hits = store.search(A, "plan users support", mode=mode, limit=5, max_per_document=None, explain=True)
    assert hits
    for h in hits:
        assert h.explain == {"fused_score": h.score, mode: {"rank": h.rank, "score": h.score}}


@pytest.mark.parametrize(("alpha", "like"), [(1.0, "vector"), (0.0, "keyword")])
def test_convex_alpha_extremes_order_like_one_leg(store: KnowledgeBase, alpha: float, like: str) -> None:
    """alpha weights the vector leg: alpha=1 orders the passages found by both legs exactly as
    vector search does, alpha=0 as keyword search does (and the two orders differ here)."""
    q = "plan users support"
    hits = store.search(A, q, fusion="convex", alpha=alpha, limit=N_PASSAGES, max_per_document=None,
                        explain=True)
    kw = keys(store.search(A, q, mode="keyword", limit=50, max_per_document=None))
    vec = keys(store.search(A, q, mode="vector", limit=50, max_per_document=None))
    both = set(kw) & set(vec)
    assert len(both) >= 3
    restricted = {"keyword": [k for k in kw if k in both], "vector": [k for k in vec if k in both]}
    assert restricted["keyword"] != restricted["vector"]  # the test can tell the two apart
    assert [k for k in keys(hits) if k in both] == restricted[like]
    # Convex scores are weighted min-max normalised leg scores: within 0..1.
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert hits[0].score == 1.0


def test_convex_and_rrf_differ_and_adaptive_is_the_default(store: KnowledgeBase) -> None:
    q = "return items days"
    rrf = store.search(A, q, limit=6, max_per_document=None, fusion="rrf")
    cvx = store.search(A, q, limit=6, max_per_document=None, fusion="convex", alpha=0.5)
    adaptive = store.search(A, q, limit=6, max_per_document=None, fusion="adaptive")
    default = store.search(A, q, limit=6, max_per_document=None)
    assert [h.score for h in rrf] != [h.score for h in cvx]
    assert [(h.document_id, h.passage, h.score) for h in default] == [
        (h.document_id, h.passage, h.score) for h in adaptive]
    assert default.weights is not None and cvx.weights is None and rrf.weights is None


@pytest.mark.parametrize("bad", [
    {"fusion": "max"}, {"fusion": None}, {"alpha": 2}, {"alpha": -0.1}, {"alpha": float("nan")},
    {"alpha": "0.5"}, {"alpha": True}, {"window": 0}, {"window": 1001}, {"window": 2.5},
    {"window": True}, {"rrf_k": True}, {"rrf_k": 0}, {"rrf_k": "60"}, {"mode": "semantic"},
    {"explain": "yes"}, {"limit": 0}, {"max_per_document": 0},
])
def test_bad_search_parameters_raise_query_error(store: KnowledgeBase, bad: dict[str, Any]) -> None:
    with pytest.raises(QueryError) as err:
        store.search(A, "plan", **bad)
    assert isinstance(err.value, ValueError)
    name = next(iter(bad))
    assert name in str(err.value) or str(bad[name]) in str(err.value), str(err.value)


# -- keyword-only stores and the recorded model ---------------------------------------------------
def test_keyword_only_store(tmp_path: Path, counting: CountingEmbedder) -> None:
    kb = KnowledgeBase.open(tmp_path / "kw.db", embedder="none")
    kb.ingest(DOCS)
    assert counting.passages == []  # nothing was embedded
    assert kb.stats()["embedder"] == "none" and kb.stats()["dimension"] == 0
    with pytest.raises(QueryError, match="keyword"):
        kb.search(A, "refunds", mode="vector")
    hits = kb.search(A, "refunds", mode="keyword", evidence=True)
    assert keys(hits) == [("returns", 3)] and hits.evidence in ("weak", "strong")
    # Hybrid falls back to the keyword ranking and says so (issue 24).
    fallback = kb.search(A, "refunds", mode="hybrid")
    assert keys(fallback) == keys(hits) and fallback.fallback["reason"] == "no_vectors"
    kb.close()
    # Reopened while $EVIDEX_EMBEDDER names a model, it stays keyword-only.
    again = KnowledgeBase.open(tmp_path / "kw.db")
    assert again.stats()["embedder"] == "none"
    with pytest.raises(QueryError):
        again.search(A, "refunds", mode="vector")
    again.close()


def test_store_records_its_model_and_refuses_another(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "kb.db"
    kb = KnowledgeBase.open(path)
    kb.ingest(DOCS)
    before = keys(kb.search(A, "plan users support", mode="vector"))
    assert kb.stats()["embedder"] == "hash-test" and kb.stats()["dimension"] == 64
    kb.close()
    for other in ("all-minilm-l6-v2", "multilingual-e5-small", "none"):
        with pytest.raises(StoreError) as err:
            KnowledgeBase.open(path, embedder=other)
        assert isinstance(err.value, ValueError)
        msg = str(err.value)
        assert "hash-test" in msg and other in msg and "reembed" in msg, msg
    with pytest.raises(StoreError, match="unknown embedding model"):
        KnowledgeBase.open(path, embedder="no-such-model")
    # Without a choice the recorded model is used, whatever the environment names for new stores.
    monkeypatch.setenv("EVIDEX_EMBEDDER", "all-minilm-l6-v2")
    same = KnowledgeBase.open(path)
    assert same.stats()["embedder"] == "hash-test"
    assert keys(same.search(A, "plan users support", mode="vector")) == before
    same.close()
    explicit = KnowledgeBase.open(path, embedder="hash-test")
    assert keys(explicit.search(A, "plan users support", mode="vector")) == before
    explicit.close()


# -- vectors change together with passages ----------------------------------------------------------
def test_supersede_and_remove_change_vectors_with_passages(tmp_path: Path) -> None:
    path = tmp_path / "kb.db"
    kb = KnowledgeBase.open(path)
    old_text = "alpha beta gamma delta\n\nold paragraph about omega"
    kb.ingest([_doc("x", old_text), _doc("y", "zeta zeta zeta")])
    other = KnowledgeBase.open(path)
    q = "alpha beta gamma delta"
    for handle in (kb, other):
        assert handle.search(A, q, mode="vector", limit=1)[0].quote == "alpha beta gamma delta"
    kb.ingest(_doc("x", "new text entirely\n\nsomething else", version="2"))
    for handle in (kb, other):
        for mode in ("vector", "hybrid"):
            hits = handle.search(A, q, mode=mode, limit=50, max_per_document=None)
            assert sorted(keys(hits)) == [("x", 1), ("x", 2), ("y", 1)], mode
            quotes = {h.quote for h in hits}
            assert quotes == {"new text entirely", "something else", "zeta zeta zeta"}, mode
            assert {h.version for h in hits if h.document_id == "x"} == {"2"}
            # No score is the old passage's exact match any more.
            assert max(h.score for h in hits) < 0.99 or mode == "hybrid"
    assert kb.remove("acme", "x")
    for handle in (kb, other):
        for mode in ("vector", "hybrid"):
            hits = handle.search(A, q, mode=mode, limit=50, max_per_document=None)
            assert keys(hits) == [("y", 1)], mode
    fresh = KnowledgeBase.open(path)
    assert keys(fresh.search(A, q, mode="vector", limit=50)) == [("y", 1)]
    assert fresh.stats()["passages"] == 1
    for handle in (kb, other, fresh):
        handle.close()


def test_a_failed_embedding_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Embedding happens before the write transaction: if it fails, neither passages nor
    vectors of the batch are stored, and a superseded document keeps its old version."""
    path = tmp_path / "kb.db"
    kb = KnowledgeBase.open(path)
    kb.ingest(DOCS)
    before = (kb.stats()["passages"], keys(kb.search(A, "plan users support", limit=20)))
    CountingEmbedder("hash-test", fail_on="poison").install(monkeypatch)  # the store's model
    with pytest.raises(RuntimeError):
        kb.ingest([_doc("fresh", "fine words"), _doc("plans", "poison pill", version="2")])
    assert (kb.stats()["passages"], keys(kb.search(A, "plan users support", limit=20))) == before
    assert {d.id: d.version for d in kb.documents()}["plans"] == "1"
    kb.close()


# -- evidence --------------------------------------------------------------------------------------
def test_evidence_levels(store: KnowledgeBase) -> None:
    nothing = [
        store.search(NOBODY, "refunds", evidence=True),
        store.search(A, "refunds", filters={"language": "fr"}, evidence=True),
        store.search(A, "absent", mode="keyword", evidence=True),
        store.search(A, "   ", evidence=True),
        store.search(Actor("acme", frozenset({"staff"}), active=False, visibilities=PUBLIC_INTERNAL),
                     "refunds", mode="vector", evidence=True),
    ]
    for res in nothing:
        assert res == [] and res.evidence == "none"
    seen = set()
    for q in ("refunds", "alpha absent1 absent2", "Plan B2 includes 10 users, API access and phone support.",
              "ERR-401 session expired"):
        for mode in ("keyword", "vector", "hybrid"):
            res = store.search(A, q, mode=mode, evidence=True)
            assert isinstance(res.evidence, str) and not isinstance(res.evidence, bool)
            assert res.evidence in (("weak", "strong") if res else ("none",)), (q, mode, res.evidence)
            assert not any(ch.isdigit() for ch in res.evidence)
            seen.add(res.evidence)
    # An exact passage as the query is strong; a query of mostly unknown words is weak.
    exact = store.search(A, "Plan B2 includes 10 users, API access and phone support.", mode="vector",
                         evidence=True)
    assert exact.evidence == "strong" and math.isclose(exact[0].score, 1.0, abs_tol=1e-5)
    assert store.search(A, "alpha absent1 absent2", mode="hybrid", evidence=True).evidence == "weak"
    assert seen == {"none", "weak", "strong"}


# -- the query vector ----------------------------------------------------------------------------
def test_query_vector_does_not_depend_on_earlier_queries(tmp_path: Path) -> None:
    """A query's vector results must not depend on which queries the same handle ran before.
    ("beta beta beta alpha" and "beta alpha" have the same words but different texts, hence
    different embeddings.)"""
    path = tmp_path / "kb.db"
    kb = KnowledgeBase.open(path)
    kb.ingest([_doc("a", "alpha"), _doc("b", "beta beta"), _doc("c", "alpha beta gamma")])
    q = "beta beta beta alpha"
    cold = full(kb.search(A, q, mode="vector"))
    fresh = KnowledgeBase.open(path)
    fresh.search(A, "beta alpha", mode="vector")
    warm = full(fresh.search(A, q, mode="vector"))
    emb = get_embedder("hash-test")
    qv = emb.embed_queries([q])[0]
    for doc_id, _v, _n, score, _r in cold:
        text = {"a": "alpha", "b": "beta beta", "c": "alpha beta gamma"}[doc_id]
        assert math.isclose(score, float(emb.embed_passages([text])[0] @ qv), abs_tol=1e-6)
    assert warm == cold
    kb.close()
    fresh.close()


# -- the embedding cache ---------------------------------------------------------------------------
def test_embedding_cache_embeds_only_changed_paragraphs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counting: CountingEmbedder
) -> None:
    monkeypatch.setenv("EVIDEX_CACHE_DIR", str(tmp_path / "cache"))
    paragraphs = [f"Paragraph {i} of the handbook: rule {i * 7} applies to case {i}." for i in range(20)]
    v1 = _doc("handbook", "\n\n".join(paragraphs))
    kb = KnowledgeBase.open(tmp_path / "a.db")
    kb.ingest(v1)
    assert sorted(counting.passages) == sorted(paragraphs)
    cache = kb._embed_cache()
    assert (cache.hits, cache.misses) == (0, 20)
    changed = paragraphs.copy()
    changed[11] = "Paragraph 11 was rewritten entirely."
    counting.passages.clear()
    report = kb.ingest(_doc("handbook", "\n\n".join(changed), version="2"))
    assert report.superseded == 1 and report.passages_written == 20
    assert counting.passages == ["Paragraph 11 was rewritten entirely."]
    assert (cache.hits, cache.misses) == (19, 21)
    # The new version is searchable by its new paragraph, with the right vector.
    top = kb.search(A, "Paragraph 11 was rewritten entirely.", mode="vector", limit=1)
    assert (top[0].passage, top[0].version) == (12, "2") and math.isclose(top[0].score, 1.0, abs_tol=1e-5)
    # An unchanged re-ingest embeds nothing at all.
    counting.passages.clear()
    assert kb.ingest(_doc("handbook", "\n\n".join(changed), version="2")).unchanged == 1
    assert counting.passages == []
    kb.close()
    # A new store on the same cache folder (another KnowledgeBase, another cache handle)
    # embeds nothing either, and gets the same vectors.
    other = KnowledgeBase.open(tmp_path / "b.db")
    other.ingest([v1, _doc("handbook-2", "\n\n".join(changed), version="2")])
    assert counting.passages == []
    assert (other._embed_cache().hits, other._embed_cache().misses) == (21, 0)
    got = other.search(A, "Paragraph 11 was rewritten entirely.", mode="vector", limit=1)
    assert (got[0].document_id, got[0].passage) == ("handbook-2", 12)
    other.close()
    assert (tmp_path / "cache" / "embeddings.sqlite").exists()


# -- re-embedding ------------------------------------------------------------------------------------
MINILM = "all-minilm-l6-v2"


def minilm_cosines(query: str, texts: Sequence[str]) -> np.ndarray:
    e = get_embedder(MINILM)
    return e.embed_passages(list(texts)) @ e.embed_queries([query])[0]


def small_store(path: Path) -> KnowledgeBase:
    kb = KnowledgeBase.open(path)
    kb.ingest(DOCS)
    # A superseded version leaves dead rows in the segments: they must not come back.
    kb.ingest(_doc("plans", "Plan B1 includes 3 users.\n\nPlan B3 adds single sign-on.", version="2"))
    return kb


def vector_view(kb: KnowledgeBase, q: str) -> list[tuple[str, int, float]]:
    return [(h.document_id, h.passage, h.score)
            for h in kb.search(A, q, mode="vector", limit=50, max_per_document=None)]


def test_reembed_switches_the_model_atomically(tmp_path: Path) -> None:
    path = tmp_path / "kb.db"
    kb = small_store(path)
    reader = KnowledgeBase.open(path)  # another connection
    q = "how do I send a parcel back"
    old = vector_view(kb, q)
    assert vector_view(reader, q) == old
    keyword_before = full(kb.search(A, "plan", mode="keyword"))
    during: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        # Until the switch commits every search uses the old vectors.
        during.append((done, total))
        assert kb.stats()["embedder"] == "hash-test"
        assert vector_view(kb, q) == old
        assert vector_view(reader, q) == old

    count = kb.reembed(MINILM, progress=progress)
    assert count == N_PASSAGES
    assert during and during[-1] == (N_PASSAGES, N_PASSAGES)
    assert kb.stats()["embedder"] == MINILM and kb.stats()["dimension"] == 384
    new = vector_view(kb, q)
    hits = kb.search(A, q, mode="vector", limit=50, max_per_document=None)
    texts = {(h.document_id, h.passage): h.quote for h in hits}
    assert len(new) == N_PASSAGES and {k for k in texts} == {(d, n) for d, n, _ in old}
    cosine = dict(zip(texts, minilm_cosines(q, list(texts.values())).tolist(), strict=True))
    # The vector leg re-bases each language's cosines (retrieve._vector): q . mean_L is the mean
    # of the question's cosines with L's passages.
    language = {(h.document_id, h.passage): (h.language or "") for h in hits}
    mean = {lang: float(np.mean([c for k, c in cosine.items() if language[k] == lang]))
            for lang in set(language.values())}
    want = {k: c + CENTRING * (max(mean.values()) - mean[language[k]]) for k, c in cosine.items()}
    for d, n, score in new:
        assert math.isclose(score, want[(d, n)], abs_tol=1e-4), (d, n, score, want[(d, n)])
    assert [(d, n) for d, n, _ in new] == sorted(want, key=lambda k: (-want[k], k))
    assert new[0][:2] == ("returns", 2)  # the model's choice: the "drop the parcel" passage
    assert full(kb.search(A, "plan", mode="keyword")) == keyword_before
    assert kb.search(A, q, evidence=True).evidence in ("weak", "strong")
    kb.close()
    reader.close()
    # The switch is durable: a new handle opens the store with the new model, and refuses the old.
    again = KnowledgeBase.open(path)
    assert again.stats()["embedder"] == MINILM
    assert vector_view(again, q) == new
    again.close()
    with pytest.raises(StoreError, match="reembed"):
        KnowledgeBase.open(path, embedder="hash-test")


def test_reembed_is_seen_by_a_second_handle_on_the_same_file(tmp_path: Path) -> None:
    """A KnowledgeBase that was open (and had searched) before another one re-embedded the
    store must search the new vectors afterwards, not fail on them."""
    path = tmp_path / "kb.db"
    kb = small_store(path)
    second = KnowledgeBase.open(path)
    q = "how do I send a parcel back"
    vector_view(second, q)
    kb.reembed(MINILM)
    assert vector_view(second, q) == vector_view(kb, q)
    assert keys(second.search(A, q)) == keys(kb.search(A, q))
    kb.close()
    second.close()


def test_reembed_stats_of_a_second_handle(tmp_path: Path) -> None:
    path = tmp_path / "kb.db"
    kb = small_store(path)
    second = KnowledgeBase.open(path)
    assert second.stats()["embedder"] == "hash-test"
    kb.reembed(MINILM)
    assert second.stats()["embedder"] == MINILM
    assert second.stats()["dimension"] == 384
    kb.close()
    second.close()


def test_reader_thread_during_reembed_sees_old_or_new_results_only(tmp_path: Path) -> None:
    """A reader on its own connection searches in a loop while the store is re-embedded: every
    result is exactly the old model's or exactly the new model's, and none fails."""
    path = tmp_path / "kb.db"
    kb = small_store(path)
    q = "how do I send a parcel back"
    old = vector_view(kb, q)
    reader = KnowledgeBase.open(path)
    seen: list[Any] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        try:
            while not stop.is_set():
                seen.append(vector_view(reader, q))
        except BaseException as exc:  # reported below
            errors.append(exc)

    t = threading.Thread(target=read)
    t.start()
    try:
        kb.reembed(MINILM)
        new = vector_view(kb, q)
        # Give the reader time to search after the switch too.
        n = len(seen)
        for _ in range(200):
            if len(seen) > n + 3 or errors:
                break
            threading.Event().wait(0.02)
    finally:
        stop.set()
        t.join(timeout=60)
    assert not errors, repr(errors[0])
    assert seen and all(r in (old, new) for r in seen)
    assert seen[-1] == new and old != new
    kb.close()
    reader.close()


def test_reembed_rejects_unknown_and_none_and_keeps_the_store(tmp_path: Path) -> None:
    path = tmp_path / "kb.db"
    kb = small_store(path)
    before = vector_view(kb, "plan")
    for bad in ("none", "no-such-model"):
        with pytest.raises(StoreError):
            kb.reembed(bad)
    assert kb.stats()["embedder"] == "hash-test" and vector_view(kb, "plan") == before
    # Re-embedding with the same model is a no-op for results.
    assert kb.reembed("hash-test") == N_PASSAGES
    assert vector_view(kb, "plan") == before
    kb.close()


def test_cli_reembed(tmp_path: Path) -> None:
    path = tmp_path / "kb.db"
    small_store(path).close()
    bad = run_cli("reembed", "--model", "no-such-model", "--json", db=path)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert next(ln for ln in bad.stderr.splitlines() if ln.strip()).startswith("error:")
    proc = run_cli("reembed", "--model", MINILM, "--json", db=path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"model": MINILM, "passages": N_PASSAGES}
    stats = json.loads(run_cli("stats", "--json", db=path).stdout)
    assert (stats["embedder"], stats["dimension"]) == (MINILM, 384)
    found = run_cli("search", "how do I send a parcel back", "--tenant", "acme", "--groups", "staff",
                    "--visibilities", "public,internal",
                    "--mode", "vector", "--explain", "--json", db=path)
    assert found.returncode == 0, found.stderr
    out = json.loads(found.stdout)
    assert out["evidence"] in ("weak", "strong")
    assert (out["hits"][0]["document_id"], out["hits"][0]["passage"]) == ("returns", 2)
    assert out["hits"][0]["explain"]["vector"]["rank"] == 1
    human = run_cli("reembed", "--model", "hash-test", db=path)
    assert human.returncode == 0 and f"{N_PASSAGES} passages" in human.stdout


def test_query_vectors_are_shared_by_every_handle_in_the_process(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The service keeps several store handles per worker: a question embedded through one of
    them must not be embedded again through another (e5 costs ~45 ms per query)."""
    path = tmp_path / "kb.db"
    first = KnowledgeBase.open(path)
    first.ingest(DOCS)
    second = KnowledgeBase.open(path)
    emb = get_embedder("hash-test")
    calls: list[str] = []
    real = emb.embed_queries

    def counting(texts: Sequence[str]) -> np.ndarray:
        calls.extend(texts)
        return real(texts)

    monkeypatch.setattr(emb, "embed_queries", counting)
    q = f"send it back {tmp_path.name}"  # unique: the cache outlives this test
    a = full(first.search(A, q, mode="vector"))
    b = full(second.search(A, q, mode="vector"))
    assert a == b and calls == [q]
    second.search(A, q + " please", mode="vector")
    assert calls == [q, q + " please"]
    first.close()
    second.close()


def test_query_vector_cache_is_bounded_lru_and_read_only() -> None:
    from evidex.embed import QueryVectorCache

    with pytest.raises(ValueError, match="capacity"):
        QueryVectorCache(0)
    cache = QueryVectorCache(capacity=2)
    made: list[str] = []

    def embed(texts: Sequence[str]) -> np.ndarray:
        made.extend(texts)
        return np.ones((len(texts), 4), dtype=np.float32) / 2

    v = cache.get("m", "a", embed)
    cache.get("m", "b", embed)
    cache.get("m", "a", embed)  # a is now the most recently used
    cache.get("m", "c", embed)  # evicts b, not a
    assert ("m", "a") in cache and ("m", "b") not in cache and len(cache) == 2
    assert made == ["a", "b", "c"] and (cache.hits, cache.misses) == (1, 3)
    assert cache.get("other-model", "a", embed) is not v  # another model is another key
    with pytest.raises(ValueError):
        v[0] = 0.0  # shared by every caller: nobody may change it in place
    buf = np.zeros((1, 4), dtype=np.float32)
    cache.get("m", "x", lambda texts: buf)
    buf[0, 0] = 9.0  # the cache kept its own copy
    assert cache["m", "x"][0] == 0.0
