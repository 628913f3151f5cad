"""``POST /v1/resolve``."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from . import _operations
from ._deps import ERRORS, Caller, Svc
from ._schemas import Citation, ResolveResponse

router = APIRouter(tags=["retrieval"])


@router.post("/v1/resolve", response_model=ResolveResponse, responses=ERRORS)
def resolve(body: Citation, who: Caller, svc: Svc) -> Response:
    """Re-check a citation now: ``unavailable`` (unknown, or not readable by this caller),
    ``source_changed`` or ``quote_mismatch``."""
    if len(body.quote) > svc.max_quote_chars:  # the bound the OpenAPI document states
        raise RequestValidationError([{
            "loc": ("body", "quote"), "type": "string_too_long",
            "msg": f"String should have at most {svc.max_quote_chars} characters"}])
    with svc.pool.handle() as kb:
        return JSONResponse(_operations.resolve(kb, who.actor, body))
