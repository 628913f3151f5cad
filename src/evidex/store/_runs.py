"""The run log: one row per scheduled (or requested) sync or drift run of a source.

The stores get ``record_run`` and ``runs`` from the two mixins at the end. Kept apart from the
documents: writing a run record never bumps the store generation (search
caches stay valid) and the table is created on first use, so stores made before it need no
migration. Both backends share the SQL below except for parameter markers and the key column.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PostgresRunLog", "RunRecord", "SQLiteRunLog"]

_COLUMNS = ("kind, source, tenant, scheduled_for, started_at, ended_at, ok, counts, problems")
_TABLE = """CREATE TABLE IF NOT EXISTS runs (
    id {key},
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    tenant TEXT,
    scheduled_for TEXT,
    started_at TEXT NOT NULL,
    ended_at TEXT NOT NULL,
    ok BOOLEAN NOT NULL,
    counts TEXT NOT NULL,
    problems TEXT NOT NULL
)"""


@dataclass(frozen=True)
class RunRecord:
    """One run. Times are ISO 8601 UTC; ``scheduled_for`` is the due minute that started it
    (None when run on request); ``counts`` are the sync report's totals (added, superseded,
    unchanged, removed, ...); ``problems`` one line each (a source that could not be listed, an
    item that could not be read, a notification hook that failed)."""

    kind: str
    source: str
    tenant: str | None
    started_at: str
    ended_at: str
    ok: bool
    counts: dict[str, int] = field(default_factory=dict)
    problems: tuple[str, ...] = ()
    scheduled_for: str | None = None
    id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "source": self.source, "tenant": self.tenant,
                "scheduled_for": self.scheduled_for, "started_at": self.started_at,
                "ended_at": self.ended_at, "ok": self.ok, "counts": dict(self.counts),
                "problems": list(self.problems)}

    def line(self) -> str:
        """One line for a terminal or a log: when, what, and how it went."""
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()) if v)
        status = "ok" if self.ok else f"{len(self.problems)} problem(s): " + "; ".join(self.problems)
        return (f"{self.started_at} .. {self.ended_at[11:]}  {self.kind:5} {self.source}: {status}"
                f"{'; ' + counts if counts else ''}")

    def _row(self) -> tuple[Any, ...]:
        return (self.kind, self.source, self.tenant, self.scheduled_for, self.started_at,
                self.ended_at, self.ok, json.dumps(self.counts, sort_keys=True),
                json.dumps(list(self.problems), ensure_ascii=False))


def _record(row: Sequence[Any]) -> RunRecord:
    return RunRecord(id=int(row[0]), kind=row[1], source=row[2], tenant=row[3], scheduled_for=row[4],
                     started_at=row[5], ended_at=row[6], ok=bool(row[7]), counts=json.loads(row[8]),
                     problems=tuple(json.loads(row[9])))


def _where(source: str | None, tenant: str | None, mark: str) -> tuple[str, list[str]]:
    conds, args = [], []
    for col, value in (("source", source), ("tenant", tenant)):
        if value is not None:
            conds.append(f"{col} = {mark}")
            args.append(value)
    return (" WHERE " + " AND ".join(conds)) if conds else "", args


# -- SQLite -----------------------------------------------------------------------------------

def sqlite_record_run(c: sqlite3.Connection, run: RunRecord) -> int:
    """Append ``run`` in its own transaction on ``c`` (the caller holds the handle's locks)."""
    c.execute("BEGIN IMMEDIATE")
    try:
        c.execute(_TABLE.format(key="INTEGER PRIMARY KEY AUTOINCREMENT"))
        cur = c.execute(f"INSERT INTO runs ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", run._row())
    except BaseException:
        c.execute("ROLLBACK")
        raise
    c.execute("COMMIT")
    return int(cur.lastrowid or 0)


def sqlite_runs(c: sqlite3.Connection, limit: int, source: str | None, tenant: str | None
                ) -> list[RunRecord]:
    """The latest ``limit`` runs, newest first."""
    if c.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'").fetchone() is None:
        return []
    where, args = _where(source, tenant, "?")
    rows = c.execute(f"SELECT id, {_COLUMNS} FROM runs{where} ORDER BY id DESC LIMIT ?",
                     (*args, limit)).fetchall()
    return [_record(r) for r in rows]


# -- PostgreSQL (a psycopg connection; the caller commits) ------------------------------------

def pg_record_run(conn: Any, run: RunRecord) -> int:
    # Two writers creating the table at once would collide on the catalog: a transaction-level
    # advisory lock (an arbitrary constant key) orders them.
    conn.execute("SELECT pg_advisory_xact_lock(2024052401)")
    conn.execute(_TABLE.format(key="BIGSERIAL PRIMARY KEY"))
    row = conn.execute(f"INSERT INTO runs ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
                       "RETURNING id", run._row()).fetchone()
    return int(row[0])


def pg_runs(conn: Any, limit: int, source: str | None, tenant: str | None) -> list[RunRecord]:
    if conn.execute("SELECT to_regclass('runs')").fetchone()[0] is None:
        return []
    where, args = _where(source, tenant, "%s")
    rows = conn.execute(f"SELECT id, {_COLUMNS} FROM runs{where} ORDER BY id DESC LIMIT %s",
                        (*args, limit)).fetchall()
    return [_record(r) for r in rows]


# -- the stores' methods ------------------------------------------------------------------------

class SQLiteRunLog:
    """``record_run``/``runs`` of ``SQLiteStore`` (on the handle's connection and locks)."""

    _lock: Any
    _write_gate: Any
    _conn: sqlite3.Connection

    def record_run(self, run: RunRecord) -> int:
        with self._lock, self._write_gate:
            return sqlite_record_run(self._conn, run)

    def runs(self, limit: int = 100, source: str | None = None, tenant: str | None = None
             ) -> list[RunRecord]:
        with self._lock:
            return sqlite_runs(self._conn, limit, source, tenant)


class PostgresRunLog:
    """``record_run``/``runs`` of ``PostgresStore`` (a pooled connection, committed on exit)."""

    _connection: Callable[[], AbstractContextManager[Any]]

    def record_run(self, run: RunRecord) -> int:
        with self._connection() as conn:
            return pg_record_run(conn, run)

    def runs(self, limit: int = 100, source: str | None = None, tenant: str | None = None
             ) -> list[RunRecord]:
        with self._connection() as conn:
            return pg_runs(conn, limit, source, tenant)
