"""The run log: one row per scheduled (or requested) sync or drift run of a source.

Kept apart from the documents: writing a run record never bumps the store generation (search
caches stay valid). The ``runs`` table is part of the schema (``_schema``; the ``run_log``
migration adds it to older stores); ``SQLStore.record_run`` and ``runs`` run the SQL below on
either backend.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._schema import columns

__all__ = ["INSERT", "RunRecord", "claim", "select_runs"]

_COLUMNS = ", ".join(columns("runs")[1:])
#: The statement that appends a run (``Dialect.insert_id`` adds what returns its id).
INSERT = f"INSERT INTO runs ({_COLUMNS}) VALUES ({', '.join('?' * len(columns('runs')[1:]))})"


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

    def row(self) -> tuple[Any, ...]:
        return (self.kind, self.source, self.tenant, self.scheduled_for, self.started_at,
                self.ended_at, self.ok, json.dumps(self.counts, sort_keys=True),
                json.dumps(list(self.problems), ensure_ascii=False))


def _record(row: Sequence[Any]) -> RunRecord:
    return RunRecord(id=int(row[0]), kind=row[1], source=row[2], tenant=row[3], scheduled_for=row[4],
                     started_at=row[5], ended_at=row[6], ok=bool(row[7]), counts=json.loads(row[8]),
                     problems=tuple(json.loads(row[9])))


def select_runs(c: Any, limit: int, source: str | None, tenant: str | None) -> list[RunRecord]:
    """The latest ``limit`` runs (of ``source``, of ``tenant``), newest first."""
    conds, args = [], []
    for col, value in (("source", source), ("tenant", tenant)):
        if value is not None:
            conds.append(f"{col} = ?")
            args.append(value)
    where = (" WHERE " + " AND ".join(conds)) if conds else ""
    rows = c.execute(f"SELECT id, {_COLUMNS} FROM runs{where} ORDER BY id DESC LIMIT ?",
                     (*args, limit)).fetchall()
    return [_record(r) for r in rows]


def claim(c: Any, kind: str, source: str, scheduled_for: str, holder: str, at: str) -> bool:
    """Take on the run of ``kind`` for ``source`` due at ``scheduled_for``: True for the first
    holder to ask, False for every other (``ON CONFLICT`` on the unique key, so two schedulers
    asking at once cannot both win). A claim is for one due minute: a holder that dies while
    running loses that occurrence only, the next one is claimed afresh."""
    key = json.dumps([kind, source, scheduled_for])
    return bool(c.execute("INSERT INTO run_claims (key, holder, claimed_at) VALUES (?, ?, ?) "
                          "ON CONFLICT (key) DO NOTHING", (key, holder, at)).rowcount)
