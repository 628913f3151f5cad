"""``GET /v1/tools`` and ``POST /v1/tools/{id}/call``: an operator's view of the live tools.

Admin keys only, confined to their own tenant like sync and drift. A call runs as the admin
key's actor: question parameters come from the body (each checked by its pattern), actor
parameters from the key's own configured claims, never from the body; so an operator can test
a tool without being able to read any customer's data the key was not given. Like an answer's
lookups, a call holds no store handle and no request thread while the service answers.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.concurrency import run_in_threadpool

from ..tools import Toolbox, ToolConfig
from ._deps import ADMIN_ERRORS, Admin, Svc
from ._schemas import Problem, ToolCallRequest

router = APIRouter(tags=["admin"])

_NOT_FOUND = {404: {"model": Problem, "description": "no such tool in your tenant"}}


def _toolbox(svc: Svc) -> Toolbox:
    if svc.tools is not None:
        return svc.tools
    with svc.pool.handle() as kb:  # a factory of handles without a shared toolbox
        return kb.toolbox


def _tools(svc: Svc) -> list[ToolConfig]:
    return list(_toolbox(svc).tools)


@router.get("/v1/tools", responses=ADMIN_ERRORS)
def list_tools(who: Admin, svc: Svc) -> dict[str, Any]:
    """The live tools of the admin key's tenant (header values are not shown)."""
    return {"tools": [t.summary() for t in _tools(svc) if t.tenant == who.actor.tenant]}


@router.post("/v1/tools/{tool_id}/call", responses={**ADMIN_ERRORS, **_NOT_FOUND})
async def call_tool(tool_id: str, body: ToolCallRequest, who: Admin, svc: Svc) -> dict[str, Any]:
    """Look up once with these question parameters, as the admin key (its own claims fill the
    actor parameters). The result says ok, failed, needs_claim or flagged; a failure is a
    result, not an HTTP error."""
    box = svc.tools if svc.tools is not None else await run_in_threadpool(_toolbox, svc)
    if not any(t.id == tool_id and t.tenant == who.actor.tenant for t in box.tools):
        raise HTTPException(404, "no such tool in your tenant")
    bound = box.called(who.actor, tool_id, body.parameters, operator=True)
    [found] = await box.start([bound]).wait_async()
    if svc.metrics is not None:
        svc.metrics.looked_up(who, [found])
    return found.as_dict()
