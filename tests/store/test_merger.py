"""Segment merges after the write returns (``store._merge_runner``): what a write must not wait for,
and what the merge must still get right while other writes and readers go on meanwhile."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest

import evidex.store._core_merge as merge_module
import evidex.store._core_write as write_module
import evidex.store._sqlite as sqlite_module
from actors import PUBLIC_INTERNAL
from evidex import Actor, Document, KnowledgeBase, StoreError
from evidex.store._merge_policy import MERGE_FACTOR, merge_postings
from evidex.store._segments import FlatPostings

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
