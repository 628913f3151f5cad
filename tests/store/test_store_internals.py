"""store's internals: segments, merges, migrations, the schema, the citation columns and the
PostgreSQL URL and COPY parsers, each tested through the module that defines it (``_segments``,
``_merge_policy``, ``_merge_runner``/``_core_merge``, ``_sqlite``, ``_migrations``, ``_schema``,
``_contract``, ``_location``, ``_pgvector``, and ``_vectors``' large blocks: a quantised first
pass, exact re-scoring). The store contract itself is tested through the public names in the
other files here.

The keyword index as immutable segments: tiered merges, tombstones, optimize and cache refresh.

Every check compares a store that went through a long history of small writes (each one a
segment, merged in tiers of MERGE_FACTOR, superseded and removed passages tombstoned) with a
store freshly built from only the final documents: hits, versions, quotes and scores must be
identical, for several actors, after every single step. A second handle on the same file,
opened before the writes, must agree as well (its in-memory segment cache refreshes through the
generation counter).

Segment merges after the write returns: what a write must not wait for, and what the merge must
still get right while other writes and readers go on meanwhile.

A ``slow`` mark on a test that starts no process keeps it where it was: it came from a
module whose imports mark all its tests slow (tests/conftest.py), and ``make test-fast`` runs
what it ran.
"""

from __future__ import annotations

import math
import random
import sqlite3
import struct
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evidex.store._core_merge as merge_module
import evidex.store._core_write as write_module
import evidex.store._sqlite as sqlite_module
from actors import PUBLIC_INTERNAL
from backends import Locator, locator, raw
from backends import sqlite_layout as _layout
from documents import ODD_GROUPS, ODD_IDS, doc
from documents import odd_document as _odd_document
from documents import random_docs as _random_docs
from evidex import Actor, Document, Hit, KnowledgeBase, StoreError
from evidex.embed import get_embedder
from evidex.store import SourceEntry, _pgvector, _vectors
from evidex.store._contract import CITED
from evidex.store._location import split_url
from evidex.store._merge_policy import MERGE_FACTOR, MergePolicy, merge_budget, merge_postings, next_merge
from evidex.store._migrations import MIGRATIONS, SCHEMA_VERSION
from evidex.store._schema import TABLES
from evidex.store._segments import PACK_LIMIT, FlatPostings

VOCAB = ("alpha", "beta", "gamma", "delta", "omega", "zeta", "eta", "theta")
ACTORS = (
    Actor("t", frozenset({"a"}), visibilities=PUBLIC_INTERNAL),
    Actor("t", frozenset({"b"}), visibilities=frozenset({"public"})),
    Actor("t", frozenset({"a", "b"}), visibilities=frozenset({"public", "internal", "confidential"})),
    Actor("u", frozenset({"a"}), visibilities=PUBLIC_INTERNAL),
)
QUERIES = (
    ("alpha", "any"),
    ("beta gamma", "any"),
    ("beta gamma", "all"),
    ("delta omega zeta", "any"),
    ("alpha theta eta", "all"),
)

STEPS = 100

Snapshot = list[list[tuple[str, str, int, str, float]]]


def snapshot(kb: KnowledgeBase, limit: int = 50, max_per_document: int | None = None,
             queries: Sequence[tuple[str, str]] = QUERIES) -> Snapshot:
    out = []
    for actor in ACTORS:
        for q, match in queries:
            hits = kb.search(actor, q, limit=limit, match=match, max_per_document=max_per_document,
                             mode="keyword")
            out.append([(h.document_id, h.version, h.passage, h.quote, h.score) for h in hits])
    return out


def fresh_snapshot(docs: Iterable[Document], **kw: Any) -> Snapshot:
    """The same queries on a store built in one batch from exactly ``docs``."""
    return fresh_snapshots(docs, kw)[0]


def fresh_snapshots(docs: Iterable[Document], *variants: dict[str, Any]) -> list[Snapshot]:
    """:func:`snapshot` with each of ``variants`` (keyword arguments) on one fresh build."""
    with tempfile.TemporaryDirectory() as tmp:
        # Keyword-only: the comparisons are keyword searches, which must not depend on vectors.
        kb = KnowledgeBase.open(Path(tmp) / "fresh.db", embedder="none")
        try:
            docs = list(docs)
            if docs:
                kb.ingest(docs)
            return [snapshot(kb, **kw) for kw in variants]
        finally:
            kb.close()


def segment_sizes(path: Path) -> list[int]:
    with sqlite3.connect(path) as c:
        return [r[0] for r in c.execute("SELECT n FROM segments ORDER BY id")]


def generation(path: Path) -> int:
    with sqlite3.connect(path) as c:
        return int(c.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])


def random_doc(rng: random.Random, doc_id: str, version: str, tenant: str = "t") -> Document:
    paragraphs = [
        " ".join(rng.choice(VOCAB) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 5))
    ]
    if rng.random() < 0.1:
        paragraphs.insert(rng.randrange(len(paragraphs) + 1), "")  # a gap in the numbering
    return Document(
        doc_id, tenant, frozenset(rng.sample(["a", "b"], rng.randint(1, 2))), version,
        "\n\n".join(paragraphs),
        visibility=rng.choice(["public", "internal", "confidential"]),
    )


def check_tiers(sizes: Sequence[int]) -> None:
    """After the writes (and their merges) settle, no size tier holds MERGE_FACTOR segments
    (the stores here stay far below the size where merges are deferred to ``optimize``)."""
    tiers: dict[int, int] = {}
    for n in sizes:
        level = int(math.log(max(n, 1), MERGE_FACTOR))
        tiers[level] = tiers.get(level, 0) + 1
    assert all(c < MERGE_FACTOR for c in tiers.values()), sizes


@pytest.mark.slow
def test_long_history_of_small_writes_equals_a_fresh_build(tmp_path: Path) -> None:
    """~100 single-document ingests, supersedes, removals, unchanged re-ingests and small
    batches, written alternately through two handles; after every step both writers and a
    reader handle opened at the start give exactly the hits and scores of a fresh build."""
    rng = random.Random(20260509)
    path = tmp_path / "kb.db"
    w1, w2, reader = KnowledgeBase.open(path), KnowledgeBase.open(path), KnowledgeBase.open(path)
    current: dict[tuple[str, str], Document] = {}
    max_segment = 0
    merges_seen = 0
    previous_segments = 0
    counter = 0
    try:
        assert snapshot(reader) == fresh_snapshot([])  # fills the reader's cache at generation 0
        for step in range(STEPS):
            writer = w1 if step % 3 else w2
            roll = rng.random()
            if roll < 0.55 or not current:
                counter += 1
                tenant = "u" if rng.random() < 0.1 else "t"
                d = random_doc(rng, f"d{counter:03d}", "1", tenant)
                assert writer.ingest(d).added == 1
                current[(d.tenant, d.id)] = d
            elif roll < 0.75:
                old = current[rng.choice(sorted(current))]
                d = random_doc(rng, old.id, str(int(old.version) + 1), old.tenant)
                assert writer.ingest(d).superseded == 1
                current[(d.tenant, d.id)] = d
            elif roll < 0.88:
                key = rng.choice(sorted(current))
                assert writer.remove(*key)
                del current[key]
            elif roll < 0.94:
                before = generation(path)
                assert writer.ingest(current[rng.choice(sorted(current))]).unchanged == 1
                assert generation(path) == before
            else:  # a small batch: one new, one superseded
                counter += 1
                new = random_doc(rng, f"d{counter:03d}", "1")
                old = current[rng.choice(sorted(current))]
                sup = random_doc(rng, old.id, str(int(old.version) + 1), old.tenant)
                r = writer.ingest([new, sup])
                assert (r.added, r.superseded) == (1, 1)
                current[(new.tenant, new.id)] = new
                current[(sup.tenant, sup.id)] = sup
            w1.store.settle()  # merges run after the write returns (see store._merge_runner)
            w2.store.settle()
            sizes = segment_sizes(path)
            check_tiers(sizes)
            max_segment = max([max_segment, *sizes])
            merges_seen += len(sizes) < previous_segments
            previous_segments = len(sizes)
            expected, capped = fresh_snapshots(current.values(), {},
                                               {"limit": 7, "max_per_document": 2})
            assert snapshot(writer) == expected, step
            assert snapshot(reader) == expected, step
            other = w2 if writer is w1 else w1
            assert snapshot(other, limit=7, max_per_document=2) == capped, step
        stats = w1.stats()
        assert stats["documents"] == len(current)
        assert stats["tombstones"] > 0  # superseded and removed passages still await a merge
        # The history reached the second tier of merges at least: the test is not vacuous.
        assert merges_seen >= 5
        assert max_segment >= MERGE_FACTOR**2, max_segment

        expected = fresh_snapshot(current.values())
        w2.optimize()
        stats = w1.stats()
        assert (stats["segments"], stats["tombstones"]) == (1, 0)
        assert segment_sizes(path) == [stats["passages"]]
        assert snapshot(w1) == snapshot(w2) == snapshot(reader) == expected
        # Writing after optimize starts new segments on top of the merged one.
        d = random_doc(rng, "after-optimize", "1")
        w1.ingest(d)
        current[(d.tenant, d.id)] = d
        assert snapshot(reader) == fresh_snapshot(current.values())
    finally:
        for kb in (w1, w2, reader):
            kb.close()


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["put", "put", "put", "remove", "optimize"]),
                          st.integers(0, 9), st.integers(0, 2**32 - 1)),
                min_size=1, max_size=40))
def test_random_histories_equal_a_fresh_build(ops: list[tuple[str, int, int]]) -> None:
    """Random interleavings of ingest (add or supersede), remove and optimize over ten ids: after
    every step the writer and a long-lived reader handle match a fresh build exactly."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kb.db"
        kb, reader = KnowledgeBase.open(path), KnowledgeBase.open(path)
        current: dict[tuple[str, str], Document] = {}
        try:
            for i, (op, n, seed) in enumerate(ops):
                key = ("t", f"d{n}")
                if op == "put":
                    old = current.get(key)
                    d = random_doc(random.Random(seed), key[1], str(int(old.version) + 1) if old else "1")
                    kb.ingest(d)
                    current[key] = d
                elif op == "remove":
                    assert kb.remove(*key) == (key in current)
                    current.pop(key, None)
                else:
                    kb.optimize()
                    stats = kb.stats()
                    assert stats["tombstones"] == 0
                    assert stats["segments"] <= 1
                expected = fresh_snapshot(current.values())
                assert snapshot(kb) == expected, (i, op)
                assert snapshot(reader) == expected, (i, op)
                kb.store.settle()
                check_tiers(segment_sizes(path))
        finally:
            kb.close()
            reader.close()


@pytest.mark.slow
def test_optimize_leaves_one_segment_and_no_tombstones(tmp_path: Path) -> None:
    rng = random.Random(7)
    kb = KnowledgeBase.open(tmp_path / "kb.db")
    docs = {f"d{i}": random_doc(rng, f"d{i}", "1") for i in range(30)}
    for d in docs.values():
        kb.ingest(d)
    for i in range(0, 30, 3):
        docs[f"d{i}"] = random_doc(rng, f"d{i}", "2")
        kb.ingest(docs[f"d{i}"])
    for i in range(1, 30, 5):
        kb.remove("t", f"d{i}")
        del docs[f"d{i}"]
    before = snapshot(kb)
    kb.store.settle()
    stats = kb.stats()
    assert stats["segments"] > 1 and stats["tombstones"] > 0
    kb.optimize()
    stats = kb.stats()
    assert (stats["segments"], stats["tombstones"]) == (1, 0)
    assert stats["documents"] == len(docs)
    assert snapshot(kb) == before == fresh_snapshot(docs.values())
    kb.optimize()  # idempotent
    assert (kb.stats()["segments"], kb.stats()["tombstones"]) == (1, 0)
    assert snapshot(kb) == before
    kb.close()


@pytest.mark.slow
def test_optimize_after_removing_everything(tmp_path: Path) -> None:
    kb = KnowledgeBase.open(tmp_path / "kb.db")
    kb.optimize()  # an empty store: nothing to do, no error
    assert (kb.stats()["segments"], kb.stats()["tombstones"]) == (0, 0)
    kb.ingest([Document("a", "t", {"a"}, "1", "alpha beta"), Document("b", "t", {"a"}, "1", "alpha")])
    kb.remove("t", "a")
    kb.remove("t", "b")
    kb.optimize()
    stats = kb.stats()
    assert stats["tombstones"] == 0 and stats["segments"] <= 1 and stats["passages"] == 0
    assert kb.search(ACTORS[0], "alpha", mode="keyword") == []
    kb.ingest(Document("c", "t", {"a"}, "1", "alpha"))
    assert [h.document_id for h in kb.search(ACTORS[0], "alpha", mode="keyword")] == ["c"]
    kb.close()


@pytest.mark.slow
def test_second_handle_sees_writes_including_merges(tmp_path: Path) -> None:
    """A handle whose cache was filled earlier sees every later write of another handle:
    additions (through several tier merges), supersedes (old words gone, new words found) and
    removals; and the generation counter moves with each write."""
    path = tmp_path / "kb.db"
    a, b = KnowledgeBase.open(path), KnowledgeBase.open(path)
    actor = ACTORS[0]
    try:
        a.ingest(Document("base", "t", {"a"}, "1", "alpha"))
        assert [h.document_id for h in b.search(actor, "alpha", mode="keyword")] == ["base"]
        for i in range(3 * MERGE_FACTOR + 1):  # at least three merges of the first tier
            gen = generation(path)
            a.ingest(Document(f"n{i:02d}", "t", {"a"}, "1", f"alpha w{i}x\n\nbeta"))
            assert generation(path) > gen
            hits = b.search(actor, f"w{i}x", mode="keyword")
            assert [(h.document_id, h.passage) for h in hits] == [(f"n{i:02d}", 1)], i
            assert len(b.search(actor, "alpha", limit=50, max_per_document=None, mode="keyword")) == i + 2
        a.store.settle()
        assert len(segment_sizes(path)) < 3 * MERGE_FACTOR  # merges happened
        a.ingest(Document("n05", "t", {"a"}, "2", "gamma renamed"))
        assert b.search(actor, "w5x", mode="keyword") == []
        renamed = b.search(actor, "renamed", mode="keyword")
        assert [(h.document_id, h.version) for h in renamed] == [("n05", "2")]
        a.remove("t", "n07")
        assert b.search(actor, "w7x", mode="keyword") == []
        assert snapshot(b) == snapshot(a)
        a.optimize()
        assert b.stats()["segments"] == 1
        assert snapshot(b) == snapshot(a)
        # And the other way round: b writes, a reads.
        b.ingest(Document("from-b", "t", {"a"}, "1", "theta"))
        assert [h.document_id for h in a.search(actor, "theta", mode="keyword")] == ["from-b"]
    finally:
        a.close()
        b.close()


@pytest.mark.slow
def test_readers_see_columns_cut_to_the_id_space(tmp_path: Path) -> None:
    """The per-id columns a reader ranks with span exactly the ids in use (one past the largest),
    however much room the arrays have: ranking sizes its id-space work by them (the visible-id
    array, dense frequency arrays, the switch between its paths), and arrays left at twice the
    id space by growth doubled that work."""
    path = tmp_path / "kb.db"
    a, b = KnowledgeBase.open(path), KnowledgeBase.open(path)

    def largest_pid() -> int:
        with sqlite3.connect(path) as c:
            return int(c.execute("SELECT max(pid) FROM passages").fetchone()[0])

    try:
        for i in range(40):
            a.ingest([Document(f"d{i}-{j}", "t", {"a"}, "1", f"alpha\n\nbeta w{j}") for j in range(i + 1)])
            b.search(ACTORS[0], "alpha", mode="keyword")
            with b.store.read() as view:
                columns = (view.sig, view.length, view.dkey, view.number)
                assert {len(col) for col in columns} == {largest_pid() + 1}, i
                assert (view.sig >= 0).sum() == 2 * (i + 1) * (i + 2) // 2
    finally:
        a.close()
        b.close()


BIG_QUERIES = (("the alpha", "any"), ("w17 the", "any"), ("w17 beta", "all"), ("gamma the delta", "any"),
               ("zeta", "any"))


def big_doc(rng: random.Random, i: int, version: str = "1") -> Document:
    """Four passages, each with the very common word "the" and the document's own rare word."""
    paragraphs = [
        " ".join(["the"] * rng.randint(1, 3) + [rng.choice(VOCAB) for _ in range(rng.randint(0, 4))]
                 + [f"w{i}"])
        for _ in range(4)
    ]
    return Document(f"b{i:04d}", "t", frozenset({"a"} if i % 3 else {"a", "b"}), version,
                    "\n\n".join(paragraphs), visibility="public" if i % 2 else "internal")


@pytest.mark.slow
def test_large_segment_with_small_writes_on_top(tmp_path: Path) -> None:
    """One batch larger than PACK_LIMIT passages (a large segment, whose postings are stored
    per term rather than packed), then supersedes and removals of its documents and new small
    documents in small segments, then optimize and more writes: after every step the writer and
    an earlier-opened reader equal a fresh build, with and without pruning (a small limit with
    a very common query word)."""
    rng = random.Random(4096)
    path = tmp_path / "big.db"
    n = PACK_LIMIT // 4 + 30
    current = {f"b{i:04d}": big_doc(rng, i) for i in range(n)}
    kb = KnowledgeBase.open(path, embedder="none")
    reader = KnowledgeBase.open(path)

    def check(step: object) -> None:
        variants: list[dict[str, Any]] = [{"queries": BIG_QUERIES},
                                          {"queries": BIG_QUERIES, "limit": 5, "max_per_document": 2}]
        expected = fresh_snapshots(current.values(), *variants)
        for handle in (kb, reader):
            assert [snapshot(handle, **v) for v in variants] == expected, step
            with handle.store.read() as view:  # counted as the postings, large and packed
                for term in ("the", "alpha", "w17", "zeta", "absent"):
                    assert view.frequency(term) == sum(len(p) for p, _ in view.postings(term)), (step, term)

    try:
        kb.ingest(list(current.values()))
        kb.store.settle()
        assert segment_sizes(path) == [4 * n] and 4 * n > PACK_LIMIT
        check("big batch")
        for step in range(8):
            i = rng.randrange(n)
            key = f"b{i:04d}"
            if step % 3 == 2 and key in current:
                assert kb.remove("t", key)
                del current[key]
            else:
                old = current.get(key)
                current[key] = big_doc(rng, i, str(int(old.version) + 1) if old else "1")
                kb.ingest(current[key])
            new = big_doc(rng, n + step)
            current[new.id] = new
            kb.ingest(new)
            check(step)
        assert kb.stats()["tombstones"] > 0
        kb.optimize()
        stats = kb.stats()
        assert (stats["segments"], stats["tombstones"]) == (1, 0)
        check("optimize")
        current["b0017"] = big_doc(rng, 17, "9")  # the document of the rare word w17
        kb.ingest(current["b0017"])
        check("after optimize")
    finally:
        kb.close()
        reader.close()


@pytest.mark.slow
def test_large_segment_postings_are_fetched_again_only_when_large_segments_change(
        tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A reader keeps the large segments' postings rows across small writes (they add packed
    segments, read from memory) and fetches them again only when the set of large segments
    has changed (``optimize``) and a term's weights must be computed again; its results equal a
    fresh build at every step."""
    import evidex.store._view as view_module

    fetched: list[str] = []
    real = view_module.SQLView.fetch_postings

    path = tmp_path / "big.db"

    watched: list[object] = []  # the segment caches of the two handles on ``path``

    def spy(self, term: str):  # type: ignore[no-untyped-def]
        if any(self._cache is c for c in watched):  # not the fresh builds compared with
            fetched.append(term)
        return real(self, term)

    monkeypatch.setattr(view_module.SQLView, "fetch_postings", spy)
    rng = random.Random(7)
    n = PACK_LIMIT // 4 + 30
    current = {f"b{i:04d}": big_doc(rng, i) for i in range(n)}
    with KnowledgeBase.open(path, embedder="none") as kb, KnowledgeBase.open(path) as reader:
        watched += [kb.store._cache, reader.store._cache]  # type: ignore[attr-defined]
        kb.ingest(list(current.values()))

        def check(step: str) -> None:
            want = fresh_snapshots(current.values(), {"queries": (("the alpha", "any"),)})
            assert [snapshot(reader, queries=(("the alpha", "any"),))] == want, step

        check("big batch")
        assert sorted(fetched) == ["alpha", "the"]
        for i in range(3):  # supersede documents of the large segment, readable to the actor
            current[f"b{i:04d}"] = big_doc(rng, i, "2")
            kb.ingest(current[f"b{i:04d}"])
            check(f"supersede {i}")
        assert sorted(fetched) == ["alpha", "the"], "small writes must not refetch"
        kb.optimize()  # moves no live passage in or out of view: the reader's weights stay valid
        check("optimize")
        assert sorted(fetched) == ["alpha", "the"]
        current["b0005"] = big_doc(rng, 5, "2")  # a readable write after it: weights recomputed
        kb.ingest(current["b0005"])
        check("after optimize")
        assert sorted(fetched) == ["alpha", "alpha", "the", "the"]


@pytest.mark.slow
def test_a_common_word_keeps_its_allowed_postings_per_large_segment_across_writes(
        tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """After a write the reader can see, a common word's weights are computed again (N, the
    average length and its document frequency moved), but its allowed postings in the large
    segment are reused minus the passages that died, not masked again from the raw postings;
    the results equal a fresh build at every step (they would not if the dead stayed)."""
    import evidex.retrieve._postings as postings_module

    drops: list[tuple[int, int]] = []
    real = postings_module.drop

    def spy(pids, dead, *aligned):  # type: ignore[no-untyped-def]
        out = real(pids, dead, *aligned)
        drops.append((len(pids), len(out[0])))
        return out

    monkeypatch.setattr(postings_module, "drop", spy)
    rng = random.Random(11)
    n = PACK_LIMIT // 4 + 30
    current = {f"b{i:04d}": big_doc(rng, i) for i in range(n)}
    path = tmp_path / "big.db"
    queries = (("the alpha", "any"), ("the", "any"))
    with KnowledgeBase.open(path, embedder="none") as kb, KnowledgeBase.open(path) as reader:
        kb.ingest(list(current.values()))

        def check(step: str) -> None:
            want = fresh_snapshots(current.values(), {"queries": queries})
            assert [snapshot(reader, queries=queries)] == want, step

        check("big batch")
        assert drops == []  # nothing cached yet: every part was masked
        for i in (1, 2):  # b0001 is readable to ACTORS[0], b0002 to ACTORS[2] only
            current[f"b{i:04d}"] = big_doc(rng, i, "2")
            kb.ingest(current[f"b{i:04d}"])
            check(f"supersede {i}")
        # "the" is in each of a document's four passages: an allowed part lost exactly those.
        assert any(a - b == 4 for a, b in drops), drops
        assert kb.remove("t", "b0004")
        del current["b0004"]
        check("remove")


@pytest.mark.slow
def test_a_small_write_never_pays_for_a_large_merge(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The merge budget of an ingest call grows with its own size: one-document supersedes stay
    fast however many large segments exist; a large batch folds them (scaled-down limits)."""
    import evidex.store._sqlite as sqlite_module

    merged: list[int] = []
    real = sqlite_module.SQLiteStore._plan_merge

    def spy(self, c, ids):  # type: ignore[no-untyped-def]
        merged.append(sum(n for (n,) in c.execute(
            f"SELECT n FROM segments WHERE id IN ({','.join('?' * len(ids))})", ids)))
        return real(self, c, ids)

    monkeypatch.setattr(sqlite_module.SQLiteStore, "_plan_merge", spy)
    kb = KnowledgeBase.open(tmp_path / "kb.db", embedder="none")
    kb.store._merge_policy = MergePolicy(inline_limit=10, max_segments=3)  # type: ignore[attr-defined]
    for b in range(6):  # six segments of 40 passages: more than MAX_SEGMENTS, none cheap
        kb.ingest([Document(f"b{b}-{i}", "t", {"g"}, "1", "\n\n".join(f"w{b} x{i} p{j}" for j in range(4)))
                   for i in range(10)], split="paragraph")
        kb.store.settle()  # each write's merges before the next write: one layout, however slow
    merged.clear()
    before = kb.stats()["segments"]
    kb.ingest(Document("b0-0", "t", {"g"}, "2", "changed text"), split="paragraph")
    kb.store.settle()
    assert merged == [] and kb.stats()["segments"] == before + 1
    kb.ingest([Document(f"big-{i}", "t", {"g"}, "1", "\n\n".join(f"y{i} q{j}" for j in range(4)))
               for i in range(30)], split="paragraph")  # 120 passages: budget 960
    kb.store.settle()
    assert merged and max(merged) > 10 and kb.stats()["segments"] <= 3
    hits = kb.search(Actor("t", {"g"}, visibilities=PUBLIC_INTERNAL), "changed", mode="keyword")
    assert [(h.document_id, h.version) for h in hits] == [("b0-0", "2")]
    kb.close()


@pytest.mark.slow
def test_segment_vectors_are_stored_in_parts_and_old_stores_upgrade(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A segment's vectors live in parts of consecutive rows (SQLite refuses blobs over 1e9 bytes;
    one optimized segment of 1M x 384 float32 is 1.5 GB). Parts join back in order, survive
    merges and optimize, and a version-2 store (one blob per segment) is upgraded on open."""
    # Imported here: a module that imports it has every test marked slow (tests/conftest.py).
    import evidex.store._sqlite as sqlite_module
    from old_stores import sqlite_v5

    monkeypatch.setattr(sqlite_module, "VECTOR_PART_BYTES", 3 * 64 * 4)  # 3 rows of the 64-d test vectors
    path = tmp_path / "kb.db"
    actor = Actor("t", {"g"}, visibilities=PUBLIC_INTERNAL)
    docs = [Document(f"d{i}", "t", {"g"}, "1", "\n\n".join(f"{VOCAB[(i + j) % 8]} text {i} {j}"
                                                            for j in range(3))) for i in range(12)]
    kb = KnowledgeBase.open(path, embedder="hash-test")
    assert kb.store.dimension == 64
    for d in docs:
        kb.ingest(d, split="paragraph")
    before = [(h.document_id, h.passage, h.score) for h in kb.search(actor, "alpha text", mode="vector")]
    kb.optimize()
    parts = sqlite3.connect(path).execute("SELECT count(*), max(part) FROM segment_vectors").fetchone()
    assert parts == (12, 11)  # 36 passages in one segment, 3 rows per part
    after = [(h.document_id, h.passage, h.score) for h in kb.search(actor, "alpha text", mode="vector")]
    assert after == before
    kb.close()
    # Copy it into the version-5 layout, rewrite that into version 2's, then open it.
    path = tmp_path / "old.db"
    sqlite_v5(tmp_path / "kb.db", path)
    with sqlite3.connect(path) as c:
        rows = c.execute("SELECT segment, model, vecs FROM segment_vectors ORDER BY segment, part").fetchall()
        joined: dict[tuple[int, str], bytes] = {}
        for seg, model, blob in rows:
            joined[(seg, model)] = joined.get((seg, model), b"") + blob
        c.execute("DROP TABLE segment_vectors")
        c.execute("CREATE TABLE segment_vectors (segment INTEGER NOT NULL, model TEXT NOT NULL, "
                  "vecs BLOB NOT NULL, PRIMARY KEY (segment, model)) WITHOUT ROWID")
        c.executemany("INSERT INTO segment_vectors VALUES (?, ?, ?)",
                      [(s, m, b) for (s, m), b in joined.items()])
        c.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    monkeypatch.setattr(sqlite_module, "VECTOR_PART_BYTES", 256 << 20)
    with KnowledgeBase.open(path) as again:
        assert again.stats()["schema_version"] == SCHEMA_VERSION
        got = [(h.document_id, h.passage, h.score) for h in again.search(actor, "alpha text", mode="vector")]
        assert got == before
        again.ingest(Document("d0", "t", {"g"}, "2", "alpha text again"), split="paragraph")
        again.optimize()
        assert [h.document_id for h in again.search(actor, "again", mode="keyword")] == ["d0"]


@pytest.mark.slow
def test_version_3_blob_tables_are_rebuilt_with_their_keys_out_of_the_rows(tmp_path: Path) -> None:
    """Version 3 kept postings and vector parts in WITHOUT ROWID tables, where SQLite compares
    keys by reading whole overflowing rows (every lookup read megabytes at 1M passages). Opening
    such a store rebuilds both as rowid tables with a key index, keeping every row; searches,
    writes and optimize work on the result exactly as before."""
    # Imported here: a module that imports it has every test marked slow (tests/conftest.py).
    from old_stores import sqlite_v5

    path = tmp_path / "kb.db"
    actor = Actor("t", {"g"}, visibilities=PUBLIC_INTERNAL)
    big = [Document(f"b{i}", "t", {"g"}, "1",
                    "\n\n".join(f"{VOCAB[(i + j) % 8]} bulk {i} {j}" for j in range(40)))
           for i in range(PACK_LIMIT // 40 + 5)]
    kb = KnowledgeBase.open(path, embedder="hash-test")
    kb.ingest(big, split="paragraph")  # one segment too large to pack: postings rows
    kb.ingest(Document("d0", "t", {"g"}, "1", "alpha small text"), split="paragraph")
    queries = ["alpha bulk", "beta 3", "small text"]

    def results(k: KnowledgeBase) -> list[list[tuple[str, int, float]]]:
        return [[(h.document_id, h.passage, h.score) for h in k.search(actor, q, mode=mode)]
                for q in queries for mode in ("keyword", "vector")]

    before = results(kb)
    kb.close()
    path = tmp_path / "old.db"
    sqlite_v5(tmp_path / "kb.db", path)
    with sqlite3.connect(path) as c:
        rows = {t: c.execute(f"SELECT * FROM {t} ORDER BY 2, 3").fetchall()
                for t in ("postings", "segment_vectors")}
        assert rows["postings"] and rows["segment_vectors"]
        c.execute("DROP TABLE postings")
        c.execute("CREATE TABLE postings (term TEXT NOT NULL, segment INTEGER NOT NULL, pids BLOB NOT NULL, "
                  "tfs BLOB NOT NULL, PRIMARY KEY (term, segment)) WITHOUT ROWID")
        c.execute("CREATE INDEX postings_segment ON postings (segment)")
        c.executemany("INSERT INTO postings VALUES (?, ?, ?, ?)", [r[1:] for r in rows["postings"]])
        c.execute("DROP TABLE segment_vectors")
        c.execute("CREATE TABLE segment_vectors (segment INTEGER NOT NULL, model TEXT NOT NULL, part INTEGER "
                  "NOT NULL, vecs BLOB NOT NULL, PRIMARY KEY (segment, model, part)) WITHOUT ROWID")
        c.executemany("INSERT INTO segment_vectors VALUES (?, ?, ?, ?)",
                      [r[1:] for r in rows["segment_vectors"]])
        c.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    with KnowledgeBase.open(path) as again:
        assert again.stats()["schema_version"] == SCHEMA_VERSION == 14
        assert results(again) == before
        again.ingest(Document("d0", "t", {"g"}, "2", "alpha changed"), split="paragraph")
        again.optimize()
        assert [h.document_id for h in again.search(actor, "changed", mode="keyword")] == ["d0"]
    with sqlite3.connect(path) as c:
        sql = dict(c.execute("SELECT name, sql FROM sqlite_master WHERE name IN "
                             "('postings', 'segment_vectors')").fetchall())
        assert len(sql) == 2 and not any("WITHOUT ROWID" in v for v in sql.values())
        names = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"postings_term", "postings_segment", "segment_vectors_key"} <= names
        assert not any(n.endswith("_v3") for (n,) in c.execute("SELECT name FROM sqlite_master"))


@pytest.mark.slow
def test_version_4_gains_the_tombstone_index_and_merges_drop_tombstones_through_it(tmp_path: Path) -> None:
    """Version 5 indexes tombstones by passage id (a merge deletes the tombstones of the
    passages it drops; without the index each delete scanned the table). Opening a version-4
    store adds the index; results are unchanged and a merge still clears the tombstones."""
    # Imported here: a module that imports it has every test marked slow (tests/conftest.py).
    from old_stores import sqlite_v5

    path = tmp_path / "kb.db"
    actor = Actor("t", {"g"}, visibilities=PUBLIC_INTERNAL)
    kb = KnowledgeBase.open(path)
    kb.ingest([Document(f"d{i}", "t", {"g"}, "1", f"alpha {VOCAB[i % 8]}\n\nbeta {i}") for i in range(6)],
              split="paragraph")
    kb.ingest(Document("d0", "t", {"g"}, "2", "alpha replaced"), split="paragraph")
    before = [(h.document_id, h.passage, h.score) for h in kb.search(actor, "alpha beta", match="any")]
    kb.close()
    path = tmp_path / "old.db"
    sqlite_v5(tmp_path / "kb.db", path)
    with sqlite3.connect(path) as c:
        c.execute("DROP INDEX tombstones_pid")
        c.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
        assert c.execute("SELECT count(*) FROM tombstones").fetchone()[0] == 2
    with KnowledgeBase.open(path) as again:
        assert again.stats()["schema_version"] == SCHEMA_VERSION == 14
        assert [(h.document_id, h.passage, h.score)
                for h in again.search(actor, "alpha beta", match="any")] == before
        again.optimize()
        assert again.stats()["tombstones"] == 0
    with sqlite3.connect(path) as c:
        plan = " ".join(r[-1] for r in c.execute(
            "EXPLAIN QUERY PLAN DELETE FROM tombstones WHERE pid IN (1, 2)"))
        assert "tombstones_pid" in plan, plan


# -- merging postings in one sort ----------------------------------------------------------------
Entries = dict[str, list[tuple[int, int]]]


def _reference_merge(parts: list[Entries], dead: set[int]) -> Entries:
    out: Entries = {}
    for part in parts:
        for term, entries in part.items():
            out.setdefault(term, []).extend(e for e in entries if e[0] not in dead)
    return {t: sorted(v) for t, v in sorted(out.items()) if v}


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(data=st.data(), chunk=st.sampled_from([1, 3, 50, 4_000_000]))
def test_merge_postings_equals_a_per_term_merge(data: Any, chunk: int) -> None:
    """Segments hold disjoint passage ids; the merge is the per-term union without the dead
    passages, in term order with ascending ids, also when it is done in several chunks."""
    import numpy as np
    import pytest

    from evidex.store import _merge_policy as merging
    from evidex.store import _segments as seg

    n_parts = data.draw(st.integers(0, 5))
    pids = data.draw(st.lists(st.integers(1, 10_000), unique=True, max_size=60))
    owner = [data.draw(st.integers(0, max(n_parts - 1, 0))) for _ in pids]
    terms = st.sampled_from(["a", "b", "zz", "é", "ß", "a1", "term"])
    parts: list[Entries] = [{} for _ in range(n_parts)]
    for pid, o in zip(pids, owner, strict=True):
        if not n_parts:
            break
        for term in data.draw(st.sets(terms, min_size=1, max_size=4)):
            parts[o].setdefault(term, []).append((pid, data.draw(st.integers(1, 65535))))
    dead = set(data.draw(st.lists(st.sampled_from(pids), max_size=10))) if pids else set()
    flat = [seg.FlatPostings.from_dict({t: (np.array([p for p, _ in sorted(e)], dtype=np.int32),
                                            np.array([f for _, f in sorted(e)], dtype=np.uint16))
                                        for t, e in part.items()}) for part in parts]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(merging, "MERGE_CHUNK_POSTINGS", chunk)
        merged = merging.merge_postings(flat, np.array(sorted(dead), dtype=np.int64))
    got = {t: list(zip(p.tolist(), f.tolist(), strict=True)) for t, p, f in merged.items()}
    assert list(got) == merged.terms == sorted(got)
    assert got == _reference_merge(parts, dead)
    assert merged.pids.dtype == np.int32 and merged.tfs.dtype == np.uint16
    # What a small segment stores reads back as the same postings.
    back = seg.FlatPostings.from_stored(*merged.stored())
    assert {t: list(zip(p.tolist(), f.tolist(), strict=True)) for t, p, f in back.items()} == got
    # Readers look terms up by binary search: every term is found, others are not.
    for t, pairs in got.items():
        found = back.get(t)
        assert found is not None and list(zip(found[0].tolist(), found[1].tolist(), strict=True)) == pairs
    assert back.get("\x00absent") is None and back.get("zzzz-absent") is None


@pytest.mark.slow
def test_a_cached_row_evicted_by_another_reader_meanwhile_is_still_returned() -> None:
    """Readers share the row cache without a lock: while one fetches the rows it lacks, another
    may evict the rows it found cached. What it found stays in its answer (a lookup after the
    fetch would silently drop those passages)."""
    from evidex.store._segments import SegmentCache

    cache = SegmentCache()
    cache.document_rows[1] = ("cached",)

    def fetch(keys: Iterable[int]) -> list[tuple[Any, ...]]:
        cache.document_rows.clear()  # another thread trimming meanwhile
        return [(k, "fetched") for k in keys]

    got = cache._cached(cache.document_rows, [1, 2], fetch, tuple, lambda row: row)
    assert got == {1: ("cached",), 2: (2, "fetched")}


# -- helpers of the tests below that came from test_documents, test_postgres and test_store_core --
A = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)


def _off(c: sqlite3.Connection) -> sqlite3.Connection:
    c.execute("PRAGMA secure_delete = OFF")
    return c


@pytest.fixture
def pg(tmp_path: Path, pg_url: str) -> Iterator[Locator]:
    loc = locator("postgres", tmp_path)
    yield loc
    loc.cleanup()


def _in_schema(url: str, what: str, name: str) -> bool:
    table = {"table": "pg_tables WHERE tablename", "index": "pg_indexes WHERE indexname"}[what]
    return bool(raw(url, f"SELECT 1 FROM {table} = ? AND schemaname = current_schema()", (name,)))






def _store_with_history(path: Path) -> list[Document]:
    """A store with vectors, superseded and removed documents (so tombstones) and a sync record."""
    docs = [Document(f"d{i}", "t", frozenset({"g"}), "1", f"alpha beta {i}\n\ngamma {i % 3}\n\ndelta")
            for i in range(12)]
    with KnowledgeBase.open(path) as kb:
        kb.ingest(docs[:6])
        kb.ingest(docs[6:])
        kb.ingest(Document("d0", "t", frozenset({"g"}), "2", "alpha again\n\ngamma"))
        kb.remove("t", "d3")
        kb.store.apply([], keep_history=True, sources=[SourceEntry("s", "t", "d1", "d1.md", "7", "x")])
        assert kb.stats()["tombstones"] > 0
    return docs


def _results(kb: KnowledgeBase) -> list[object]:
    return [[(h.document_id, h.version, h.passage, h.score) for h in kb.search(A, q, mode=mode)]
            for q in ("alpha gamma", "delta beta 4") for mode in ("keyword", "vector", "hybrid")]




# -- merges after the write returns (store._merge_runner) -----------------------------------------
ACTOR = Actor("t", frozenset({"a"}), visibilities=PUBLIC_INTERNAL)


def small(i: int, version: str = "1", text: str | None = None) -> Document:
    return Document(f"d{i}", "t", {"a"}, version, text or f"alpha w{i}x\n\nbeta common")


def segment_count(path: Path) -> int:
    with sqlite3.connect(path) as c:
        return int(c.execute("SELECT count(*) FROM segments").fetchone()[0])


def found(kb: KnowledgeBase, query: str) -> list[tuple[str, str, int]]:
    return [(h.document_id, h.version, h.passage)
            for h in kb.search(ACTOR, query, mode="keyword", limit=50, max_per_document=None)]


def test_a_write_returns_before_its_merge_and_the_merge_lands_later(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The write that completes a tier returns while the merge is held back; searches are
    complete meanwhile; once released the tier is one segment."""
    path = tmp_path / "kb.db"
    release = threading.Event()
    real = sqlite_module.SQLiteStore._plan_merge

    def held(self, c, ids):  # type: ignore[no-untyped-def]
        assert release.wait(30)
        return real(self, c, ids)

    monkeypatch.setattr(sqlite_module.SQLiteStore, "_plan_merge", held)
    kb = KnowledgeBase.open(path, embedder="none")
    try:
        for i in range(MERGE_FACTOR):
            kb.ingest(small(i))  # the last one asks for a merge, which waits for `release`
        assert segment_count(path) == MERGE_FACTOR
        assert len(found(kb, "alpha")) == MERGE_FACTOR
        release.set()
        kb.store.settle()
        assert segment_count(path) == 1
        assert len(found(kb, "alpha")) == MERGE_FACTOR
    finally:
        release.set()
        kb.close()


def test_a_passage_superseded_during_a_merge_stays_gone(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A supersede that commits between the merge's read and its commit tombstones a passage
    the merge was computed with. A reader that applied that tombstone before the merged segment
    appeared must not see the old passage again (it would, if the merged segment kept it)."""
    path = tmp_path / "kb.db"
    kb = KnowledgeBase.open(path, embedder="none")
    other = KnowledgeBase.open(path, embedder="none")
    reader = KnowledgeBase.open(path, embedder="none")
    real = sqlite_module.SQLiteStore._plan_merge
    interleaved: list[str] = []

    def interleave(self, c, ids):  # type: ignore[no-untyped-def]
        plan = real(self, c, ids)
        if not interleaved:
            interleaved.append("done")
            other.ingest(small(0, "2", "renamed zeta"))  # another handle supersedes d0
            assert found(reader, "w0x") == []  # the reader applies the tombstone now
        return plan

    monkeypatch.setattr(sqlite_module.SQLiteStore, "_plan_merge", interleave)
    try:
        assert found(reader, "alpha") == []
        for i in range(MERGE_FACTOR):
            kb.ingest(small(i))
        kb.store.settle()
        assert interleaved == ["done"]
        assert found(reader, "w0x") == []
        assert found(reader, "zeta") == [("d0", "2", 1)]
        assert len(found(reader, "alpha")) == MERGE_FACTOR - 1
        with sqlite3.connect(path) as c:  # the late tombstone went with its passages
            assert c.execute("SELECT count(*) FROM tombstones").fetchone()[0] == 0
    finally:
        for h in (kb, other, reader):
            h.close()


def test_a_failed_background_merge_is_reported_and_loses_nothing(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "kb.db"
    real = sqlite_module.SQLiteStore._plan_merge
    broken = [True]

    def failing(self, c, ids):  # type: ignore[no-untyped-def]
        if broken[0]:
            raise OSError("disk on fire")
        return real(self, c, ids)

    monkeypatch.setattr(sqlite_module.SQLiteStore, "_plan_merge", failing)
    kb = KnowledgeBase.open(path, embedder="none")
    try:
        for i in range(MERGE_FACTOR):
            kb.ingest(small(i))
        with pytest.raises(StoreError, match="background segment merge failed: disk on fire"):
            kb.store.settle()
        kb.store.settle()  # reported once
        assert segment_count(path) == MERGE_FACTOR and len(found(kb, "alpha")) == MERGE_FACTOR
        broken[0] = False
        kb.ingest(small(MERGE_FACTOR))  # the policy asks for the merge again
        kb.store.settle()
        assert segment_count(path) == 1 and len(found(kb, "alpha")) == MERGE_FACTOR + 1
    finally:
        kb.close()


def test_close_finishes_the_requested_merges(tmp_path: Path) -> None:
    path = tmp_path / "kb.db"
    kb = KnowledgeBase.open(path, embedder="none")
    for i in range(MERGE_FACTOR):
        kb.ingest(small(i))
    kb.close()
    assert segment_count(path) == 1
    with KnowledgeBase.open(path, embedder="none") as again:
        assert len(found(again, "alpha")) == MERGE_FACTOR


@pytest.mark.parametrize("pack_limit", [8192, 1])
def test_small_merges_commit_on_the_handles_connection(tmp_path: Path, monkeypatch, pack_limit: int) -> None:  # type: ignore[no-untyped-def]
    """A change made by another connection makes SQLite unmap the handle connection's whole
    memory map at its next transaction (20-25 ms at 1M, inside the next supersede or search),
    so a small merge commits on the handle's connection; a large one (a row per term) on the
    merge thread's, so that searches do not wait for it. Either way the result is the same."""
    for module in (merge_module, write_module):  # where a segment is written: merges and writes
        monkeypatch.setattr(module, "PACK_LIMIT", pack_limit)
    real = sqlite_module.SQLiteStore._commit_merge
    on_handle: list[bool] = []

    def spy(self, tx, plan):  # type: ignore[no-untyped-def]
        on_handle.append(tx.cur is self._conn)
        return real(self, tx, plan)

    monkeypatch.setattr(sqlite_module.SQLiteStore, "_commit_merge", spy)
    kb = KnowledgeBase.open(tmp_path / "kb.db", embedder="none")
    try:
        for i in range(MERGE_FACTOR):
            kb.ingest(small(i))
        kb.store.settle()
        assert on_handle == [pack_limit > 1]
        assert segment_count(tmp_path / "kb.db") == 1
        assert len(found(kb, "alpha")) == MERGE_FACTOR
    finally:
        kb.close()


def _plan_while_the_handle_is_busy(tmp_path: Path, monkeypatch, seconds: float,  # type: ignore[no-untyped-def]
                                   hold: float) -> tuple[bool, bool]:
    """A search holds the handle while a background merge plans: (did the plan finish while
    the search was under way, did it finish after)."""
    monkeypatch.setattr(sqlite_module, "_YIELD_SECONDS", seconds)
    real = sqlite_module.SQLiteStore._plan_merge
    go, planned = threading.Event(), threading.Event()

    def gated(self, c, ids):  # type: ignore[no-untyped-def]
        assert go.wait(30)
        plan = real(self, c, ids)
        planned.set()
        return plan

    monkeypatch.setattr(sqlite_module.SQLiteStore, "_plan_merge", gated)
    kb = KnowledgeBase.open(tmp_path / "kb.db", embedder="none")
    try:
        for i in range(MERGE_FACTOR):
            kb.ingest(small(i))  # the last asks for a merge, whose plan waits for `go`
        with kb.store.read():  # what a search holds while it runs
            go.set()
            during = planned.wait(hold)
        after = planned.wait(30)
        kb.store.settle()
        assert segment_count(tmp_path / "kb.db") == 1 and len(found(kb, "alpha")) == MERGE_FACTOR
        return during, after
    finally:
        go.set()
        kb.close()


def test_a_merge_plan_waits_for_a_search_under_way(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The merge thread shares the interpreter lock with searches and writes; between its steps
    it waits while the handle is in use, so that the search under way runs undisturbed."""
    assert _plan_while_the_handle_is_busy(tmp_path, monkeypatch, seconds=30, hold=0.5) == (False, True)


def test_a_merge_plan_does_not_starve_under_unbroken_use(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The wait at each step is bounded, so a plan finishes even while the handle never idles."""
    assert _plan_while_the_handle_is_busy(tmp_path, monkeypatch, seconds=0.001, hold=20) == (True, True)


def test_merge_postings_pauses_between_its_steps() -> None:
    """The pause points merge_postings offers: after the term union, per part and per chunk."""
    parts = [FlatPostings.from_dict({"a": (np.array([i]), np.array([1])),
                                     f"t{i}": (np.array([i]), np.array([2]))}) for i in range(3)]
    calls: list[int] = []
    merged = merge_postings(parts, np.array([1]), lambda: calls.append(1))
    assert merged.terms == ["a", "t0", "t2"] and merged.pids.tolist() == [0, 2, 0, 2]
    assert len(calls) >= 1 + len(parts) + 1
    plain = merge_postings(parts, np.array([1]))  # the default pauses nowhere
    assert plain.terms == merged.terms and plain.pids.tolist() == merged.pids.tolist()


# -- remove erases (the SQLite file, the history) --------------------------------------------------
def test_remove_deletes_passages_and_history(locate: Locator) -> None:
    path = locate("kb")
    kb = KnowledgeBase.open(path)
    kb.ingest([doc(text="alpha one")])
    kb.ingest([doc(version="2", text="alpha two")])
    kb.ingest([doc("other", text="alpha three")])
    assert kb.stats()["history_versions"] == 1
    assert kb.remove("t", "d1") is True
    assert kb.remove("t", "d1") is False
    assert [h.document_id for h in kb.search(A, "alpha", mode="keyword")] == ["other"]
    assert raw(path, "SELECT count(*) FROM history WHERE doc_id = 'd1'")[0][0] == 0
    assert raw(path, "SELECT count(*) FROM passages p JOIN documents d USING (dkey) "
                     "WHERE d.doc_id = 'd1'")[0][0] == 0
    assert raw(path, "SELECT count(*) FROM documents WHERE doc_id = 'd1'")[0][0] == 0
    kb.optimize()
    assert kb.stats()["segments"] == 1 and kb.stats()["tombstones"] == 0
    # After a merge the removed passages are gone from the keyword index too.
    row = raw(path, "SELECT terms, term_ends, term_pids, term_tfs FROM segments")[0]
    stored = FlatPostings.from_stored(*(bytes(v) if isinstance(v, memoryview) else v for v in row))
    alpha = stored.get("alpha")
    assert alpha is not None
    alpha_pids, _ = alpha
    assert len(alpha_pids) == 1
    kb.close()


@pytest.mark.parametrize("secure", [True, False])
def test_removed_text_is_gone_from_the_sqlite_file(tmp_path: Path, secure: bool) -> None:
    """``remove`` erases, not hides: after it and a merge of the index segments (``optimize``),
    neither the text nor its words are anywhere in the file. SQLite leaves deleted bytes in free
    pages unless secure_delete is on, which evidex sets on every connection (SQLite builds
    differ in the default); with it off the same steps leave the text behind."""
    from evidex.store import _sqlite

    path = tmp_path / "erase.db"
    secret = "zqxsalaryzqx " * 600  # about 8 KB: the full text spills into overflow pages
    kb = KnowledgeBase.open(path)
    if not secure:
        kb.store._conn.execute("PRAGMA secure_delete = OFF")
        kb.store._merge_connection = lambda: _off(_sqlite.SQLiteStore._merge_connection(kb.store))
    kb.ingest([Document("keep", "t", frozenset({"g"}), "1", "public words " * 50),
               Document("gone", "t", frozenset({"g"}), "1", "intro\n\n" + secret)])
    kb.remove("t", "gone")
    kb.optimize()
    kb.close()
    found = b"zqxsalaryzqx" in path.read_bytes()
    assert found is not secure


# -- PostgreSQL: URL parameters, schemas, migrations, HNSW, the COPY parser ------------------------
@pytest.mark.slow
def test_url_parameters_of_evidex_are_not_passed_to_libpq() -> None:
    conninfo, schema, mode = split_url(
        "postgresql://u:pw@h:5/db?sslmode=require&schema=kb_1&vector_search=hnsw")
    assert (conninfo, schema, mode) == ("postgresql://u:pw@h:5/db?sslmode=require", "kb_1", "hnsw")
    assert split_url("postgresql://h/db")[1:] == ("evidex", "exact")
    for bad in ("postgresql://h/db?schema=Drop;Table", "postgresql://h/db?vector_search=ivf"):
        with pytest.raises(StoreError):  # a ValueError subclass
            split_url(bad)


def test_a_schema_with_other_tables_is_not_taken_over(pg: Locator) -> None:
    url = pg("foreign")
    conninfo, schema, _ = split_url(url)
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as c:
        c.execute(f"CREATE SCHEMA {schema}")
        c.execute(f"CREATE TABLE {schema}.documents (x int)")
    with pytest.raises(StoreError, match="holds tables but no evidex store"):
        KnowledgeBase.open(url)


@pytest.mark.parametrize("version", [1, 3])
def test_a_numbered_schema_upgrades_on_open(pg: Locator, version: int) -> None:
    """A store in the layout of schema version 1 or 3 (the earlier evidex's DDL verbatim, see
    old_stores) opens with the current code: the missing migrations run once, the data is
    untouched, and searches and writes equal a fresh store's."""
    # Imported here: a module that imports it has every test marked slow (tests/conftest.py).
    from old_stores import postgres_legacy

    docs = [Document(f"d{i}", "t", frozenset({"g"}), "1", f"alpha beta {i}\n\ngamma {i % 3}")
            for i in range(20)]
    fresh_url, url = pg("fresh"), pg("old")
    with KnowledgeBase.open(fresh_url) as fresh:
        fresh.ingest(docs)
        fresh.ingest(Document("d0", "t", frozenset({"g"}), "2", "alpha again"))
    postgres_legacy(fresh_url, url, version)
    assert raw(url, "SELECT max(version) FROM schema_version")[0][0] == version
    assert _in_schema(url, "index", "vectors_sig") is (version >= 2)
    assert _in_schema(url, "table", "source_documents") is (version >= 3)
    with KnowledgeBase.open(url) as kb, KnowledgeBase.open(fresh_url) as fresh:
        assert kb.stats()["schema_version"] == SCHEMA_VERSION == 14
        assert sorted(r[0] for r in raw(url, "SELECT name FROM migrations")) == sorted(MIGRATIONS.names)
        assert not _in_schema(url, "table", "schema_version")
        assert _in_schema(url, "index", "vectors_sig") and _in_schema(url, "index", "history_doc")
        assert raw(url, "SELECT count(*) FROM source_documents") == [(0,)]
        assert kb.stats()["documents"] == 20 and kb.stats()["history_versions"] == 1

        def same(step: str) -> None:
            for mode in ("keyword", "vector", "hybrid"):
                a = [(h.document_id, h.passage, h.score) for h in kb.search(A, "alpha gamma", mode=mode)]
                b = [(h.document_id, h.passage, h.score) for h in fresh.search(A, "alpha gamma", mode=mode)]
                assert a == b and a, (step, mode)

        same("opened")
        for k in (kb, fresh):
            k.ingest(Document("d1", "t", frozenset({"g"}), "2", "alpha gamma changed"))
            k.remove("t", "d2")
            k.optimize()
        same("written")
    with KnowledgeBase.open(url):  # opening again applies nothing more
        assert len(raw(url, "SELECT name FROM migrations")) == SCHEMA_VERSION


def test_hnsw_mode_recall_and_filtering(pg: Locator, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opt-in HNSW: the index is built, searches use it (not the exact fallback), return full
    lists of only readable passages, and recall@10 against the exact mode is at least 0.99."""
    monkeypatch.setattr(_pgvector, "HNSW_EXACT_BELOW", 0)  # small data: force the index path
    exact_scans: list[int] = []
    real = _pgvector.RowVectors._sql_exact

    def counted(self, *args):  # type: ignore[no-untyped-def]
        exact_scans.append(1)
        return real(self, *args)

    monkeypatch.setattr(_pgvector.RowVectors, "_sql_exact", counted)
    url = pg("hnsw")
    rng = random.Random(5)
    with KnowledgeBase.open(url) as kb:
        kb.ingest(_random_docs(rng, 1200, ("g", "h")))
    exact = KnowledgeBase.open(url)
    approx = KnowledgeBase.open(f"{url}&vector_search=hnsw")
    try:
        assert approx.stats()["hnsw_index"] is True
        plan = raw(url, "EXPLAIN SELECT pid FROM vectors ORDER BY (embedding::vector(64)) <#> "
                        "(array_fill(0.1, ARRAY[64])::vector(64)) LIMIT 5")
        assert any("vectors_hnsw" in r[0] for r in plan), plan
        recalls = []
        for i in range(40):
            q = " ".join(f"w{rng.randrange(300)}" for _ in range(3))
            want = [(h.document_id, h.passage) for h in
                    exact.search(A, q, mode="vector", limit=10, max_per_document=None)]
            hits = approx.search(A, q, mode="vector", limit=10, max_per_document=None)
            assert len(hits) == 10 and all(h.document_id.startswith("g") for h in hits), i
            recalls.append(len(set(want) & {(h.document_id, h.passage) for h in hits}) / 10)
        assert exact_scans == []  # every search ran on the index, none fell back to a scan
        assert sum(recalls) / len(recalls) >= 0.99, recalls
        # Writes after the build are indexed too (the index is maintained, not rebuilt).
        approx.ingest(Document("g-new", "t", frozenset({"g"}), "1", "w1 w2 w3 w4"))
        assert approx.search(A, "w1 w2 w3 w4", mode="vector", limit=1)[0].document_id == "g-new"
    finally:
        exact.close()
        approx.close()


@pytest.mark.slow
def test_vector_copy_parser_rejects_other_dimensions() -> None:
    row = (struct.pack(">hii", 2, 4, 7) + struct.pack(">ihh", 4 + 4 * 3, 3, 0)
           + np.ones(3, dtype=">f4").tobytes())
    buf = _pgvector._COPY_SIGNATURE + b"\0" * 8 + row + b"\xff\xff"
    pids, vecs = _pgvector._parse_vector_copy(buf, 3)
    assert pids.tolist() == [7] and vecs.tolist() == [[1.0, 1.0, 1.0]]
    with pytest.raises(StoreError, match="dimensions"):
        _pgvector._parse_vector_copy(buf, 2)


# -- the merge plan, the schema description and the named migrations, the citation columns -------
POLICY = MergePolicy(factor=4, inline_limit=100, max_segments=6)


# -- the merge plan: a pure function of segment sizes and the budget ------------------------------
@pytest.mark.slow
def test_a_full_tier_within_the_budget_merges() -> None:
    sizes = {1: 50, 2: 3, 3: 3, 4: 2, 5: 3}  # tier 0 (1-3 passages) holds four segments
    assert next_merge(sizes, 100, POLICY) == [2, 3, 4, 5]
    assert next_merge({1: 50, 2: 3, 3: 3, 4: 2}, 100, POLICY) is None  # three are not a tier yet


@pytest.mark.slow
def test_a_tier_over_the_budget_waits() -> None:
    sizes = {i: 30 for i in range(1, 5)}  # four of tier 2 (16-63 passages): 120 in all
    assert next_merge(sizes, 100, POLICY) is None
    assert next_merge(sizes, merge_budget(15, POLICY), POLICY) is None  # max(100, 4 x 15)
    assert next_merge(sizes, merge_budget(30, POLICY), POLICY) == [1, 2, 3, 4]  # 4 x 30 = 120


@pytest.mark.slow
def test_too_many_segments_merge_the_smallest() -> None:
    sizes = {1: 1, 2: 5, 3: 20, 4: 70, 5: 300, 6: 2, 7: 6}  # seven segments, no full tier
    assert next_merge(sizes, 100, POLICY) == [1, 6, 2, 7]
    assert next_merge(sizes, 10, POLICY) is None  # their 14 passages exceed the budget
    del sizes[7]
    assert next_merge(sizes, 100, POLICY) is None  # six segments are allowed


@pytest.mark.slow
def test_the_budget_grows_with_the_write() -> None:
    assert merge_budget(1, POLICY) == 100 and merge_budget(1000, POLICY) == 4000


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(writes=st.lists(st.integers(1, 400), min_size=1, max_size=60))
def test_applying_the_plan_after_every_write_keeps_the_tiers_small(writes: list[int]) -> None:
    """What a store does: after each write, merge while the plan says so. Each merge stays
    within the write's budget and folds segments that exist; the passages are all kept; and a
    write whose budget covers the whole store leaves at most ``max_segments`` segments."""
    sizes: dict[int, int] = {}
    next_id = 0
    for n in writes:
        next_id += 1
        sizes[next_id] = n
        budget = merge_budget(n, POLICY)
        while (ids := next_merge(sizes, budget, POLICY)) is not None:
            assert len(ids) == len(set(ids)) >= 2 and set(ids) <= set(sizes)
            assert sum(sizes[i] for i in ids) <= budget
            next_id += 1
            sizes[next_id] = sum(sizes.pop(i) for i in ids)
        assert next_merge(sizes, budget, POLICY) is None
        if budget >= sum(sizes.values()):  # everything affordable was folded
            assert len(sizes) <= POLICY.max_segments
    assert sum(sizes.values()) == sum(writes)


@pytest.mark.slow
def test_a_fresh_store_has_the_described_tables(tmp_path: Path) -> None:
    KnowledgeBase.open(tmp_path / "kb.db").close()
    layout = _layout(tmp_path / "kb.db")
    described = {t.name for t in TABLES if "sqlite" in t.dialects} | {"sqlite_sequence"}
    assert {k for k in layout if "." not in k} == described
    with sqlite3.connect(tmp_path / "kb.db") as c:
        assert sorted(r[0] for r in c.execute("SELECT name FROM migrations")) == sorted(MIGRATIONS.names)
        version = c.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        assert version == (str(SCHEMA_VERSION),)


@pytest.mark.slow
def test_a_schema_5_store_upgrades_to_the_fresh_layout_and_keeps_its_data(tmp_path: Path) -> None:
    """The last numbered SQLite schema (5): opening runs the missing migrations once (the offsets
    renamed, tombstones keyed by generation); the layout then equals a fresh store's, every
    search and write gives what the store it was copied from gives, and an evidex that still
    numbered its schemas would refuse the file (its number is past 5)."""
    # Imported here: a module that imports it has every test marked slow (tests/conftest.py).
    from old_stores import sqlite_v5

    current, old = tmp_path / "current.db", tmp_path / "old.db"
    _store_with_history(current)
    sqlite_v5(current, old)
    with sqlite3.connect(old) as c:
        columns = [r[1] for r in c.execute("PRAGMA table_info(passages)")]
        assert "start" in columns and "start_off" not in columns
        assert c.execute("SELECT count(*) FROM tombstones").fetchone()[0] > 0
    with KnowledgeBase.open(old) as kb, KnowledgeBase.open(current) as ref:
        assert kb.stats()["schema_version"] == SCHEMA_VERSION == 14
        assert kb.stats()["tombstones"] == ref.stats()["tombstones"]
        assert _results(kb) == _results(ref)
        assert kb.source_entries() == ref.source_entries()
        for k in (kb, ref):
            k.ingest(Document("d1", "t", frozenset({"g"}), "2", "alpha changed\n\nbeta"))
            k.ingest(Document("new", "t", frozenset({"g"}), "1", "gamma new"))
        assert _results(kb) == _results(ref)
        kb.optimize()
        ref.optimize()
        assert _results(kb) == _results(ref) and kb.stats()["tombstones"] == 0
    KnowledgeBase.open(tmp_path / "fresh.db").close()
    assert _layout(old) == _layout(tmp_path / "fresh.db")
    with sqlite3.connect(old) as c:
        applied = c.execute("SELECT name, applied_at FROM migrations ORDER BY name").fetchall()
        assert [r[0] for r in applied] == sorted(MIGRATIONS.names)
        assert int(c.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]) > 5
    KnowledgeBase.open(old).close()  # opening again applies nothing
    with sqlite3.connect(old) as c:
        assert c.execute("SELECT name, applied_at FROM migrations ORDER BY name").fetchall() == applied


@pytest.mark.slow
def test_what_a_hit_cites_is_read_from_the_passage_and_its_document(locate: Locator) -> None:
    """``cited`` gives the passage's and its document's fields a hit cites, in ``CITED`` order
    (``Hit``'s fields around its score and rank), as the row objects hold them, on a fresh
    handle too. Kept by passage id across writes: a supersede (here of the title alone) ends
    the passage ids, so the next search cites the new version."""
    assert [f.name for f in fields(Hit) if f.name not in ("score", "rank", "explain", "pid")] == list(CITED)
    location = locate("kb")
    reader = Actor("t", ODD_GROUPS, visibilities=frozenset({"public", "internal"}))

    def expected(view: Any, pids: list[int]) -> list[tuple[Any, ...]]:
        ps = view.passages(pids)
        ds = view.documents({p.dkey for p in ps.values()})
        return [(ds[p.dkey].id, ds[p.dkey].version, ds[p.dkey].content_sha256, p.number, p.text, p.start,
                 p.end, p.heading_path, p.anchor, ds[p.dkey].title, ds[p.dkey].source_url,
                 ds[p.dkey].language, p.page, p.flags) for p in (ps[i] for i in pids)]

    with KnowledgeBase.open(location, embedder="none") as kb:
        kb.ingest([_odd_document(i, d) for i, d in enumerate(ODD_IDS)], split="heading")
        with kb.store.read() as view:
            pids = np.flatnonzero(view.sig >= 0).tolist()[::-1]
            cited = view.cited(pids)
            assert cited == expected(view, pids) and len({c[0] for c in cited}) == len(ODD_IDS)
        before = kb.search(reader, "alpha", mode="keyword", limit=20)
        assert {h.title for h in before if h.document_id == "B"} == {"Titel 0 ✓"}
        kb.ingest(replace(_odd_document(0, "B"), title="Neu"), split="heading")
        after = kb.search(reader, "alpha", mode="keyword", limit=20)
        assert {h.title for h in after if h.document_id == "B"} == {"Neu"}
    with KnowledgeBase.open(location, embedder="none") as fresh, fresh.store.read() as view:
        pids = np.flatnonzero(view.sig >= 0).tolist()
        assert view.cited(pids) == expected(view, pids)


MODES = ("vector", "hybrid")


#: Cosines of different vectors closer than this may be ordered either way (float32 rounding).
NEAR = 1e-6


# -- reference model (independent of evidex's retrieval code) ---------------------------------
def ref_passages(d: Document) -> list[tuple[int, str]]:
    """Paragraph split: parts at blank lines numbered 1..n, whitespace-only parts skipped."""
    return [(n, part) for n, part in enumerate(d.text.split("\n\n"), start=1) if part.strip()]


# -- large blocks (quantised first pass, exact re-scoring) -------------------------------------------
#: Blocks of at least this many rows take the approximate int8 path (if the store has one).
LARGE = int(getattr(_vectors, "QUANT_MIN_ROWS", 2048))


SYLLABLES = ("alpha", "beta", "gamma", "delta", "omega", "zeta", "eta", "theta", "iota", "kappa",
             "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "phi", "chi", "psi")


def _random_text(rng: random.Random, words: int) -> str:
    return " ".join(f"{rng.choice(SYLLABLES)}{rng.randrange(40)}" for _ in range(words))


def test_large_block_matches_brute_force_and_ignores_other_tenants(locate: Locator) -> None:
    """A readable block big enough for the quantised first pass: recall@10 against exact brute
    force is at least 0.99 over 30 queries, scores are the exact cosines, and a store that
    also holds large unreadable blocks (another tenant, another group) gives identical results,
    bit for bit, in vector and hybrid mode: nothing is fitted across actors."""
    rng = random.Random(7)
    n = LARGE + 300
    mine = [Document(f"m{i:05d}", "t", frozenset({"g"}), "1",
                     "\n\n".join(_random_text(rng, 6) for _ in range(10)))
            for i in range(n // 10)]
    theirs = [Document(f"m{i:05d}", "other", frozenset({"g"}), "1",
                       "\n\n".join(_random_text(rng, 3) for _ in range(10))) for i in range(n // 10)]
    hr = [Document(f"h{i:05d}", "t", frozenset({"hr"}), "1", _random_text(rng, 2)) for i in range(300)]
    reader = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
    only = KnowledgeBase.open(locate("only"))
    only.ingest(mine)
    both = KnowledgeBase.open(locate("both"))
    both.ingest(theirs[: len(theirs) // 2] + mine[: len(mine) // 2] + hr)
    both.ingest(mine[len(mine) // 2 :] + theirs[len(theirs) // 2 :])
    emb = get_embedder("hash-test")
    keys = [(d.id, k) for d in mine for k, _ in ref_passages(d)]
    assert len(keys) >= LARGE  # one readable block past the threshold
    mat = emb.embed_passages([t for d in mine for _, t in ref_passages(d)]).astype(np.float64)
    recalls = []
    for _ in range(30):
        q = _random_text(rng, 3)
        cos = mat @ emb.embed_queries([q])[0].astype(np.float64)
        best = sorted(range(len(keys)), key=lambda i: (-cos[i], keys[i]))[:10]
        hits = only.search(reader, q, mode="vector", limit=10, max_per_document=None)
        assert len(hits) == 10
        got = {(h.document_id, h.passage): h.score for h in hits}
        recalls.append(len(set(got) & {keys[i] for i in best}) / 10)
        for (d, p), score in got.items():
            assert abs(score - cos[keys.index((d, p))]) <= NEAR
        for mode in MODES:
            a = only.search(reader, q, mode=mode, limit=10, explain=True)
            b = both.search(reader, q, mode=mode, limit=10, explain=True)
            assert [(h.document_id, h.passage, h.score, h.explain) for h in a] == [
                (h.document_id, h.passage, h.score, h.explain) for h in b], (mode, q)
    assert sum(recalls) / len(recalls) >= 0.99, recalls
    only.close()
    both.close()


def test_large_block_exact_ties_still_order_by_document_id(locate: Locator) -> None:
    """700 documents with the same paragraph (say, a footer) in a block that takes the
    quantised path, ingested in shuffled order: the query equal to that paragraph ties them all
    at cosine 1, and the tie rule (document id, then passage) picks the first ids, whatever the
    order the rows sit in."""
    rng = random.Random(3)
    same = [Document(f"s{i:04d}", "t", frozenset({"g"}), "1", "alpha beta gamma") for i in range(700)]
    rest = [Document(f"o{i:05d}", "t", frozenset({"g"}), "1", _random_text(rng, 6))
            for i in range(LARGE + 300 - len(same))]
    docs = same + rest
    rng.shuffle(docs)
    kb = KnowledgeBase.open(locate("kb"))
    kb.ingest(docs)
    reader = Actor("t", frozenset({"g"}), visibilities=PUBLIC_INTERNAL)
    for mode in MODES:
        hits = kb.search(reader, "alpha beta gamma", mode=mode, limit=5, max_per_document=None)
        assert [h.document_id for h in hits] == [f"s{i:04d}" for i in range(5)], (
            mode, [(h.document_id, h.score) for h in hits])
    kb.close()
