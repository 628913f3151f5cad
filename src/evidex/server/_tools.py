"""``GET /v1/tools`` and ``POST /v1/tools/{id}/call``: an operator's view of the live tools.

Admin keys only, confined to their own tenant like sync and drift. A call runs as the admin
key's actor: question parameters come from the body (each checked by its pattern), actor
parameters from the key's own configured claims, never from the body; so an operator can test
a tool without being able to read any customer's data the key was not given.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException

from ._deps import ADMIN_ERRORS, Admin, Svc
from ._schemas import Problem, ToolCallRequest

router = APIRouter(tags=["admin"])

_NOT_FOUND = {404: {"model": Problem, "description": "no such tool in your tenant"}}


@router.get("/v1/tools", responses=ADMIN_ERRORS)
def list_tools(who: Admin, svc: Svc) -> dict[str, Any]:
    """The live tools of the admin key's tenant (header values are not shown)."""
    with svc.pool.handle() as kb:
        tools = [t.summary() for t in kb.tools() if t.tenant == who.actor.tenant]
    return {"tools": tools}


@router.post("/v1/tools/{tool_id}/call", responses={**ADMIN_ERRORS, **_NOT_FOUND})
def call_tool(tool_id: str, body: ToolCallRequest, who: Admin, svc: Svc) -> dict[str, Any]:
    """Look up once with these question parameters, as the admin key (its own claims fill the
    actor parameters). The result says ok, failed, needs_claim or flagged; a failure is a
    result, not an HTTP error."""
    with svc.pool.handle() as kb:
        if not any(t.id == tool_id and t.tenant == who.actor.tenant for t in kb.tools()):
            raise HTTPException(404, "no such tool in your tenant")
        return kb.call_tool(who.actor, tool_id, body.parameters, operator=True).as_dict()
