"""``POST /v1/sync``, ``GET /v1/drift`` and ``GET /v1/runs``: the admin key's tenant against
its sources, and the record of their scheduled runs; ``GET /v1/check``: the store's integrity."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from ._deps import ADMIN_ERRORS, Admin, Reads, Svc
from ._schemas import SyncRequest

router = APIRouter(tags=["admin"])


@router.post("/v1/sync", responses=ADMIN_ERRORS)
def run_sync(body: SyncRequest, who: Admin, svc: Svc, reads: Reads) -> dict[str, Any]:
    """Sync the admin key's tenant from its configured sources."""
    if svc.sync is None:
        raise HTTPException(501, "this server was started without sources configured; sync is "
                                 "not available")
    return dict(svc.sync(tenant=who.actor.tenant, source=body.source, session=reads))


@router.get("/v1/drift", responses=ADMIN_ERRORS)
def run_drift(who: Admin, svc: Svc) -> dict[str, Any]:
    """How the admin key's tenant's store differs from its sources (changes nothing)."""
    if svc.drift is None:
        raise HTTPException(501, "this server was started without sources configured; drift is "
                                 "not available")
    return dict(svc.drift(tenant=who.actor.tenant))


@router.get("/v1/check", responses=ADMIN_ERRORS)
def run_check(who: Admin, svc: Svc) -> dict[str, Any]:
    """Verify the whole store (``evidex check``); ``ok`` is false when any problem was found.
    Problems about other tenants' documents are counted (``withheld``), not shown."""
    with svc.pool.handle() as kb:
        report = kb.check()
    return report.as_dict(tenant=who.actor.tenant)


@router.get("/v1/runs", responses=ADMIN_ERRORS)
def list_runs(who: Admin, svc: Svc, limit: Annotated[int, Query(ge=1, le=1000)] = 100,
              source: str | None = None) -> dict[str, Any]:
    """The latest sync and drift runs of the admin key's tenant's sources, newest first: start,
    end, counts and problems of each."""
    with svc.pool.handle() as kb:
        runs = kb.runs(limit, source=source, tenant=who.actor.tenant)
    return {"runs": [r.as_dict() for r in runs]}
