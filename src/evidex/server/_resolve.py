"""``POST /v1/resolve``."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from ..model import Resolution
from ..tools import compare
from . import _operations
from ._deps import ERRORS, Caller, Reads, Svc, uniform_denial
from ._schemas import Citation, LiveCitation, ResolveBody, ResolveResponse

router = APIRouter(tags=["retrieval"])


@router.post("/v1/resolve", response_model=ResolveResponse, responses=ERRORS)
async def resolve(body: ResolveBody, who: Caller, svc: Svc, reads: Reads) -> Response:
    """Re-check a citation now: ``unavailable`` (unknown, or not readable by this caller: the
    same answer in the same time), ``source_changed`` or ``quote_mismatch``. A live citation is
    looked up again as this caller: ``ok`` when the value is unchanged, ``source_changed`` (the
    current value in ``detail``), ``unavailable`` when the caller may not use the tool or it
    does not answer."""
    cited = body.root
    if isinstance(cited, Citation) and len(cited.quote) > svc.max_quote_chars:  # the OpenAPI bound
        raise RequestValidationError([{
            "loc": ("body", "quote"), "type": "string_too_long",
            "msg": f"String should have at most {svc.max_quote_chars} characters"}])

    def check() -> dict[str, Any]:
        with svc.pool.handle() as kb:
            return _operations.resolve(kb, who.actor, body, session=reads)

    started = time.perf_counter()
    if isinstance(cited, LiveCitation) and svc.tools is not None:
        # Looked up again without a store handle or a request thread held (as an answer's).
        data = cited.model_dump()
        again = svc.tools.resolving(who.actor, data)
        if not isinstance(again, Resolution):
            [now] = await svc.tools.start([again]).wait_async()
            again = compare(now, data)
        result = again.as_dict()
    else:
        result = await run_in_threadpool(check)
    if result["reason"] == "unavailable":
        await uniform_denial(started)
    return JSONResponse(result)
