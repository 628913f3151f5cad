"""``POST /v1/answer``."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from . import _operations
from ._deps import ERRORS, Caller, Svc
from ._schemas import AnswerRequest, AnswerResponse

router = APIRouter(tags=["retrieval"])


@router.post("/v1/answer", response_model=AnswerResponse, responses=ERRORS)
def answer(body: AnswerRequest, who: Caller, svc: Svc) -> Response:
    """An answer whose every sentence cites a passage the caller may read, or a decline
    with its reason and the handoff."""
    with svc.pool.handle() as kb:
        return JSONResponse(_operations.answer(kb, who.actor, body, svc.answer_settings,
                                               svc.generator))
