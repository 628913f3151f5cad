"""Answers on the shop collection as `make run` loads it (examples/shop: the old policy
versions, the public site, the staff handbook, another tenant), with the real default embedder
and the persistent embedding cache (see test_eval_shipped), asked as the demo customer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evidex import Actor, KnowledgeBase
from evidex.decide import in_context
from evidex.embed import DEFAULT_EMBEDDER, default_cache_path
from evidex.ingest import load_paths

pytestmark = pytest.mark.slow

SHOP = Path(__file__).resolve().parents[1] / "examples" / "shop"
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


def test_the_decision_compared_the_quoted_sentences_by_meaning(shop: KnowledgeBase) -> None:
    res = shop.search(CUSTOMER, "Can I return a worn jacket?", rerank=True)
    top = res.support[:3]
    assert all(p.sentence_similarity is not None and p.meaning for p in top)
    for h, p in zip(res, top, strict=False):
        texts = [in_context(h.quote[s:next(m.end for m in p.sentences if m.start == s)],
                            (h.title or "", *h.heading_path)) for s, _ in p.meaning]
        direct = shop.embed_passages(texts) @ shop._query_vector("Can I return a worn jacket?")
        assert max(direct.tolist()) == pytest.approx(p.sentence_similarity, abs=1e-5)
