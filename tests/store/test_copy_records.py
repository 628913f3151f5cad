"""``evidex migrate`` and a tenant's move carry every record beside the documents: recorded
conflicts, runs, and the operator records (answer records, feedback, handoffs, owner notices,
evaluation reports), through the one copy-and-verify (``store._copy``).

On SQLite files (the copy goes through the store contract, so the same holds between any two
backends; tests/store/test_postgres.py and tests/placement/test_placement.py run it on PostgreSQL).
"""

from __future__ import annotations

from pathlib import Path

from evidex import Document, KnowledgeBase
from evidex.config import StoreLocation
from evidex.placement import move_tenant
from evidex.store import (
    AnswerRecord,
    EvalRecord,
    FeedbackRecord,
    HandoffRecord,
    NoticeRecord,
    RunRecord,
    migrate_store,
    open_store,
)

TENANTS = ("acme", "globex")


def _records(store: object, tenant: str) -> tuple[list[object], ...]:
    s = store  # the store contract's listings
    return (s.answer_records(tenant), s.feedback(tenant), s.handoffs(tenant),  # type: ignore[attr-defined]
            [r.started_at for r in s.runs(tenant=tenant)],  # type: ignore[attr-defined]
            s.notices(tenant), s.evals(tenant))  # type: ignore[attr-defined]


def _store_with_records(path: Path) -> str:
    db = str(path)
    with KnowledgeBase.open(db, embedder="none") as kb:
        kb.ingest([Document(f"d{i}", t, frozenset({"g"}), "1", f"Alpha {t} passage {i}.", visibility="public")
                   for t in TENANTS for i in range(3)])
        for t in TENANTS:
            for n in range(2):
                trace = f"{t}-trace-{n}"
                kb.store.record_answer(AnswerRecord(
                    t, trace, "key:ops", f"question {n}?", "answered", None,
                    f"2026-12-0{n + 1}T10:00:00+00:00",
                    {"groups": ["g"], "visibilities": ["public"]},
                    ({"document_id": "d0", "version": "1", "passage": 1, "content_sha256": "0" * 64},)))
                kb.store.record_feedback(FeedbackRecord(t, trace, "key:ops", "helpful", None,
                                                        f"2026-12-0{n + 1}T11:00:00+00:00"))
            # Two handoffs alike but for their time: both kept, neither doubled by a second copy.
            for when in ("2026-12-03T09:00:00+00:00", "2026-12-03T09:05:00+00:00"):
                kb.store.record_handoff(HandoffRecord(t, "ref-1", "key:ops", "a person?", True, when,
                                                      (f"{t}-trace-0",)))
            kb.store.record_notices([NoticeRecord(t, "help", "docs team", "email",
                                                  "2026-12-04T08:00:00+00:00", False, "refused",
                                                  {"changed": 1})])
            kb.store.record_eval(EvalRecord(t, "cases.yaml", "2026-12-05T08:00:00+00:00",
                                            "2026-12-05T08:01:00+00:00", True, {"totals": {"cases": 3}}))
            kb.record_run(RunRecord("sync", "help", t, "2026-12-01T00:00:00+00:00",
                                    "2026-12-01T00:00:05+00:00", True, {"added": 3}, (), "2026-12-01T00:00"))
    return db


def test_migrate_carries_and_verifies_the_operator_records(tmp_path: Path) -> None:
    src = _store_with_records(tmp_path / "a.db")
    report = migrate_store(src, str(tmp_path / "b.db"))
    assert report.mismatches == []
    assert (report.documents, report.runs, report.operator_records) == (6, 2, 2 * (2 + 2 + 2 + 1 + 1))
    a, b = open_store(src), open_store(str(tmp_path / "b.db"))
    try:
        for t in TENANTS:
            assert _records(b, t) == _records(a, t)
    finally:
        a.close()
        b.close()


def test_a_move_carries_the_operator_records_and_leaves_none_behind(tmp_path: Path) -> None:
    src, dst = _store_with_records(tmp_path / "a.db"), str(tmp_path / "b.db")
    before = open_store(src)
    try:
        kept = _records(before, "acme")
    finally:
        before.close()
    report = move_tenant("acme", StoreLocation(url=src), StoreLocation(url=dst))
    assert report.state == "done" and report.counts is not None
    assert report.counts.mismatches == [] and report.counts.operator_records == 8
    assert report.as_dict()["verified"]["operator_records"] == 8  # type: ignore[index]
    a, b = open_store(src), open_store(dst)
    try:
        assert _records(b, "acme") == kept
        assert _records(a, "acme") == ([], [], [], [], [], [])
        assert _records(b, "globex") == ([], [], [], [], [], [])  # the other tenant stays where it was
        assert len(_records(a, "globex")[0]) == 2
    finally:
        a.close()
        b.close()


def test_copying_the_records_twice_adds_nothing(tmp_path: Path) -> None:
    """A move's catch-up copies the records again: nothing is doubled, a changed rating is taken."""
    from evidex.store import copy_records

    src = _store_with_records(tmp_path / "a.db")
    a = open_store(src)
    b = open_store(str(tmp_path / "b.db"), analyzer=a.analyzer, embedder=a.embedder, dimension=a.dimension)
    try:
        assert copy_records(a, b, "acme") == (0, 1, 8)
        a.record_feedback(FeedbackRecord("acme", "acme-trace-0", "key:ops", "not_helpful", "stale",
                                         "2026-12-04T00:00:00+00:00"))
        assert copy_records(a, b, "acme")[1] == 0
        assert _records(b, "acme") == _records(a, "acme")
    finally:
        a.close()
        b.close()
