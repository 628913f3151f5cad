"""What only the PostgreSQL backend has: its location URL, schema migrations, the opt-in HNSW
vector search, and copying stores between backends with ``evidex migrate``.

The contract behaviour shared with SQLite (versions, supersede atomicity, permission-exact
statistics, exact vectors, concurrency) is tested on both backends by the parametrized suites
(test_documents, test_resolve, test_permission_exact, test_vector_exact, test_concurrency).
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import documents
from actors import PUBLIC_INTERNAL
from backends import Locator, locator, raw
from cli_runner import run_cli
from documents import random_docs as _random_docs
from evidex import Actor, Document, KnowledgeBase, StoreError
from evidex.ingest import load_paths
from evidex.kb import migrate_store
from evidex.store import PostgresStore, SourceEntry, open_store
from old_stores import postgres_legacy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
A = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)


@pytest.fixture
def pg(tmp_path: Path, pg_url: str) -> Iterator[Locator]:
    loc = locator("postgres", tmp_path)
    yield loc
    loc.cleanup()


def test_unreachable_server_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot connect"):
        PostgresStore(f"postgresql://nobody@/db?host={tmp_path}", connect_timeout=2)


def test_newer_schema_is_refused(pg: Locator) -> None:
    """A store upgraded by a newer evidex (a migration this code does not know), or numbered
    beyond the versions this code knows, is refused rather than misread."""
    url = pg("future")
    KnowledgeBase.open(url).close()
    raw(url, "INSERT INTO migrations (name, applied_at) VALUES ('from_the_future', 'x') RETURNING name")
    with pytest.raises(StoreError, match="upgrade evidex"):
        KnowledgeBase.open(url)
    old = pg("old_future")
    postgres_legacy(url, old, 3)
    raw(old, "INSERT INTO schema_version (version) VALUES (99) RETURNING version")
    with pytest.raises(StoreError, match="upgrade evidex"):
        KnowledgeBase.open(old)




def _hits(kb: KnowledgeBase, q: str, mode: str) -> list[tuple[str, int, float]]:
    return [(h.document_id, h.passage, h.score)
            for h in kb.search(A, q, mode=mode, limit=10, max_per_document=None)]


def test_exact_mode_keeps_sqlite_vector_blocks_in_step_with_writes(pg: Locator, tmp_path: Path) -> None:
    """Exact mode searches in-memory blocks loaded from pgvector: one long-lived reader per
    backend sees the same results, floats included, as SQLite's across bulk loads (a block past
    the int8 threshold), supersedes and removes (incremental refreshes with tombstones) and a
    full merge; the blocks hold exactly the live passages; and no vector query reaches the
    database once they are loaded (the vectors table is emptied behind the reader's back)."""
    rng = random.Random(11)
    docs = _random_docs(rng, 800, ("g", "h"))  # 1,200 passages of g: small block
    docs += [Document(f"x{d.id}", d.tenant, d.groups, d.version, d.text)  # + 4,500: one block
             for d in _random_docs(rng, 1500, ("g",))]  # past QUANT_MIN_ROWS
    lite = KnowledgeBase.open(tmp_path / "lite.db")
    url = pg("blocks")
    pgkb = KnowledgeBase.open(url)
    queries = [" ".join(f"w{rng.randrange(300)}" for _ in range(3)) for _ in range(8)]
    try:
        def compare(step: str) -> None:
            for q in queries:
                for mode in ("vector", "hybrid"):
                    assert _hits(pgkb, q, mode) == _hits(lite, q, mode), (step, q, mode)
            with pgkb.store.read() as view:  # type: ignore[attr-defined]
                blocks = pgkb.store._vectors.blocks  # type: ignore[attr-defined]
                live = int((view.sig >= 0).sum())
            assert blocks is not None and blocks.rows() == live, step

        for kb in (lite, pgkb):
            kb.ingest(docs[:1000])
        compare("first load")
        for kb in (lite, pgkb):
            kb.ingest(docs[1000:])
        compare("second load, incremental")
        changed = [Document(d.id, d.tenant, d.groups, "2", d.text + "\n\nw1 w2 w3")
                   for d in rng.sample(docs, 40)]
        for kb in (lite, pgkb):
            kb.ingest(changed)
            kb.remove("t", docs[0].id)
        compare("after supersede and remove")
        for kb in (lite, pgkb):
            kb.optimize()
        compare("after merge")
        raw(url, "DELETE FROM vectors RETURNING pid")
        for q in queries:
            assert _hits(pgkb, q, "vector") == _hits(lite, q, "vector"), q
    finally:
        lite.close()
        pgkb.close()


def test_exact_mode_refuses_a_live_passage_without_a_vector(pg: Locator) -> None:
    """A live passage whose vector row is missing is a corrupt store: loading the blocks fails
    loudly instead of searching a zero vector for it."""
    url = pg("lost")
    with KnowledgeBase.open(url) as kb:
        kb.ingest(_random_docs(random.Random(2), 20, ("g",)))
    raw(url, "DELETE FROM vectors WHERE pid = (SELECT min(pid) FROM passages) RETURNING pid")
    with KnowledgeBase.open(url) as kb, pytest.raises(StoreError, match="no stored vector"):
        kb.search(A, "w1 w2", mode="vector")


def test_exact_mode_loads_a_merged_segment_with_no_live_passages(pg: Locator) -> None:
    """Removing every document and merging leaves an empty segment: a fresh reader loads it
    (no vectors to read) and finds nothing, then finds a new document."""
    url = pg("emptied")
    with KnowledgeBase.open(url) as kb:
        kb.ingest(_random_docs(random.Random(4), 5, ("g",)))
        for i in range(5):
            kb.remove("t", f"g{i:05d}")
        kb.optimize()
    assert raw(url, "SELECT n FROM segments") == [(0,)]
    with KnowledgeBase.open(url) as kb:
        assert kb.search(A, "w1 w2", mode="vector") == []
        kb.ingest(Document("g-new", "t", frozenset({"g"}), "1", "w1 w2"))
        assert [h.document_id for h in kb.search(A, "w1 w2", mode="vector")] == ["g-new"]


def test_vector_loader_reads_sparse_and_dense_pid_sets(pg: Locator) -> None:
    """The binary COPY reader returns the rows of the ids asked for, in id order, through the
    range scan (dense ids) and the id-list query (sparse ids) alike, equal to the stored vectors."""
    url = pg("copy")
    with KnowledgeBase.open(url) as kb:
        kb.ingest(_random_docs(random.Random(3), 200, ("g",)))
        with kb.store.read() as view:  # type: ignore[attr-defined]
            pids = sorted(int(r[0]) for r in raw(url, "SELECT pid FROM passages"))
            dim = kb.store.dimension  # type: ignore[attr-defined]
            stored = view.passage_vectors(pids)
            for want in (pids[:300], [pids[0], pids[-2], pids[-1]]):  # dense: range; sparse: list
                got, mat = kb.store._vectors.load(view._c, np.array(want, dtype=np.int64), dim)  # type: ignore[attr-defined]
                assert got.tolist() == want and mat.shape == (len(want), dim)
                assert all(np.array_equal(mat[i], stored[p]) for i, p in enumerate(want))


def test_keyword_searches_load_no_vectors(pg: Locator) -> None:
    """Processes that only run keyword searches never hold the vector blocks; the first vector
    search loads exactly the live passages."""
    url = pg("kwonly")
    with KnowledgeBase.open(url) as kb:
        kb.ingest(_random_docs(random.Random(6), 30, ("g",)))
        kb.remove("t", "g00000")
    with KnowledgeBase.open(url) as kb:
        assert kb.search(A, "w1 w2", mode="keyword") is not None
        assert kb.store._vectors.blocks is None  # type: ignore[attr-defined]
        kb.search(A, "w1 w2", mode="vector")
        assert kb.store._vectors.blocks.rows() == 29 * 3  # type: ignore[attr-defined]


def _history_store(location: str) -> dict[str, object]:
    """The example collection with its superseded policy, and document "d" in three versions;
    returns a citation of version 1 of "d"."""
    with KnowledgeBase.open(location) as kb:
        loaded = load_paths([EXAMPLES / "versions"], {"tenant": "acme"})
        kb.ingest(loaded.documents, split="heading")
        loaded = load_paths([EXAMPLES / "collection"], {"tenant": "acme"})
        kb.ingest(loaded.documents, split="heading")
        cited: dict[str, object] = {}
        for v in (0, 1, 2):
            kb.ingest(Document("d", "t", frozenset({"g"}), str(v), f"alpha version {v}\n\nbeta {v}"))
            if v == 1:
                cited = kb.search(A, "alpha", mode="keyword")[0].citation()
    return cited


def _snapshot(kb: KnowledgeBase) -> list[object]:
    staff = Actor("acme", frozenset({"staff"}), visibilities=PUBLIC_INTERNAL)
    out: list[object] = []
    for actor, q in ((staff, "zwei Personen Belege"), (staff, "return jacket"), (A, "alpha beta")):
        for mode in ("keyword", "vector", "hybrid"):
            out.append([(h.document_id, h.version, h.passage, h.score) for h in
                        kb.search(actor, q, mode=mode, limit=10)])
    out.append([(d.tenant, d.id, d.version, d.content_sha256) for d in kb.documents()])
    return out


def test_migrate_sqlite_to_postgres_and_back(tmp_path: Path, pg: Locator) -> None:
    """``evidex migrate`` copies documents, passages, vectors and history: searches give the
    same hits and scores, an old citation still resolves to its matched version, and the copy
    back to SQLite is equal again. A non-empty target is refused."""
    src = str(tmp_path / "src.db")
    old = _history_store(src)
    with KnowledgeBase.open(src) as a:
        doc = next(iter(a.documents()))
        a.store.apply([], keep_history=True, sources=[
            SourceEntry("help", doc.tenant, doc.id, "d.md", "12:34:56", doc.content_sha256)])
    dst = pg("copy")
    proc = run_cli("migrate", "--from", src, "--to", dst, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["mismatches"] == [] and report["verified"] == report["documents"] >= 10
    assert report["history_versions"] >= 3
    with KnowledgeBase.open(src) as a, KnowledgeBase.open(dst) as b:
        assert _snapshot(a) == _snapshot(b)
        assert b.stats()["history_versions"] == a.stats()["history_versions"]
        assert b.resolve(A, old).matched_version == a.resolve(A, old).matched_version == "1"
        assert b.source_entries() == a.source_entries() and len(a.source_entries()) == 1
    back = str(tmp_path / "back.db")
    proc = run_cli("migrate", "--from", dst, "--to", back)
    assert proc.returncode == 0, proc.stderr
    with KnowledgeBase.open(src) as a, KnowledgeBase.open(back) as c:
        assert _snapshot(a) == _snapshot(c)
    again = run_cli("migrate", "--from", src, "--to", dst)
    assert again.returncode == 1 and "already holds documents" in again.stderr


def test_cli_with_a_postgres_url(pg: Locator) -> None:
    url = pg("cli")
    ing = run_cli("ingest", EXAMPLES / "collection", "--tenant", "acme", "--split", "heading", "--json",
                  db=url)
    assert ing.returncode == 0, ing.stderr
    found = run_cli("search", "ERR-401", "--tenant", "acme", "--groups", "customers", "--visibilities",
                    "public", "--json", db=url)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert hits and "ERR-401" in hits[0]["quote"]
    store = open_store(url)
    try:
        assert store.stats()["backend"] == "postgresql" and store.stats()["documents"] > 5
    finally:
        store.close()


def test_vector_array_round_trip(pg: Locator) -> None:
    """Vectors go in and out in pgvector's binary format without changing a bit."""
    url = pg("vec")
    store = PostgresStore(url, create_embedder=("hash-test", 64))
    try:
        v = np.random.default_rng(1).standard_normal(64).astype(np.float32)
        with store._pooled() as conn:
            got = conn.cursor(binary=True).execute("SELECT %s::vector", (v,)).fetchone()[0]
        assert got.dtype == np.float32 and np.array_equal(got, v)
    finally:
        store.close()


def test_migrate_copies_conflicts_and_the_run_log_both_ways(tmp_path: Path, pg: Locator) -> None:
    """Recorded conflicts (when found, an admin's dismissal) and scheduler runs travel with the
    documents: SQLite to PostgreSQL and back, equal each time."""
    from evidex.store import RunRecord

    doc = partial(documents.doc, tenant="acme", groups={"staff"}, language="en")

    src = str(tmp_path / "src.db")
    with KnowledgeBase.open(src) as a:
        a.ingest([doc("care", "# Re-proofing\n\nRe-proof your waterproof shell jacket every 12 months "
                              "with the spray-on product.\n"),
                  doc("boots", "# Waxing\n\nWax your leather hiking boots every 3 months with the "
                               "boot wax.\n")], split="heading")
        found = a.ingest([doc("shell", "# Care\n\nRe-proof your waterproof shell jacket every 6 "
                                       "months with the spray-on product.\n"),
                          doc("wax", "# Waxing\n\nWax your leather hiking boots every 2 months with "
                                     "the boot wax.\n")], split="heading").conflicts
        assert len(found) == 2
        assert a.dismiss_conflict("acme", found[0].id, "admin@acme")
        for i in range(3):
            a.store.record_run(RunRecord("sync", "help", "acme", f"2026-12-0{i + 1}T00:00:00+00:00",
                                         f"2026-12-0{i + 1}T00:00:05+00:00", i != 1, {"added": i},
                                         ("a problem",) if i == 1 else (), f"2026-12-0{i + 1}T00:00"))
        conflicts, runs = a.conflicts(), a.runs()

    def same(url: str) -> None:
        with KnowledgeBase.open(url) as b:
            got = b.conflicts()
            assert [(c.kind, c.a, c.b, c.detected_at, c.status, c.reason) for c in got] == [
                (c.kind, c.a, c.b, c.detected_at, c.status, c.reason) for c in conflicts]
            assert [c.status for c in got] == ["open", "dismissed"]
            assert [dataclasses.replace(r, id=None) for r in b.runs()] == [
                dataclasses.replace(r, id=None) for r in runs]

    dst = pg("conflicts")
    report = migrate_store(src, dst)
    assert (report.mismatches, report.conflicts, report.runs) == ([], 2, 3)
    same(dst)
    back = str(tmp_path / "back.db")
    assert migrate_store(dst, back).mismatches == []
    same(back)
