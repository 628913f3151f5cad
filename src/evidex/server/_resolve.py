"""``POST /v1/resolve``."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from . import _operations
from ._deps import ERRORS, Caller, Svc
from ._schemas import ResolveBody, ResolveResponse

router = APIRouter(tags=["retrieval"])


@router.post("/v1/resolve", response_model=ResolveResponse, responses=ERRORS)
def resolve(body: ResolveBody, who: Caller, svc: Svc) -> Response:
    """Re-check a citation now: ``unavailable`` (unknown, or not readable by this caller),
    ``source_changed`` or ``quote_mismatch``. A live citation is looked up again as this
    caller: ``ok`` when the value is unchanged, ``source_changed`` (the current value in
    ``detail``), ``unavailable`` when the caller may not use the tool or it does not answer."""
    with svc.pool.handle() as kb:
        return JSONResponse(_operations.resolve(kb, who.actor, body))
