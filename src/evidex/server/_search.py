"""``POST /v1/search``."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from . import _operations
from ._deps import ERRORS, Caller, Reads, Svc
from ._schemas import SearchRequest, SearchResponse

router = APIRouter(tags=["retrieval"])


@router.post("/v1/search", response_model=SearchResponse, responses=ERRORS)
def search(body: SearchRequest, who: Caller, svc: Svc, reads: Reads) -> Response:
    """Passages the caller may read, best first. Scores order one result list only."""
    with svc.pool.handle() as kb:
        out = _operations.search(kb, who.actor, body, svc.fusion, admin=who.admin, session=reads)
    if svc.metrics is not None:
        svc.metrics.searched(who, body.mode, out)
    return JSONResponse(out)
