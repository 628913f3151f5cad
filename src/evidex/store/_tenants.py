"""Tenants marked as moving or moved to another server: the ``tenant_moves`` table.

``evidex move-tenant`` copies a tenant to a new server while the old one keeps serving it, then
marks it on the old server: ``moving`` while the last writes are copied and the copy verified
(writes of the tenant are refused here, reads still served), then ``moved`` (reads and writes of
the tenant belong to the new server). The mark is what tells every process still configured
with the old placement where the tenant went: a write is refused in its transaction
(``SQLStore._refuse_moved``), a read finds the mark in its snapshot (``ReadView.moved``) and the
caller follows it (``placement.PlacedKnowledge``) or reports it. A mark is a write like any
other (it bumps the generation), so replicas carry it too.

The location is stored without a password: the processes that follow it authenticate the way
libpq lets them (a password file, the environment, certificates).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._dialect import now

__all__ = ["MOVE_STATES", "TENANT_GENERATION", "Mark", "delete_by_document", "generation", "marks",
           "record_generation", "set_mark"]

MOVE_STATES = ("moving", "moved")
#: The meta key ``TENANT_GENERATION + tenant`` holds the generation of the newest write that
#: changed the tenant's data (documents, history, sync records, its move mark). The store's own
#: generation counts every tenant's writes, so it is shown to the operator only: a tenant's
#: admin is shown this one, which another tenant's writes never move (issue 45, finding 6).
TENANT_GENERATION = "generation:"


def record_generation(c: Any, tenants: set[str], gen: int) -> None:
    """Record ``gen`` as the generation of each of ``tenants`` (in the committing write, after
    the generation row, whose lock orders commits: no two writers wait on each other here)."""
    for tenant in sorted(tenants):
        c.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE "
                  "SET value = excluded.value", (TENANT_GENERATION + tenant, str(gen)))


def generation(c: Any, tenant: str) -> int | None:
    """The generation of ``tenant``'s newest write in this snapshot (None: none recorded, the
    tenant was last written before generations were kept per tenant, or never)."""
    row = c.execute("SELECT value FROM meta WHERE key = ?", (TENANT_GENERATION + tenant,)).fetchone()
    return int(row[0]) if row else None


@dataclass(frozen=True, slots=True)
class Mark:
    state: str  # moving or moved
    location: str  # the new server's store URL, without a password
    replicas: tuple[str, ...] = ()
    at: str = ""


def marks(c: Any, tenants: Sequence[str] | None) -> dict[str, Mark]:
    """The marks of ``tenants`` (every mark when None)."""
    q = "SELECT tenant, state, location, replicas, at FROM tenant_moves"
    if tenants is None:
        rows = c.execute(q).fetchall()
    else:
        rows = []
        for t in tenants:
            rows += c.execute(q + " WHERE tenant = ?", (t,)).fetchall()
    return {r[0]: Mark(r[1], r[2], tuple(json.loads(r[3])), r[4]) for r in rows}


def set_mark(c: Any, tenant: str, state: str | None, location: str, replicas: tuple[str, ...]) -> bool:
    """Set (or with ``state`` None, clear) the mark of ``tenant``; whether anything changed."""
    old = marks(c, [tenant]).get(tenant)
    if state is None:
        if old is None:
            return False
        c.execute("DELETE FROM tenant_moves WHERE tenant = ?", (tenant,))
        return True
    if state not in MOVE_STATES:
        raise ValueError(state)
    if old is not None and (old.state, old.location, old.replicas) == (state, location, replicas):
        return False
    c.execute("DELETE FROM tenant_moves WHERE tenant = ?", (tenant,))
    c.execute("INSERT INTO tenant_moves (tenant, state, location, replicas, at) VALUES (?, ?, ?, ?, ?)",
              (tenant, state, location, json.dumps(list(replicas)), now()))
    return True


def delete_by_document(c: Any, table: str, keys: Sequence[tuple[str, str]]) -> None:
    """Delete the rows of ``table`` (keyed by tenant and doc_id) of these documents: one
    statement per document, which the driver sends in batches, serves both backends."""
    if keys:
        c.executemany(f"DELETE FROM {table} WHERE tenant = ? AND doc_id = ?", list(keys))
