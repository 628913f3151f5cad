"""Per-language analysis (``analyzer: auto``, issue 28 item 2) on both backends.

Each passage is analysed with its document's language, a query once per readable language, and
each analysis is ranked with BM25 statistics over exactly the passages of that language the
caller may read. The reference for "exactly" is a store holding nothing but those passages under
the one-language analyzer: every score must be the same float.
"""

from __future__ import annotations

from functools import partial

import pytest

from actors import PUBLIC_INTERNAL
from backends import Locator
from documents import doc
from evidex import Actor, KnowledgeBase
from evidex.model import StoreError
from evidex.query import analyzer_for, get_analyzer

STAFF = Actor("t", frozenset({"staff"}), visibilities=PUBLIC_INTERNAL)
HR = Actor("t", frozenset({"staff", "hr"}), visibilities=PUBLIC_INTERNAL)


_doc = partial(doc, groups=("staff",))


GERMAN = [
    _doc("de-rueckgabe", "Getragene Jacken können nicht zurückgegeben werden. Rückgaben innerhalb "
         "von 30 Tagen.", language="de"),
    _doc("de-hotel", "Das Hotel für Dienstreisen bucht die Reisestelle; Übernachtungen bis 120 Euro.",
         language="de-DE"),
    _doc("de-jacke", "Die Jacke aus Wolle wird in drei Größen geliefert, die Jacken sind wasserdicht.",
         language="de"),
]
#: German passages the staff may not read: they must not move any German statistic for staff.
GERMAN_HR = [
    _doc("de-gehalt", "Gehälter der Jacken-Abteilung: die Jacke und das Hotel im Tarif.",
         language="de", groups=("hr",)),
    _doc("de-hotel-hr", "Hotel Hotel Hotel: Übernachtungen für Personalgespräche.",
         language="de", groups=("hr",)),
]
ENGLISH = [
    _doc("en-returns", "Worn jackets cannot be returned. Returns are accepted within 30 days.",
         language="en"),
    _doc("en-hotel", "The travel office books the hotel for business trips, up to 120 euros a night.",
         language="en-GB"),
]
OTHER = [
    _doc("fr-retours", "Les vestes portées ne sont pas reprises; les retours sont acceptés.", language="fr"),
    # Too few words for a language to be identified at ingest: it stays without one.
    _doc("code", "ERR-401: session token expired.", language=None),
]


def _scores(kb: KnowledgeBase, actor: Actor, query: str) -> dict[str, float]:
    return {h.document_id: h.score for h in kb.search(actor, query, mode="keyword", limit=20)}


def test_analyzer_for_each_language() -> None:
    assert analyzer_for("auto", "en-GB") is get_analyzer("english")
    assert analyzer_for("auto", "DE") is get_analyzer("german")
    assert analyzer_for("auto", "fr").terms("les vestes portées") == ["le", "vest", "port"]
    for unknown in (None, "ja", "porter", "x-klingon"):
        assert analyzer_for("auto", unknown).name == "exact"
    assert analyzer_for("german", "en") is get_analyzer("german")  # one analyzer per store


def test_new_stores_are_auto_and_existing_ones_keep_theirs(locate: Locator) -> None:
    with KnowledgeBase.open(locate("new")) as kb:
        assert kb.analyzer == "auto"
    with KnowledgeBase.open(locate("old"), analyzer="exact") as kb:
        kb.ingest(ENGLISH)
    with KnowledgeBase.open(locate("old")) as kb:
        assert kb.analyzer == "exact"
        assert list(kb.search(STAFF, "jacket", mode="keyword")) == []  # exact: "jackets" only
    with pytest.raises(StoreError, match="evidex reindex --analyzer auto"):
        KnowledgeBase.open(locate("old"), analyzer="auto")


def _in(scores: dict[str, float], prefix: str) -> dict[str, float]:
    return {d: s for d, s in scores.items() if d.startswith(prefix)}


def test_each_language_ranks_with_its_own_readable_statistics(locate: Locator) -> None:
    """In a store of every language, with German passages staff may not read, the German hits'
    scores equal those of a german store holding only the German passages staff may read, and
    the English hits' those of an english store of the English passages."""
    with KnowledgeBase.open(locate("mixed"), embedder="none") as kb, \
            KnowledgeBase.open(locate("ref-de"), analyzer="german", embedder="none") as ref_de, \
            KnowledgeBase.open(locate("ref-en"), analyzer="english", embedder="none") as ref_en:
        kb.ingest(GERMAN + GERMAN_HR + ENGLISH + OTHER)
        ref_de.ingest(GERMAN)
        ref_en.ingest(ENGLISH)
        query = "Kann ich getragene Jacken im Hotel zurückgeben"
        got = _scores(kb, STAFF, query)
        assert set(got) == {"de-rueckgabe", "de-hotel", "de-jacke", "en-hotel"}
        assert _in(got, "de-") == _scores(ref_de, STAFF, query)
        assert _in(got, "en-") == _scores(ref_en, STAFF, query)  # "hotel", English analysis
        # hr reads two more German passages: its German statistics change, its ranking too.
        ref_de.ingest(GERMAN_HR)
        hr = _scores(kb, HR, query)
        assert _in(hr, "de-") == _scores(ref_de, HR, query) != _in(got, "de-")
        assert _in(hr, "en-") == _in(got, "en-")  # the English statistics did not move


def test_english_query_meets_english_passages_stemmed(locate: Locator) -> None:
    with KnowledgeBase.open(locate("mixed"), embedder="none") as kb, \
            KnowledgeBase.open(locate("ref-en"), analyzer="english", embedder="none") as ref:
        kb.ingest(GERMAN + ENGLISH + OTHER[:1])
        ref.ingest(ENGLISH)
        query = "can a worn jacket be returned"
        got = _scores(kb, STAFF, query)
        assert _in(got, "en-") == _scores(ref, STAFF, query) == {"en-returns": got["en-returns"]}
        # German stems of English words meet some German passages, below the English match.
        assert max(got, key=got.__getitem__) == "en-returns"


def test_unplaceable_query_is_matched_in_every_language(locate: Locator) -> None:
    """A code or a single word has no language: it is analysed for each readable language (and
    exact for passages without one), so the code's passage is found."""
    with KnowledgeBase.open(locate("mixed"), embedder="none") as kb:
        kb.ingest(GERMAN + ENGLISH + OTHER)
        assert list(_scores(kb, STAFF, "ERR-401")) == ["code"]
        assert set(_scores(kb, STAFF, "hotel")) == {"de-hotel", "en-hotel"}
        assert set(_scores(kb, STAFF, "vestes portées reprises")) == {"fr-retours"}


def test_match_all_holds_per_language(locate: Locator) -> None:
    with KnowledgeBase.open(locate("mixed"), embedder="none") as kb:
        kb.ingest(GERMAN + ENGLISH)
        res = kb.search(STAFF, "Jacken Wolle", mode="keyword", match="all")
        assert [h.document_id for h in res] == ["de-jacke"]


def test_reindex_switches_an_existing_store_to_auto(locate: Locator) -> None:
    """An exact store reindexed to auto ranks exactly as a store built auto, keeps its
    documents, versions and vectors, and a handle that analysed with the old analyzer is
    refused instead of writing terms of the wrong analysis."""
    docs = GERMAN + GERMAN_HR + ENGLISH + OTHER
    with KnowledgeBase.open(locate("built-auto"), analyzer="auto") as built:
        built.ingest(docs)
        queries = ["Kann ich getragene Jacken zurückgeben", "worn jacket returns", "ERR-401", "hotel"]
        want = {q: _scores(built, HR, q) for q in queries}
    with KnowledgeBase.open(locate("old"), analyzer="exact") as kb, \
            KnowledgeBase.open(locate("old")) as stale:
        kb.ingest(docs)
        before = kb.search(HR, "worn jacket returns", mode="vector", limit=5)
        assert _scores(kb, HR, "worn jacket returns") != want["worn jacket returns"]
        assert kb.reindex("auto") == sum(1 for _ in docs)
        assert kb.analyzer == "auto" and kb.stats()["analyzer"] == "auto"
        assert {q: _scores(kb, HR, q) for q in queries} == want
        after = kb.search(HR, "worn jacket returns", mode="vector", limit=5)
        assert [(h.document_id, h.version, h.score) for h in after] == \
            [(h.document_id, h.version, h.score) for h in before]
        with pytest.raises(StoreError, match="reindexed with the analyzer 'auto'"):
            stale.ingest(_doc("late", "Späte Jacken", language="de"))
        assert kb.document(HR, "late") is None
        stale.ingest(_doc("late", "Späte Jacken", language="de"))  # analysed again, with auto now
    with KnowledgeBase.open(locate("old")) as again:
        assert again.analyzer == "auto"
        assert set(_scores(again, HR, "Jacke")) == {"de-rueckgabe", "de-jacke", "de-gehalt", "late"}


def test_a_document_without_a_language_gets_the_identified_one(locate: Locator) -> None:
    """A document that states no language is stored with the language identified from its text
    when the model is sure, so `auto` stems it ("returning" meets "returned"); a line too short
    to tell stays without one; a stated language is never overridden."""
    stated = _doc("stated", "Rückgaben sind innerhalb von dreißig Tagen möglich, sagt die Richtlinie.",
                  language="en")
    plain = _doc("plain", "Worn jackets cannot be returned, but unworn ones within thirty days.",
                 language=None)
    with KnowledgeBase.open(locate("mixed"), embedder="none") as kb:
        kb.ingest([plain])  # a library caller's document is stored as it states itself ...
        assert kb.document(STAFF, "plain").language is None
        kb.remove("t", "plain")
        kb.ingest([  # ... unless identification is asked for (the CLI and sources do)
            _doc("en-plain", "Worn jackets cannot be returned, but returns of unworn items are "
                             "accepted within thirty days.", language=None),
            _doc("de-plain", "Getragene Jacken können nicht zurückgegeben werden, ungetragene "
                             "Artikel nehmen wir innerhalb von dreißig Tagen zurück.", language=None),
            OTHER[1], stated,
        ], identify_languages=True)
        langs = {d.id: d.language for d in kb.documents("t")}
        assert langs == {"en-plain": "en", "de-plain": "de", "code": None, "stated": "en"}
        assert "en-plain" in _scores(kb, STAFF, "returning")  # exact analysis would miss it
        # Re-ingesting the same documents finds them unchanged (identification is deterministic).
        again = kb.ingest([_doc("en-plain", "Worn jackets cannot be returned, but returns of unworn "
                                            "items are accepted within thirty days.", language=None)],
                          identify_languages=True)
        assert again.unchanged == 1 and again.added == again.superseded == 0
