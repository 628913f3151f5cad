"""``GET /v1/documents/{id}`` (a reader's view) and ``DELETE`` (an admin's erasure)."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from ..model import DocumentView
from ._deps import ADMIN_ERRORS, ERRORS, Admin, Caller, Reads, Svc, uniform_denial
from ._operations import without_server_paths
from ._schemas import DocumentResponse, Problem

router = APIRouter()


@router.get("/v1/documents/{document_id:path}", response_model=DocumentResponse,
            responses={**ERRORS, 404: {"model": Problem, "description": "no such document for you"}},
            tags=["retrieval"])
async def document(document_id: str, who: Caller, svc: Svc, reads: Reads) -> Response:
    """A document's metadata and its passages, when the caller may read it (404 otherwise:
    unknown and not readable are indistinguishable, in content and in timing)."""
    def read() -> DocumentView | None:
        with svc.pool.handle() as kb:
            return kb.document(who.actor, document_id, session=reads)

    started = time.perf_counter()
    doc = await run_in_threadpool(read)
    if doc is None:
        await uniform_denial(started)
        raise HTTPException(404, "no such document is available to you")
    return JSONResponse(doc.as_dict() if who.admin else without_server_paths(doc.as_dict()))


@router.delete("/v1/documents/{document_id:path}",
               responses={**ADMIN_ERRORS, 404: {"model": Problem, "description": "no such document"}},
               tags=["admin"])
def remove(document_id: str, who: Admin, svc: Svc, reads: Reads) -> dict[str, Any]:
    """Erase a document of the admin key's tenant with its passages and history."""
    with svc.pool.handle() as kb:
        if not kb.remove(who.actor.tenant, document_id, session=reads):
            raise HTTPException(404, "no such document in your tenant")
    return {"removed": True, "document_id": document_id}
