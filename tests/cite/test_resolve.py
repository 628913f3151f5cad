"""Citations re-resolve later and say precisely why they no longer hold."""

from __future__ import annotations

import pytest

from actors import PUBLIC_INTERNAL
from backends import Locator
from evidex import Actor, CitationError, Document, KnowledgeBase

A = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)


def make(
    any_kb: KnowledgeBase, version: str = "1", text: str = "first part\n\nsecond part", **kw: object
) -> dict:
    any_kb.ingest([Document("d", "t", kw.pop("groups", {"g"}), version, text, **kw)])  # type: ignore[arg-type]
    return any_kb.search(A, "second", mode="keyword")[0].citation()


def test_fresh_citation_resolves(any_kb: KnowledgeBase) -> None:
    c = make(any_kb)
    r = any_kb.resolve(A, c)
    assert (r.ok, r.reason, r.current_version) == (True, None, "1")


def test_citation_survives_json_round_trip(any_kb: KnowledgeBase) -> None:
    import json

    c = json.loads(json.dumps(make(any_kb)))
    assert any_kb.resolve(A, c).ok


def test_unknown_or_inaccessible_is_unavailable(any_kb: KnowledgeBase) -> None:
    c = make(any_kb)
    for actor in (
        Actor("t", frozenset({"other"}), visibilities=PUBLIC_INTERNAL),
        Actor("u", frozenset({"g"}), visibilities=PUBLIC_INTERNAL),
        Actor("t", frozenset({"g"}), active=False, visibilities=PUBLIC_INTERNAL),
        Actor("t", frozenset({"g"}), visibilities=frozenset({"public"})),
    ):
        assert any_kb.resolve(actor, c).reason == "unavailable"
    assert any_kb.resolve(A, {**c, "document_id": "nope"}).reason == "unavailable"


def test_removed_document_is_unavailable(any_kb: KnowledgeBase) -> None:
    c = make(any_kb)
    any_kb.remove("t", "d")
    assert any_kb.resolve(A, c).reason == "unavailable"


def test_new_version_is_source_changed_with_matched_version(any_kb: KnowledgeBase) -> None:
    c = make(any_kb)
    make(any_kb, version="2", text="first part\n\nsecond part, revised")
    r = any_kb.resolve(A, c)
    assert (r.ok, r.reason, r.current_version, r.matched_version) == (False, "source_changed", "2", "1")
    assert r.detail == ("the document is now version '2', the citation is of version '1'; the quote "
                        "matched the superseded version '1'")


def test_same_version_new_text_is_source_changed(any_kb: KnowledgeBase) -> None:
    c = make(any_kb)
    make(any_kb, text="first part\n\nsecond part!")
    r = any_kb.resolve(A, c)
    assert r.reason == "source_changed" and r.matched_version == "1" and r.current_version == "1"
    # Only the text changed: the detail must not claim a new version.
    assert r.detail == ("the text of version '1' changed since it was cited (same version name, "
                        "another fingerprint); the quote matched the earlier text of that version, "
                        "kept in the history")
    assert "is now version" not in r.detail and "superseded version" not in r.detail


def test_without_history_no_matched_version(locate: Locator) -> None:
    kb = KnowledgeBase.open(locate("kb"), keep_history=False)
    c = make(kb)
    make(kb, version="2")
    r = kb.resolve(A, c)
    assert r.reason == "source_changed" and r.matched_version is None
    kb.close()


def test_forged_history_claim_is_not_matched(any_kb: KnowledgeBase) -> None:
    c = make(any_kb)
    make(any_kb, version="2")
    r = any_kb.resolve(A, {**c, "quote": "words that were never there"})
    assert r.reason == "source_changed" and r.matched_version is None


def test_tampered_fingerprint_is_source_changed(any_kb: KnowledgeBase) -> None:
    c = make(any_kb)
    assert any_kb.resolve(A, {**c, "content_sha256": "0" * 64}).reason == "source_changed"


@pytest.mark.parametrize(
    "change",
    [
        {"quote": "second par"},
        {"quote": "first part"},
        {"quote": ""},
        {"passage": 1},
        {"passage": 99},
        {"passage": -1},
        {"passage": 0},
        {"start": 0},
        {"end": 10_000},
    ],
)
def test_locator_or_quote_mismatch(any_kb: KnowledgeBase, change: dict) -> None:
    c = make(any_kb)
    assert any_kb.resolve(A, {**c, **change}).reason == "quote_mismatch"


def test_citation_without_offsets_still_checks_passage_and_quote(any_kb: KnowledgeBase) -> None:
    c = make(any_kb)
    minimal = {k: c[k] for k in ("document_id", "version", "content_sha256", "passage", "quote")}
    assert any_kb.resolve(A, minimal).ok


@pytest.mark.parametrize("bad", [None, "citation", ["d"], 5])
def test_non_mapping_citation_is_an_input_error(any_kb: KnowledgeBase, bad: object) -> None:
    with pytest.raises(CitationError):
        any_kb.resolve(A, bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"document_id": None}, "document_id must be a string"),
        ({"document_id": 5}, "document_id must be a string"),
        ({"document_id": ["d"]}, "document_id must be a string"),
        ({"version": 1}, "version must be a string"),
        ({"quote": None}, "quote must be a string"),
        ({"passage": True}, "passage must be an integer"),
        ({"passage": 3.0}, "passage must be an integer"),
        ({"passage": "3"}, "passage must be an integer"),
        ({"passage": None}, "passage must be an integer"),
        ({"start": True}, "start must be an integer or null"),
        ({"start": "12"}, "start must be an integer or null"),
        ({"heading_path": "a > b"}, "heading_path must be a list of strings"),
        ({"quote": "second \ud800part"}, "its quote is not valid Unicode text: a lone surrogate"),
        ({"document_id": "d\udfff"}, "its document_id is not valid Unicode text"),
    ],
)
def test_wrong_types_are_not_a_citation(any_kb: KnowledgeBase, change: dict, needle: str) -> None:
    c = make(any_kb)
    with pytest.raises(CitationError, match="this is not a citation") as err:
        any_kb.resolve(A, {**c, **change})
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_a_partial_citation_or_a_search_result_is_not_a_citation(any_kb: KnowledgeBase) -> None:
    c = make(any_kb)
    with pytest.raises(CitationError, match="version, content_sha256, passage, quote are missing"):
        any_kb.resolve(A, {"document_id": "d"})
    result = {"hits": [{**c, "score": 1.0, "rank": 1}], "evidence": "strong"}
    with pytest.raises(CitationError, match="pass one hit"):
        any_kb.resolve(A, result)
    # A hit (a citation plus its ranking fields) is still a citation.
    assert any_kb.resolve(A, result["hits"][0]).ok
