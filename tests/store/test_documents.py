"""Documents, versions, supersede, remove and history, on a real SQLite file and in PostgreSQL
(the ``any_kb`` and ``locate`` fixtures run each contract test on both backends)."""

from __future__ import annotations

import gc
import sqlite3
import weakref
from pathlib import Path

import pytest

from actors import PUBLIC_INTERNAL
from backends import Locator, raw
from documents import doc
from evidex import Actor, Document, DocumentError, EvidexError, KnowledgeBase, StoreError
from evidex.model import sha256_text

A = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)


def generation(location: str) -> int:
    return int(raw(location, "SELECT value FROM meta WHERE key = 'generation'")[0][0])


def test_open_creates_the_file(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    assert not path.exists()
    KnowledgeBase.open(path).close()
    assert path.exists()


def test_report_counts_added_superseded_unchanged(any_kb: KnowledgeBase) -> None:
    r = any_kb.ingest([doc("a"), doc("b")])
    assert (r.added, r.superseded, r.unchanged, r.passages_written) == (2, 0, 0, 4)
    r = any_kb.ingest([doc("a"), doc("b", version="2", text="new text")])
    assert (r.added, r.superseded, r.unchanged, r.passages_written) == (0, 1, 1, 1)


def test_same_version_and_fingerprint_writes_nothing(locate: Locator) -> None:
    path = locate("kb")
    kb = KnowledgeBase.open(path)
    kb.ingest([doc()])
    before = generation(path), kb.stats()
    assert kb.ingest([doc()]).unchanged == 1
    assert (generation(path), kb.stats()) == before
    kb.close()


def test_same_version_with_other_text_supersedes(any_kb: KnowledgeBase) -> None:
    any_kb.ingest([doc(text="alpha")])
    assert any_kb.ingest([doc(text="omega")]).superseded == 1
    assert any_kb.search(A, "alpha", mode="keyword") == []
    assert [h.quote for h in any_kb.search(A, "omega", mode="keyword")] == ["omega"]


def test_access_change_at_same_version_reindexes(any_kb: KnowledgeBase) -> None:
    """Revoking a group must take effect even when version and text are equal."""
    any_kb.ingest([doc(groups={"g"})])
    assert any_kb.search(A, "alpha", mode="keyword")
    assert any_kb.ingest([doc(groups={"other"})]).superseded == 1
    assert any_kb.search(A, "alpha", mode="keyword") == []


def test_supersede_replaces_all_passages(any_kb: KnowledgeBase) -> None:
    any_kb.ingest([doc(text="old one\n\nold two\n\nold three")])
    any_kb.ingest([doc(version="2", text="new one")])
    assert any_kb.search(A, "old", mode="keyword") == []
    hits = any_kb.search(A, "new", mode="keyword")
    assert [(h.version, h.passage) for h in hits] == [("2", 1)]
    assert any_kb.stats()["passages"] == 1


def test_duplicate_ids_in_one_batch_reject_the_whole_batch(locate: Locator) -> None:
    path = locate("kb")
    kb = KnowledgeBase.open(path)
    kb.ingest([doc("x")])
    before = (generation(path), kb.stats()["passages"])
    with pytest.raises(DocumentError, match="appears twice"):
        kb.ingest([doc("new"), doc("a"), doc("a", version="2")])
    assert (generation(path), kb.stats()["passages"]) == before
    assert kb.search(A, "alpha", mode="keyword")[0].document_id == "x"


def test_same_id_in_two_tenants_is_two_documents(any_kb: KnowledgeBase) -> None:
    any_kb.ingest([doc("a"), doc("a", tenant="u")])
    assert any_kb.stats()["documents"] == 2
    other = Actor("u", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
    assert {h.document_id for h in any_kb.search(other, "alpha", mode="keyword")} == {"a"}


def test_content_sha256_is_sha256_of_utf8_text(any_kb: KnowledgeBase) -> None:
    text = "Grüße aus Köln\n\nzweiter Absatz"
    any_kb.ingest([doc(text=text)])
    hit = any_kb.search(A, "grüße", mode="keyword")[0]
    assert hit.content_sha256 == sha256_text(text)
    import hashlib

    assert hit.content_sha256 == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_history_can_be_turned_off(locate: Locator) -> None:
    kb = KnowledgeBase.open(locate("kb"), keep_history=False)
    kb.ingest([doc()])
    kb.ingest([doc(version="2", text="x")])
    assert kb.stats()["history_versions"] == 0
    kb.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"groups": set()}, "must not be empty"),
        ({"visibility": "pubic"}, "visibility"),
        ({"language": "English"}, "language"),
        ({"published_at": "yesterday"}, "ISO 8601"),
        ({"tags": "policy"}, "tags"),
        ({"title": "  "}, "title"),
    ],
)
def test_invalid_documents_raise_document_error(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(DocumentError, match=message):
        doc(**kwargs)


@pytest.mark.parametrize("bad_id", ["", " padded", "a\nb", 7, None, "x" * 257])
def test_invalid_ids(bad_id: object) -> None:
    with pytest.raises(DocumentError, match=r"Document\.id"):
        Document(bad_id, "t", {"g"}, "1", "text")  # type: ignore[arg-type]


@pytest.mark.parametrize(("kwargs", "where"), [
    ({"text": "bad \ud800 text"}, "Document.text of 'd1'"),
    ({"text": "ends badly \udfff"}, "Document.text of 'd1'"),
    ({"title": "t\udc80"}, "Document.title of 'd1'"),
    ({"id": "d\ud83d"}, "Document.id"),
    ({"version": "v\ud800"}, "Document.version"),
    ({"tags": ["ok", "x\ud800"]}, "Document.tags"),
    ({"groups": {"g\ud800"}}, "Document.groups"),
])
def test_lone_surrogates_are_a_document_error_and_write_nothing(
        any_kb: KnowledgeBase, kwargs: dict[str, object], where: str) -> None:
    """A lone surrogate is not Unicode text (it cannot be UTF-8): a one-line DocumentError where
    the document is built, never a UnicodeEncodeError from deep inside a write."""
    with pytest.raises(DocumentError, match="not valid Unicode text: a lone surrogate") as err:
        any_kb.ingest([doc("good"), doc(**kwargs)])
    assert where in str(err.value) and "\n" not in str(err.value)
    assert any_kb.stats()["documents"] == 0
    paired = doc(text="an emoji \U0001f600 is a pair, not a lone surrogate")
    assert any_kb.ingest([paired]).added == 1


def test_lone_surrogates_in_ids_and_queries_are_input_errors(any_kb: KnowledgeBase) -> None:
    any_kb.ingest([doc()])
    with pytest.raises(DocumentError, match="lone surrogate"):
        any_kb.document(A, "d\ud800")
    with pytest.raises(DocumentError, match="lone surrogate"):
        any_kb.remove("t", "d\ud800")
    with pytest.raises(EvidexError, match="lone surrogate"):
        any_kb.search(A, "alpha \ud800", mode="keyword")
    with pytest.raises(EvidexError, match="lone surrogate"):
        Actor("t\ud800", frozenset({"g"}))


def test_non_document_in_batch_is_rejected(any_kb: KnowledgeBase) -> None:
    with pytest.raises(DocumentError, match="not a Document"):
        any_kb.ingest([doc(), {"id": "x"}])  # type: ignore[list-item]
    assert any_kb.stats()["documents"] == 0


def test_unknown_split_is_rejected(any_kb: KnowledgeBase) -> None:
    with pytest.raises(DocumentError, match="split must be one of"):
        any_kb.ingest([doc()], split="sentence")


def test_store_keeps_its_analyzer(locate: Locator) -> None:
    path = locate("kb")
    KnowledgeBase.open(path, analyzer="english").close()
    with KnowledgeBase.open(path) as again:
        assert again.analyzer == "english"
    with pytest.raises(StoreError, match="created with the analyzer 'english'"):
        KnowledgeBase.open(path, analyzer="exact")


def test_a_foreign_file_is_not_opened(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError):
        KnowledgeBase.open(junk)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE x (y)")
    with pytest.raises(StoreError, match="not an evidex store"):
        KnowledgeBase.open(other)


def test_errors_are_value_errors() -> None:
    for err in (DocumentError, StoreError, EvidexError):
        assert issubclass(err, ValueError)


def test_cached_rows_give_the_stored_fields_and_are_not_walked_by_the_collector(
        any_kb: KnowledgeBase) -> None:
    """Hits are built from row caches that hold plain tuples (a full garbage collection walks
    every cached object; tuples of strings and numbers are untracked), and a hit served from
    the cache carries the same fields as one read from the database."""
    doc = Document("d1", "t", {"g"}, "1", "alpha beta\n\ngamma alpha", title="T", tags=("x",),
                   source_url="https://example.org/d1", language="en")
    any_kb.ingest(doc)
    actor = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
    first = [h.citation() for h in any_kb.search(actor, "alpha", mode="keyword")]
    again = [h.citation() for h in any_kb.search(actor, "alpha", mode="keyword")]
    assert first == again and len(first) == 2
    assert {(c["title"], c["source_url"]) for c in first} == {("T", "https://example.org/d1")}
    cache = any_kb.store._cache  # type: ignore[attr-defined]
    gc.collect()
    gc.collect()
    assert cache.passage_rows and cache.document_rows
    assert not any(gc.is_tracked(r) for r in cache.passage_rows.values())
    assert not any(gc.is_tracked(r) for r in cache.document_rows.values())
    with any_kb.store.read() as view:
        (d,) = view.documents(cache.document_rows).values()
    want = ("d1", frozenset({"g"}), ("x",), "en", "internal")
    assert (d.id, d.groups, d.tags, d.language, d.visibility) == want


def test_a_closed_handle_drops_its_caches_and_says_it_is_closed(any_kb: KnowledgeBase) -> None:
    """A closed handle keeps no arrays (at 1M passages its caches are hundreds of MB, and while
    one stayed alive the next handle's first queries ran 2-3x slower), and using it afterwards
    is a clear error rather than a backend's own exception."""
    actor = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
    any_kb.ingest([Document(f"d{i}", "t", frozenset({"g"}), "1", f"common words {i}") for i in range(20)])
    assert any_kb.search(actor, "common words", mode="keyword")
    bm25 = any_kb._bm25
    segments = weakref.ref(any_kb.store._cache)
    assert bm25._cache and segments() is not None
    any_kb.close()
    gc.collect()
    assert not bm25._cache and segments() is None  # one cache holds every derived array
    with pytest.raises(StoreError, match="closed"):
        any_kb.search(actor, "common words", mode="keyword")
    with pytest.raises(StoreError, match="closed"):
        any_kb.ingest([Document("d0", "t", frozenset({"g"}), "2", "changed")])
    any_kb.close()  # twice is harmless


