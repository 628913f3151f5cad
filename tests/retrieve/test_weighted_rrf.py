"""Weighted reciprocal rank fusion (issue 39): RRF whose legs count by this query's adaptive leg
weights, as Elasticsearch, OpenSearch and Vespa weight RRF per retriever.

The pure function is checked against plain RRF and the weights; a real SQLite store (hash-test
embedder, tests/support/stores.py) checks that a search with it carries the weights and that the
configuration file's names reach it. Its quality on SciFact, German and cross-language sets is
measured in benchmarks/multilingual.py (benchmarks/RESULTS.md), not here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from actors import PUBLIC_INTERNAL
from evidex import Actor
from evidex.config import load_config
from evidex.retrieve import Fusion, Leg, fuse
from small_stores import two_language_store

A = Actor("acme", frozenset({"staff"}), visibilities=PUBLIC_INTERNAL)
KW = Leg("keyword", np.array([1, 2, 3]), np.array([9.0, 5.0, 1.0]))
VEC = Leg("vector", np.array([3, 2, 4]), np.array([0.9, 0.8, 0.7]))


def test_weighted_rrf_needs_the_query_weights() -> None:
    assert Fusion("weighted_rrf").weighted and Fusion("adaptive").weighted
    assert not Fusion("rrf").weighted and not Fusion("convex").weighted
    with pytest.raises(ValueError, match="weighted_rrf fusion needs the query's leg weights"):
        fuse([KW, VEC], Fusion("weighted_rrf"))


def test_a_search_with_weighted_rrf_weighs_the_legs_and_says_so(tmp_path: Path) -> None:
    kb = two_language_store(tmp_path)
    q = "Kann ich eine getragene Jacke zurückgeben?"
    res = kb.search(A, q, fusion="weighted_rrf", explain=True, max_per_document=None)
    adaptive = kb.search(A, q, fusion="adaptive", max_per_document=None)
    # The same weights as adaptive fusion (one rule), fused by rank instead of by score.
    assert res.weights is not None and res.weights == adaptive.weights
    assert all(h.explain is not None and h.explain["weights"] == res.weights.as_dict() for h in res)
    by_rank = {leg: 2 * w for leg, w in (("keyword", res.weights.keyword), ("vector", res.weights.vector))}
    for h in res:
        legs = {n: v["rank"] for n, v in h.explain.items() if n in by_rank}
        assert h.score == pytest.approx(sum(by_rank[n] / (60 + r) for n, r in legs.items()))
    kb.close()


@pytest.mark.parametrize("name", ["weighted_rrf", "weighted_reciprocal_rank"])
def test_the_configuration_names_weighted_rrf(tmp_path: Path, name: str) -> None:
    path = tmp_path / "knowledge.config.yaml"
    path.write_text(f"retrieval: {{fuse: {name}, rrf_k: 30}}\n", encoding="utf-8")
    cfg = load_config(path)
    assert cfg.retrieval.fuse == "weighted_rrf"
    # What answers (CLI and service) search with.
    assert cfg.answer_settings().fusion == Fusion("weighted_rrf", rrf_k=30)
