"""Recorded conflicts between passages (see ``model.Conflict``): one table, the same SQL for
both backends apart from the placeholder and the key column.

A row is written once per conflict (its ``key`` is a digest of the tenant, the kind, and both
sides' document, passage fingerprint and value), so detecting the same disagreement again
changes nothing, and a dismissal survives re-detection. Whether a conflict is still open is not
stored: it is read off the current passages (``kb``), so a supersede or a removal closes it in
the same transaction that changed the passage, with nothing to forget.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, Protocol

from ..model import Conflict, ConflictSide

__all__ = ["CONFLICTS_DDL", "conflict_key", "dismiss_conflict", "load_conflicts", "record_conflicts"]

CONFLICTS_DDL = {
    "sqlite": "CREATE TABLE conflicts (id INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, "
              "key TEXT NOT NULL UNIQUE, data TEXT NOT NULL, detected_at TEXT NOT NULL, "
              "dismissed_at TEXT, dismissed_by TEXT)",
    "postgresql": "CREATE TABLE conflicts (id BIGSERIAL PRIMARY KEY, tenant TEXT NOT NULL, "
                  "key TEXT NOT NULL UNIQUE, data TEXT NOT NULL, detected_at TEXT NOT NULL, "
                  "dismissed_at TEXT, dismissed_by TEXT)",
}


class Cursor(Protocol):
    def execute(self, query: Any, params: Any = ...) -> Any: ...


def conflict_key(c: Conflict) -> str:
    sides = sorted((s.document_id, s.passage_sha256, s.value) for s in (c.a, c.b))
    return hashlib.sha256(json.dumps([c.tenant, c.kind, sides]).encode("utf-8")).hexdigest()


def record_conflicts(cur: Cursor, ph: str, conflicts: Sequence[Conflict]) -> list[Conflict]:
    """Insert the conflicts not recorded yet; returns them with their ids."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    out = []
    for c in conflicts:
        key = conflict_key(c)
        if cur.execute(f"SELECT 1 FROM conflicts WHERE key = {ph}", (key,)).fetchone():
            continue
        data = json.dumps({"kind": c.kind, "subject": list(c.subject), "a": asdict(c.a),
                           "b": asdict(c.b)}, ensure_ascii=False)
        row = cur.execute(f"INSERT INTO conflicts (tenant, key, data, detected_at) VALUES "
                          f"({ph}, {ph}, {ph}, {ph}) RETURNING id", (c.tenant, key, data, now)).fetchone()
        out.append(Conflict(int(row[0]), c.tenant, c.kind, c.subject, c.a, c.b, now))
    return out


def load_conflicts(cur: Cursor, ph: str, tenant: str | None) -> list[Conflict]:
    """Every recorded conflict (of ``tenant``), newest first; open/closed is decided by the
    caller from the current passages, dismissed ones say so."""
    q = "SELECT id, tenant, data, detected_at, dismissed_at, dismissed_by FROM conflicts"
    rows = (cur.execute(q + " ORDER BY id DESC") if tenant is None else
            cur.execute(q + f" WHERE tenant = {ph} ORDER BY id DESC", (tenant,))).fetchall()
    out = []
    for cid, ten, data, at, dismissed_at, by in rows:
        d = json.loads(data)
        out.append(Conflict(int(cid), ten, d["kind"], tuple(d["subject"]), ConflictSide(**d["a"]),
                            ConflictSide(**d["b"]), at,
                            "dismissed" if dismissed_at else "open",
                            f"dismissed by {by} at {dismissed_at}" if dismissed_at else None))
    return out


def dismiss_conflict(cur: Cursor, ph: str, tenant: str, conflict_id: int, by: str) -> bool:
    now = datetime.now(UTC).isoformat(timespec="seconds")
    row = cur.execute(f"UPDATE conflicts SET dismissed_at = {ph}, dismissed_by = {ph} WHERE id = {ph} "
                      f"AND tenant = {ph} AND dismissed_at IS NULL RETURNING id",
                      (now, by, conflict_id, tenant)).fetchone()
    return row is not None
