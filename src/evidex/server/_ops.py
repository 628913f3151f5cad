"""The operators' view behind the page's Operators tab: admin keys only, each its own tenant.

``GET /v1/ops/sources``: every configured source of the tenant with its owner, its schedule and
next scheduled check, its latest sync and drift runs from the run log (when, counts, the
first line of the first problem), and the owner told of its latest findings (who, on which kind
of route, when, delivered or why not). ``GET /v1/ops/evaluations``: the latest recorded
evaluation runs (the gate's checks, the figures per category). ``GET /v1/ops/handoffs``: the
questions sent to a person (question, when, reference, whether a route took it).
``GET /v1/ops/citations``: passages that recent answers cited and that no longer resolve to what
was cited (the document was removed, or changed to a newer version), with how many answers cited
them. Conflicts awaiting an owner are ``GET /v1/conflicts`` (``_conflicts``), which the page
reads as it is.

What the configuration says about sources is handed in as ``SourcesFn`` (``overview`` builds it),
so this package reads no configuration file itself; without sources configured the list is
built from the run log alone.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query

from ..cadence import parse_cadence
from ..config import Config
from ..store import RunRecord
from ._deps import ADMIN_ERRORS, Admin, Svc

__all__ = ["overview", "router"]

router = APIRouter(tags=["operators"])
#: How many recent answers the citation check reads.
CITATIONS_READ = 1000
#: How many recent owner notices the sources list reads (each source shows its newest).
NOTICES_READ = 1000


def overview(cfg: Config) -> Callable[..., list[dict[str, Any]]]:
    """What the configuration says about a tenant's sources: id, type, owner's name, the sync
    schedule and the drift check's, with the next time each is due (UTC)."""
    drift = parse_cadence(cfg.freshness.drift_check) if cfg.sources else None

    def describe(*, tenant: str) -> list[dict[str, Any]]:
        now = datetime.now(UTC)
        out = []
        for s in cfg.sources:
            if (s.tenant or cfg.defaults.tenant) != tenant:
                continue
            owner = s.owner or cfg.defaults.owner
            sync = parse_cadence(s.schedule) if s.schedule else None
            out.append({
                "id": s.id, "type": s.type,
                "owner": owner if isinstance(owner, str) or owner is None else owner.name,
                "sync_schedule": s.schedule,
                "next_sync": sync.next_after(now).isoformat(timespec="minutes") if sync else None,
                "drift_schedule": cfg.freshness.drift_check,
                "next_drift_check": drift.next_after(now).isoformat(timespec="minutes") if drift else None})
        return out

    return describe


def _run(run: RunRecord | None) -> dict[str, Any] | None:
    if run is None:
        return None
    first = run.problems[0].splitlines()[0] if run.problems else None
    return {"started_at": run.started_at, "ended_at": run.ended_at, "ok": run.ok, "counts": dict(run.counts),
            "problems": len(run.problems), "first_problem": first}


@router.get("/v1/ops/sources", responses=ADMIN_ERRORS)
def sources(who: Admin, svc: Svc) -> dict[str, Any]:
    """The admin key's tenant's sources: owner, schedules, next checks, latest sync and drift."""
    tenant = who.actor.tenant
    with svc.pool.handle() as kb:
        runs = kb.runs(10_000, tenant=tenant)
        notices = kb.for_tenant(tenant).store.notices(tenant, limit=NOTICES_READ)
    latest: dict[tuple[str, str], RunRecord] = {}
    for r in runs:  # newest first
        if r.kind in ("sync", "drift"):
            latest.setdefault((r.kind, r.source), r)
    told: dict[str, list[dict[str, Any]]] = {}
    for n in notices:  # newest first: each source's newest notice, one row per route it went on
        mine = told.setdefault(n.source, [])
        if not mine or mine[0]["sent_at"] == n.sent_at:
            mine.insert(0, n.as_dict())  # its routes in the order they were tried
    configured = svc.sources(tenant=tenant) if svc.sources is not None else []
    known = {s["id"] for s in configured}
    recorded = sorted({source for _, source in latest} - known)
    listed = configured + [{"id": s, "type": None, "owner": None, "sync_schedule": None, "next_sync": None,
                            "drift_schedule": None, "next_drift_check": None} for s in recorded]
    return {"sources": [{**s, "last_sync": _run(latest.get(("sync", s["id"]))),
                         "last_drift": _run(latest.get(("drift", s["id"]))),
                         "owner_told": told.get(s["id"], [])} for s in listed]}


@router.get("/v1/ops/evaluations", responses=ADMIN_ERRORS)
def evaluations(who: Admin, svc: Svc, limit: Annotated[int, Query(ge=1, le=100)] = 5) -> dict[str, Any]:
    """The admin key's tenant's recorded evaluation runs (``evidex eval --cases --record``),
    newest first: when, the case set, whether the gate passed, its checks and the figures per
    category."""
    tenant = who.actor.tenant
    with svc.pool.handle() as kb:
        found = kb.for_tenant(tenant).store.evals(tenant, limit=limit)
    return {"evaluations": [e.as_dict() for e in found]}


@router.get("/v1/ops/handoffs", responses=ADMIN_ERRORS)
def handoffs(who: Admin, svc: Svc, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict[str, Any]:
    """The questions the admin key's tenant's askers sent to a person, newest first."""
    tenant = who.actor.tenant
    with svc.pool.handle() as kb:
        found = kb.for_tenant(tenant).store.handoffs(tenant, limit=limit)
    return {"handoffs": [h.as_dict() for h in found]}


@router.get("/v1/ops/citations", responses=ADMIN_ERRORS)
def citations(who: Admin, svc: Svc) -> dict[str, Any]:
    """Passages recent answers cited that no longer resolve as cited: ``removed`` (the document
    is gone) or ``source_changed`` (it is at another version now), with the answers citing them."""
    tenant = who.actor.tenant
    with svc.pool.handle() as kb:
        answers = kb.for_tenant(tenant).store.answer_records(tenant, limit=CITATIONS_READ)
        current = {d.id: d.version for d in kb.documents(tenant)}
    broken: dict[tuple[str, str], dict[str, Any]] = {}
    for a in answers:
        for c in a.cited:
            now = current.get(c["document_id"])
            if now == c["version"]:
                continue
            key = (c["document_id"], c["version"])
            entry = broken.setdefault(key, {
                "document_id": c["document_id"], "cited_version": c["version"], "current_version": now,
                "why": "removed" if now is None else "source_changed", "answers": 0,
                "last_cited": a.asked_at})
            entry["answers"] += 1
    return {"answers_read": len(answers), "citations": sorted(
        broken.values(), key=lambda e: (-e["answers"], e["document_id"], e["cited_version"]))}
