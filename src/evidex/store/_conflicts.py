"""Recorded conflicts between passages (see ``model.Conflict``): the ``conflicts`` table of the
schema (``_schema``; the ``conflicts`` migration adds it to older stores). ``SQLStore`` runs the
SQL below, with ``?`` placeholders, on either backend.

A row is written once per conflict (its ``key`` is a digest of the tenant, the kind, and both
sides' document, passage fingerprint and value), so detecting the same disagreement again
changes nothing, and a dismissal survives re-detection. Whether a conflict is still open is not
stored: it is read off the current passages (``conflicts.conflict_status``), so a supersede or a
removal closes it with the write that changed the passage, with nothing to forget. Writing
conflicts never bumps the store generation: search reads none of it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from ..model import Conflict, ConflictSide
from ._dialect import now

__all__ = ["conflict_key", "conflict_rows", "dismiss_conflict", "insert_conflicts",
           "restore_rows", "select_conflicts"]


def conflict_key(c: Conflict) -> str:
    sides = sorted((s.document_id, s.passage_sha256, s.value) for s in (c.a, c.b))
    return hashlib.sha256(json.dumps([c.tenant, c.kind, sides]).encode("utf-8")).hexdigest()


def insert_conflicts(c: Any, conflicts: Sequence[Conflict]) -> list[Conflict]:
    """Insert the conflicts not recorded yet; returns them with their ids. ``ON CONFLICT``
    makes a concurrent writer that recorded the same conflict first win, without an error."""
    stamp = now()
    out = []
    for conflict in conflicts:
        key = conflict_key(conflict)
        data = json.dumps({"kind": conflict.kind, "subject": list(conflict.subject),
                           "a": asdict(conflict.a), "b": asdict(conflict.b)}, ensure_ascii=False)
        if not c.execute("INSERT INTO conflicts (tenant, key, data, detected_at) VALUES (?, ?, ?, ?) "
                         "ON CONFLICT (key) DO NOTHING", (conflict.tenant, key, data, stamp)).rowcount:
            continue
        (cid,) = c.execute("SELECT id FROM conflicts WHERE key = ?", (key,)).fetchone()
        out.append(Conflict(int(cid), conflict.tenant, conflict.kind, conflict.subject,
                            conflict.a, conflict.b, stamp))
    return out


def select_conflicts(c: Any, tenant: str | None) -> list[Conflict]:
    """Every recorded conflict (of ``tenant``), newest first; open/closed is decided by the
    caller from the current passages, dismissed ones say so."""
    q = "SELECT id, tenant, data, detected_at, dismissed_at, dismissed_by FROM conflicts"
    rows = (c.execute(q + " ORDER BY id DESC") if tenant is None else
            c.execute(q + " WHERE tenant = ? ORDER BY id DESC", (tenant,))).fetchall()
    out = []
    for cid, ten, data, at, dismissed_at, by in rows:
        d = json.loads(data)
        out.append(Conflict(int(cid), ten, d["kind"], tuple(d["subject"]), ConflictSide(**d["a"]),
                            ConflictSide(**d["b"]), at,
                            "dismissed" if dismissed_at else "open",
                            f"dismissed by {by} at {dismissed_at}" if dismissed_at else None))
    return out


def dismiss_conflict(c: Any, tenant: str, conflict_id: int, by: str) -> bool:
    """Mark one not yet dismissed conflict of ``tenant`` dismissed; False when there is none."""
    return bool(c.execute("UPDATE conflicts SET dismissed_at = ?, dismissed_by = ? WHERE id = ? "
                          "AND tenant = ? AND dismissed_at IS NULL",
                          (now(), by, conflict_id, tenant)).rowcount)


_ROW = "tenant, key, data, detected_at, dismissed_at, dismissed_by"


def conflict_rows(c: Any, tenant: str | None) -> list[tuple[Any, ...]]:
    """The recorded conflicts (of ``tenant``) as stored, oldest first, for copying."""
    q = f"SELECT {_ROW} FROM conflicts"
    rows = (c.execute(q + " ORDER BY id") if tenant is None else
            c.execute(q + " WHERE tenant = ? ORDER BY id", (tenant,))).fetchall()
    return [tuple(r) for r in rows]


def restore_rows(c: Any, rows: list[tuple[Any, ...]]) -> int:
    """Insert ``conflict_rows`` verbatim; a conflict already held keeps its row but takes a
    dismissal it lacks (a copy made again after an admin dismissed it). How many were new."""
    new = 0
    for r in rows:
        new += c.execute(f"INSERT INTO conflicts ({_ROW}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key) "
                         "DO NOTHING", r).rowcount
        if r[4] is not None:
            c.execute("UPDATE conflicts SET dismissed_at = ?, dismissed_by = ? WHERE key = ? "
                      "AND dismissed_at IS NULL", (r[4], r[5], r[1]))
    return new
