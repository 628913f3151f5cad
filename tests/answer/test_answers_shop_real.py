"""Answers on the shop collection as `make run` loads it (examples/shop: the old policy
versions, the public site, the staff handbook, another tenant), with the real default embedder
and the persistent embedding cache (see test_eval_shipped), asked as the demo customer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evidex import Actor, KnowledgeBase
from evidex.decide import in_context
from evidex.decide._support import coverage
from evidex.embed import DEFAULT_EMBEDDER, default_cache_path
from evidex.ingest import load_paths
from evidex.kb import QUESTION_LIMITS

pytestmark = pytest.mark.slow

SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop"
#: Read at import, before the autouse fixture points the cache at a temporary folder.
USER_CACHE = default_cache_path()
CUSTOMER = Actor("acme", frozenset({"customers"}), visibilities=frozenset({"public"}))
#: As the Makefile's `run` target ingests them.
FOLDERS = (
    ("versions", {"tenant": "acme"}),
    ("site", {"tenant": "acme", "groups": ["customers", "staff"], "visibility": "public",
              "language": "en"}),
    ("staff", {"tenant": "acme", "groups": ["staff"], "visibility": "internal", "language": "en"}),
    ("other-tenant", {"tenant": "globex"}),
)


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    kb = KnowledgeBase.open(tmp_path_factory.mktemp("shop") / "shop.db", embedder=DEFAULT_EMBEDDER,
                            embed_cache=USER_CACHE)
    for folder, meta in FOLDERS:
        loaded = load_paths([SHOP / folder], meta)
        assert not loaded.rejected, loaded.rejected
        kb.ingest(loaded.documents, split="heading")
    yield kb
    kb.close()


def test_worn_jacket_is_answered_from_the_returns_policy_not_another_language(
        shop: KnowledgeBase) -> None:
    """The English returns policy answers; the German care page on the same jacket, close in
    meaning across languages, does not win over it."""
    ans = shop.answer(CUSTOMER, "Can I return a worn jacket?")
    assert ans.status == "answered", (ans.reason, ans.trace and ans.trace["signals"])
    docs = [c["document_id"] for c in ans.citations]
    assert docs[0] == "shop/returns", ans.text
    assert not any(d.startswith("shop/de/") for d in docs), ans.text
    c = ans.citations[0]
    assert "worn" in c["quote"][c["sentence_start"]:c["sentence_end"]]
    # The policy's rule is quoted, not only the boot exception that follows it.
    assert ans.text.startswith("We cannot accept items that have been worn outdoors"), ans.text


def test_the_trace_scores_the_quote_as_the_decision_reads_it(shop: KnowledgeBase) -> None:
    """The answer-bearing score in the trace is the quoted span's cosine with the question (read
    in its title and heading path, through the embedding cache) less part of its hubness, plus
    part of its coverage: recomputed here from the model directly."""
    question = "Can I return a worn jacket?"
    ans = shop.answer(CUSTOMER, question)
    bearing = ans.trace["decision"]["answer_bearing"]
    assert ans.status == "answered" and bearing["verdict"] and bearing["score"] >= bearing["threshold"]
    c = ans.citations[0]
    res = shop.search(CUSTOMER, question, limit=6, rerank=True, limits=QUESTION_LIMITS)
    hit = next(h for h in res if h.document_id == c["document_id"] and h.passage == c["passage"])
    span = c["quote"][c["sentence_start"]:c["sentence_end"]]
    vec = shop.embed_passages([in_context(span, (hit.title or "", *hit.heading_path))])
    cos = float(vec[0] @ shop._query_vector(question)) + res.shift.of(hit.language)
    cal = shop._calibration_now()
    hub = float(shop._probes().hubness(vec)[0])
    p = res.support[[h.pid for h in res].index(hit.pid)]
    stems = {s for m in p.sentences if c["sentence_start"] <= m.start < c["sentence_end"] for s in m.stems}
    want = cos - cal.hub_weight * hub + cal.coverage_weight * coverage(stems | p.context, p.weights)
    assert bearing["score"] == pytest.approx(want, abs=1e-5)
