"""``GET /v1/conflicts`` and ``POST /v1/conflicts/{id}/dismiss``: the admin key's tenant's
conflicts between passages (see ``KnowledgeBase.conflicts``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException
from fastapi import Path as PathParam

from ._deps import ADMIN_ERRORS, Admin, Svc
from ._schemas import Problem

router = APIRouter(tags=["admin"])


@router.get("/v1/conflicts", responses=ADMIN_ERRORS)
def list_conflicts(who: Admin, svc: Svc,
                   status: Literal["open", "closed", "dismissed", "all"] = "open") -> dict[str, Any]:
    """Conflicts of the admin key's tenant, newest first: both citations and their values."""
    with svc.pool.handle() as kb:
        found = kb.conflicts(who.actor.tenant, None if status == "all" else status)
    return {"conflicts": [c.as_dict() for c in found]}


@router.post("/v1/conflicts/{conflict_id}/dismiss",
             responses={**ADMIN_ERRORS, 404: {"model": Problem, "description": "no such open conflict"}})
def dismiss_conflict(conflict_id: Annotated[int, PathParam(ge=1, le=2**63 - 1)], who: Admin,
                     svc: Svc) -> dict[str, Any]:
    """Dismiss an open conflict: it stays listed as dismissed and is not raised again for the
    same two passages and values."""
    with svc.pool.handle() as kb:
        if not kb.dismiss_conflict(who.actor.tenant, conflict_id, who.label):
            raise HTTPException(404, f"no open conflict {conflict_id} in this tenant")
    return {"dismissed": conflict_id}
