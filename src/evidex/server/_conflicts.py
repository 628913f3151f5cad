"""``GET /v1/conflicts`` and ``POST /v1/conflicts/{id}/dismiss``: the admin key's tenant's
conflicts between passages (see ``KnowledgeBase.conflicts``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException
from fastapi import Path as PathParam

from ._deps import ADMIN_ERRORS, Admin, Reads, Svc
from ._schemas import Problem

router = APIRouter(tags=["admin"])


@router.get("/v1/conflicts", responses=ADMIN_ERRORS)
def list_conflicts(who: Admin, svc: Svc, reads: Reads,
                   status: Literal["open", "closed", "dismissed", "all"] = "open") -> dict[str, Any]:
    """Conflicts of the admin key's tenant, newest first: both citations and their values; a
    side's sentence only when the key may read its document (null otherwise, and the subject
    words are left out), as its GET /v1/documents would decide."""
    with svc.pool.handle() as kb:
        found = kb.conflicts(who.actor.tenant, None if status == "all" else status, session=reads)
        readable: dict[str, bool] = {}
        for c in found:
            for side in (c.a, c.b):
                if side.document_id not in readable:
                    seen = kb.document(who.actor, side.document_id, session=reads)
                    readable[side.document_id] = seen is not None
    return {"conflicts": [_listed(c.as_dict(), readable) for c in found]}


def _listed(conflict: dict[str, Any], readable: dict[str, bool]) -> dict[str, Any]:
    """An admin key is an actor too: ids and values of every side (what owners are sent), the
    text of a side only when the key may read that document."""
    hidden = False
    for side in conflict["sides"]:
        if not readable[side["document_id"]]:
            side["sentence"] = None
            hidden = True
    if hidden:
        conflict["subject"] = []  # the words the two sentences share
    return conflict


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
