"""The library calls the CLI and the service are built on: ``document``, batched ``ingest``,
and ``retrieve.search`` as the one ranking call behind ``KnowledgeBase.search``.

Run on both backends (the ``any_kb`` and ``locate`` fixtures)."""

from __future__ import annotations

from functools import partial

import pytest

import documents
from actors import PUBLIC_INTERNAL
from backends import Locator
from evidex import Actor, DocumentError, DocumentView, EvidexError, IngestReport, KnowledgeBase
from evidex.store import SourceEntry

STAFF = Actor("t", frozenset({"staff"}), visibilities=PUBLIC_INTERNAL)


doc = partial(documents.doc, groups={"staff"})


# -- document -----------------------------------------------------------------------------------
def test_document_gives_metadata_and_current_passages_in_order(any_kb: KnowledgeBase) -> None:
    any_kb.ingest(doc("d", "one two\n\nthree four\n\nfive six", title="T", tags=("x",)))
    got = any_kb.document(STAFF, "d")
    assert isinstance(got, DocumentView)
    assert (got.document_id, got.version, got.title, got.tags) == ("d", "1", "T", ("x",))
    assert [(p.number, p.text) for p in got.passages] == [(1, "one two"), (2, "three four"),
                                                          (3, "five six")]
    text = "one two\n\nthree four\n\nfive six"
    assert all(text[p.start:p.end] == p.text for p in got.passages)
    # What search cites for a passage is what the document view shows for it.
    hit = any_kb.search(STAFF, "three", mode="keyword")[0]
    shown = got.passages[hit.passage - 1]
    assert (shown.text, shown.start, shown.end) == (hit.quote, hit.start, hit.end)
    assert got.content_sha256 == hit.content_sha256

    any_kb.ingest(doc("d", "seven eight", version="2"))
    now = any_kb.document(STAFF, "d")
    assert now is not None and now.version == "2"
    assert [p.text for p in now.passages] == ["seven eight"]


def test_document_is_none_when_unknown_or_not_readable(any_kb: KnowledgeBase) -> None:
    any_kb.ingest([doc("staff-only"), doc("hr-note", groups={"hr"}),
                   doc("secret", visibility="confidential")])
    assert any_kb.document(STAFF, "staff-only") is not None
    for who, doc_id in ((STAFF, "no-such"), (STAFF, "hr-note"), (STAFF, "secret"),
                        (Actor("other", frozenset({"staff"}), visibilities=PUBLIC_INTERNAL), "staff-only"),
                        (Actor("t", frozenset({"staff"}), active=False, visibilities=PUBLIC_INTERNAL),
                         "staff-only")):
        assert any_kb.document(who, doc_id) is None, (who, doc_id)


def test_document_checks_its_arguments(any_kb: KnowledgeBase) -> None:
    with pytest.raises(EvidexError, match=r"evidex\.Actor"):
        any_kb.document("t", "d")  # type: ignore[arg-type]
    with pytest.raises(DocumentError, match="document_id must be a string"):
        any_kb.document(STAFF, 7)  # type: ignore[arg-type]


def test_document_as_dict_is_the_api_body(any_kb: KnowledgeBase) -> None:
    any_kb.ingest(doc("d", "# Head\n\nbody text", source_url="https://example.com/d"), split="heading")
    body = any_kb.document(STAFF, "d").as_dict()  # type: ignore[union-attr]
    assert list(body) == ["document_id", "version", "content_sha256", "title", "source_url",
                          "language", "tags", "published_at", "indexed_at", "passages"]
    assert body["source_url"] == "https://example.com/d"
    assert body["passages"] == [{"passage": 1, "start": 0, "end": len("# Head\n\nbody text"),
                                 "quote": "# Head\n\nbody text", "heading_path": ["Head"],
                                 "anchor": "head", "page": None, "flags": []}]


# -- ingest in batches --------------------------------------------------------------------------
def test_batched_ingest_sums_reports_and_reports_progress(any_kb: KnowledgeBase) -> None:
    calls: list[tuple[int, int]] = []
    docs = [doc(f"d{i}", f"word{i} common") for i in range(5)]
    report = any_kb.ingest(docs, batch_size=2, progress=lambda done, total: calls.append((done, total)))
    assert report == IngestReport(added=5, passages_written=5)
    assert calls == [(2, 5), (4, 5), (5, 5)]
    again = any_kb.ingest([*docs[:4], doc("d4", "changed", version="2")], batch_size=3)
    assert again == IngestReport(superseded=1, unchanged=4, passages_written=1)
    assert [h.document_id for h in any_kb.search(STAFF, "common", limit=10, mode="keyword")] \
        == [f"d{i}" for i in range(4)]


def test_one_transaction_reports_progress_once(any_kb: KnowledgeBase) -> None:
    calls: list[tuple[int, int]] = []
    any_kb.ingest([doc("a"), doc("b")], progress=lambda done, total: calls.append((done, total)))
    assert calls == [(2, 2)]


def test_batched_ingest_checks_the_whole_input_before_writing(any_kb: KnowledgeBase) -> None:
    docs = [doc("a"), doc("b"), doc("c"), doc("a", "other text")]
    with pytest.raises(DocumentError, match="appears twice"):
        any_kb.ingest(docs, batch_size=1)
    with pytest.raises(DocumentError, match="not a Document"):
        any_kb.ingest([doc("a"), "b"], batch_size=1)  # type: ignore[list-item]
    assert any_kb.documents() == []


@pytest.mark.parametrize("size", [0, -1, True, 2.0, "2"])
def test_batch_size_must_be_a_positive_int(any_kb: KnowledgeBase, size: object) -> None:
    with pytest.raises(DocumentError, match="batch_size"):
        any_kb.ingest([doc("a")], batch_size=size)  # type: ignore[arg-type]
    assert any_kb.documents() == []


def test_batched_source_entries_go_with_their_documents(locate: Locator) -> None:
    with KnowledgeBase.open(locate("kb")) as kb:
        docs = [doc(f"d{i}") for i in range(3)]
        entries = [SourceEntry("src", "t", d.id, f"/files/{d.id}.md", "stamp", d.content_sha256)
                   for d in docs]
        kb.ingest(docs, batch_size=2, sources=entries[::-1])
        assert kb.source_entries("src") == entries
        stray = SourceEntry("src", "t", "elsewhere", "/x.md", "s", "0" * 64)
        with pytest.raises(DocumentError, match=r"'elsewhere'.*not in the input"):
            kb.ingest([doc("d9")], batch_size=2, sources=[stray])
        assert {d.id for d in kb.documents()} == {"d0", "d1", "d2"}


# -- search: one call into retrieve -------------------------------------------------------------
@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
def test_search_is_retrieve_search_then_decide_over_one_view(any_kb: KnowledgeBase, mode: str) -> None:
    """KnowledgeBase.search adds validation and parsing only: one query value ranked by
    retrieve.search, then (asked for) decided on by decide.evidence, gives the same hits,
    scores and evidence."""
    from evidex.decide import evidence
    from evidex.query import analyzer_for, parse_query
    from evidex.retrieve import make_query, search

    any_kb.ingest([doc(f"d{i}", f"alpha {'beta ' * i}\n\ngamma {i}\n\nalpha delta") for i in range(8)])
    got = any_kb.search(STAFF, "alpha beta", limit=4, mode=mode, explain=True)
    qvec = any_kb._query_vector("alpha beta") if mode != "keyword" else None
    with any_kb.store.read() as view:
        q = make_query(view, STAFF, "alpha beta", analyzer=any_kb.analyzer,
                       words=parse_query("alpha beta"), mode=mode, limit=4, depth=4, vector=qvec,
                       explain=True, evidence=True)
        ranking = search(view, any_kb._bm25, q)
        want = evidence(view, q, ranking, any_kb._calibration_now(),
                        analyzer_for(any_kb.analyzer, q.keyword.own_language).terms,
                        any_kb._probes() if qvec is not None else None)
    assert [h.as_dict() for h in got] == [h.as_dict() for h in want.hits] and len(got) == 4
    assert (got.evidence, got.signals, got.terms) == (want.level, want.signals, tuple(q.keyword.terms))


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
def test_a_plain_search_ranks_only(any_kb: KnowledgeBase, mode: str,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Without evidence=True, explain or the ranker, search never runs the decision: the same
    hits, evidence None, no support; asked, the decision runs and the hits are the same."""
    import evidex.decide

    any_kb.ingest([doc(f"d{i}", f"alpha {'beta ' * i}\n\ngamma {i}\n\nalpha delta") for i in range(8)])
    asked = any_kb.search(STAFF, "alpha beta", limit=4, mode=mode, evidence=True)
    assert asked.evidence in ("weak", "strong") and asked.support and asked.topic is not None

    def refuse(*a: object, **kw: object) -> None:
        raise AssertionError("a plain search ran the decision")

    monkeypatch.setattr(evidex.decide, "evidence", refuse)
    plain = any_kb.search(STAFF, "alpha beta", limit=4, mode=mode)
    assert [h.as_dict() for h in plain] == [h.as_dict() for h in asked]
    assert (plain.evidence, plain.support, plain.topic, plain.signals) == (None, [], None, {})
    with pytest.raises(AssertionError, match="ran the decision"):
        any_kb.search(STAFF, "alpha beta", limit=4, mode=mode, explain=True)


# -- read your writes: the session is a value the caller hands over -------------------------------
def test_a_session_records_exactly_the_calls_it_is_handed(any_kb: KnowledgeBase) -> None:
    """Read-your-writes travels as an explicit value (issue 46): the writes and reads handed a
    session are recorded in it, in order; a call handed another session, or none, leaves it
    untouched, even when the calls interleave in one thread."""
    mine, other = any_kb.session(), any_kb.session()
    lineage = any_kb.store.lineage
    report = any_kb.ingest(doc("d", "alpha beta"), session=mine)
    assert mine.written == {lineage: report.generation} and other.written == {}
    any_kb.ingest(doc("e", "alpha gamma"))  # no session: recorded nowhere
    assert mine.written == {lineage: report.generation}
    before = len(mine.served)  # the write's own reads (conflict detection) are the session's too
    assert len(any_kb.search(STAFF, "alpha", mode="keyword", session=other)) == 2
    assert any_kb.document(STAFF, "d", session=mine) is not None
    hit = any_kb.search(STAFF, "beta", mode="keyword")[0]  # no session
    assert any_kb.resolve(STAFF, hit.citation(), session=mine).ok
    assert len(mine.served) == before + 2 and len(other.served) == 1
    assert [s.generation for s in mine.served[before:]] == [report.generation + 1] * 2
    assert any_kb.remove("t", "e", session=other)
    assert other.written[lineage] > report.generation + 1 and mine.written[lineage] == report.generation


def test_a_session_that_needs_a_generation_never_committed_is_refused(any_kb: KnowledgeBase) -> None:
    """A generation names one store's write: a session asking this store for one it never
    committed is a mistake (a number from another store), said at the read."""
    report = any_kb.ingest(doc("d", "alpha"))
    assert report.generation is not None
    with pytest.raises(EvidexError, match="never committed here"):
        any_kb.search(STAFF, "alpha", session=any_kb.session(at_least=report.generation + 5))
    assert any_kb.search(STAFF, "alpha", mode="keyword", session=any_kb.session(at_least=report.generation))
