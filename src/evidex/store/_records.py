"""What a store records beside the documents: the run log, the scheduler's claims on due
runs, the conflicts found between passages, the service's answers, feedback and
handoffs (``_feedback``), and owner notices and evaluation runs (``_reports``). Every write
here is a transaction of its own that leaves the generation alone: search reads none of it.
``SQLStore`` inherits these."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from ..model import Conflict
from . import _conflicts, _feedback, _reports
from ._dialect import Dialect, now
from ._feedback import OPERATOR_TABLES, AnswerRecord, FeedbackRecord, HandoffRecord
from ._reports import EvalRecord, NoticeRecord
from ._runs import INSERT as RUN_INSERT
from ._runs import RunRecord, claim, select_runs

__all__ = ["Records"]


class Records:
    dialect: Dialect

    def _transaction(self, exclusive: bool, conn: Any) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _connection(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def record_run(self, run: RunRecord) -> int:
        """Append a run record; returns its id."""
        with self._transaction(False, None) as c:
            key = self.dialect.insert_id(c, RUN_INSERT, run.row(), "id")
            c.execute("COMMIT")
        return key

    def runs(self, limit: int = 100, source: str | None = None, tenant: str | None = None) -> list[RunRecord]:
        with self._connection() as c:
            return select_runs(c, limit, source, tenant)

    def record_conflicts(self, conflicts: Sequence[Conflict]) -> list[Conflict]:
        """Record the conflicts not recorded before, in a transaction that leaves the
        generation alone (search reads none of it); those new, with their ids."""
        if not conflicts:
            return []
        with self._transaction(False, None) as c:
            out = _conflicts.insert_conflicts(c, conflicts)
            c.execute("COMMIT")
        return out

    def conflicts(self, tenant: str | None = None) -> list[Conflict]:
        with self._connection() as c:
            return _conflicts.select_conflicts(c, tenant)

    def dismiss_conflict(self, tenant: str, conflict_id: int, by: str) -> bool:
        with self._transaction(False, None) as c:
            done = _conflicts.dismiss_conflict(c, tenant, conflict_id, by)
            c.execute("COMMIT")
        return done

    def conflict_rows(self, tenant: str | None) -> list[tuple[Any, ...]]:
        """``tenant``'s recorded conflicts (None: every tenant's) as stored, oldest first (a move
        and a migration copy them)."""
        with self._connection() as c:
            return _conflicts.conflict_rows(c, tenant)

    def restore_conflicts(self, rows: list[tuple[Any, ...]]) -> int:
        """Record ``conflict_rows`` of another store verbatim; how many were new here."""
        if not rows:
            return 0
        with self._transaction(False, None) as c:
            new = _conflicts.restore_rows(c, rows)
            c.execute("COMMIT")
        return new

    def operator_records(self, tenant: str | None) -> dict[str, list[tuple[Any, ...]]]:
        """``tenant``'s answer records, feedback and handoffs (None: every tenant's) as stored,
        per table, oldest first (``_feedback.operator_rows``)."""
        with self._connection() as c:
            return _feedback.operator_rows(c, tenant)

    def restore_operator_records(self, rows: dict[str, list[tuple[Any, ...]]]) -> int:
        """Record another store's ``operator_records`` this one lacks; how many were added."""
        if not any(rows.values()):
            return 0
        with self._transaction(False, None) as c:
            added = _feedback.restore_operator_rows(c, rows)
            c.execute("COMMIT")
        return added

    def remove_records(self, tenant: str) -> None:
        """Delete ``tenant``'s recorded conflicts and runs (a tenant moved off this store)."""
        with self._transaction(False, None) as c:
            c.execute("DELETE FROM conflicts WHERE tenant = ?", (tenant,))
            c.execute("DELETE FROM runs WHERE tenant = ?", (tenant,))
            for table in OPERATOR_TABLES:
                c.execute(f"DELETE FROM {table} WHERE tenant = ?", (tenant,))
            c.execute("COMMIT")

    def claim_run(self, kind: str, source: str, scheduled_for: str, holder: str) -> bool:
        """True when ``holder`` is the first to take on this due run (see ``_runs.claim``)."""
        with self._transaction(False, None) as c:
            mine = claim(c, kind, source, scheduled_for, holder, now())
            c.execute("COMMIT")
        return mine

    # -- the service's answers, feedback and handoffs (``_feedback``) ----------------------------
    def record_answer(self, record: AnswerRecord) -> None:
        with self._transaction(False, None) as c:
            _feedback.insert_answer(c, record)
            c.execute("COMMIT")

    def answer_records(self, tenant: str, *, since: str | None = None, trace_id: str | None = None,
                       limit: int = 1000) -> list[AnswerRecord]:
        with self._connection() as c:
            return _feedback.select_answers(c, tenant, since, trace_id, limit)

    def record_feedback(self, record: FeedbackRecord) -> None:
        with self._transaction(False, None) as c:
            _feedback.upsert_feedback(c, record)
            c.execute("COMMIT")

    def feedback(self, tenant: str, *, since: str | None = None, limit: int = 10_000) -> list[FeedbackRecord]:
        with self._connection() as c:
            return _feedback.select_feedback(c, tenant, since, limit)

    def record_handoff(self, record: HandoffRecord) -> None:
        with self._transaction(False, None) as c:
            _feedback.insert_handoff(c, record)
            c.execute("COMMIT")

    def handoffs(self, tenant: str, *, since: str | None = None, limit: int = 100) -> list[HandoffRecord]:
        with self._connection() as c:
            return _feedback.select_handoffs(c, tenant, since, limit)

    # -- owner notices and evaluation runs (``_reports``) ----------------------------------------
    def record_notices(self, records: Sequence[NoticeRecord]) -> None:
        if not records:
            return
        with self._transaction(False, None) as c:
            _reports.insert_notices(c, list(records))
            c.execute("COMMIT")

    def notices(self, tenant: str, *, limit: int = 1000) -> list[NoticeRecord]:
        with self._connection() as c:
            return _reports.select_notices(c, tenant, limit)

    def record_eval(self, record: EvalRecord) -> None:
        with self._transaction(False, None) as c:
            _reports.insert_eval(c, record)
            c.execute("COMMIT")

    def evals(self, tenant: str, *, limit: int = 10) -> list[EvalRecord]:
        with self._connection() as c:
            return _reports.select_evals(c, tenant, limit)
