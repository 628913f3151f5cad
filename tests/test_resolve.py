"""Citations re-resolve later and say precisely why they no longer hold."""

from __future__ import annotations

import pytest

from actors import PUBLIC_INTERNAL
from backends import Locator
from evidex import Actor, CitationError, Document, KnowledgeBase

A = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)


@pytest.fixture
def kb(any_kb: KnowledgeBase) -> KnowledgeBase:
    """Every resolve test runs on SQLite and on PostgreSQL."""
    return any_kb


def make(
    kb: KnowledgeBase, version: str = "1", text: str = "first part\n\nsecond part", **kw: object
) -> dict:
    kb.ingest([Document("d", "t", kw.pop("groups", {"g"}), version, text, **kw)])  # type: ignore[arg-type]
    return kb.search(A, "second", mode="keyword")[0].citation()


def test_fresh_citation_resolves(kb: KnowledgeBase) -> None:
    c = make(kb)
    r = kb.resolve(A, c)
    assert (r.ok, r.reason, r.current_version) == (True, None, "1")


def test_citation_survives_json_round_trip(kb: KnowledgeBase) -> None:
    import json

    c = json.loads(json.dumps(make(kb)))
    assert kb.resolve(A, c).ok


def test_unknown_or_inaccessible_is_unavailable(kb: KnowledgeBase) -> None:
    c = make(kb)
    for actor in (
        Actor("t", frozenset({"other"}), visibilities=PUBLIC_INTERNAL),
        Actor("u", frozenset({"g"}), visibilities=PUBLIC_INTERNAL),
        Actor("t", frozenset({"g"}), active=False, visibilities=PUBLIC_INTERNAL),
        Actor("t", frozenset({"g"}), visibilities=frozenset({"public"})),
    ):
        assert kb.resolve(actor, c).reason == "unavailable"
    for bad_id in ("nope", None, 5, ["d"]):
        assert kb.resolve(A, {**c, "document_id": bad_id}).reason == "unavailable"


def test_removed_document_is_unavailable(kb: KnowledgeBase) -> None:
    c = make(kb)
    kb.remove("t", "d")
    assert kb.resolve(A, c).reason == "unavailable"


def test_new_version_is_source_changed_with_matched_version(kb: KnowledgeBase) -> None:
    c = make(kb)
    make(kb, version="2", text="first part\n\nsecond part, revised")
    r = kb.resolve(A, c)
    assert (r.ok, r.reason, r.current_version, r.matched_version) == (False, "source_changed", "2", "1")


def test_same_version_new_text_is_source_changed(kb: KnowledgeBase) -> None:
    c = make(kb)
    make(kb, text="first part\n\nsecond part!")
    r = kb.resolve(A, c)
    assert r.reason == "source_changed" and r.matched_version == "1"


def test_without_history_no_matched_version(locate: Locator) -> None:
    kb = KnowledgeBase.open(locate("kb"), keep_history=False)
    c = make(kb)
    make(kb, version="2")
    r = kb.resolve(A, c)
    assert r.reason == "source_changed" and r.matched_version is None
    kb.close()


def test_forged_history_claim_is_not_matched(kb: KnowledgeBase) -> None:
    c = make(kb)
    make(kb, version="2")
    r = kb.resolve(A, {**c, "quote": "words that were never there"})
    assert r.reason == "source_changed" and r.matched_version is None


def test_tampered_fingerprint_is_source_changed(kb: KnowledgeBase) -> None:
    c = make(kb)
    assert kb.resolve(A, {**c, "content_sha256": "0" * 64}).reason == "source_changed"


@pytest.mark.parametrize(
    "change",
    [
        {"quote": "second par"},
        {"quote": "first part"},
        {"quote": None},
        {"passage": 1},
        {"passage": 99},
        {"passage": -1},
        {"passage": 0},
        {"passage": True},
        {"passage": 3.0},
        {"passage": "3"},
        {"passage": None},
        {"start": 0},
        {"end": 10_000},
        {"start": True},
        {"start": "12"},
    ],
)
def test_locator_or_quote_mismatch(kb: KnowledgeBase, change: dict) -> None:
    c = make(kb)
    assert kb.resolve(A, {**c, **change}).reason == "quote_mismatch"


def test_citation_without_offsets_still_checks_passage_and_quote(kb: KnowledgeBase) -> None:
    c = make(kb)
    minimal = {k: c[k] for k in ("document_id", "version", "content_sha256", "passage", "quote")}
    assert kb.resolve(A, minimal).ok


@pytest.mark.parametrize("bad", [None, "citation", ["d"], 5])
def test_non_mapping_citation_is_an_input_error(kb: KnowledgeBase, bad: object) -> None:
    with pytest.raises(CitationError):
        kb.resolve(A, bad)  # type: ignore[arg-type]
