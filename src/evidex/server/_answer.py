"""``POST /v1/answer``."""

from __future__ import annotations

import uuid

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from . import _operations
from ._deps import ERRORS, Caller, Svc
from ._logging import log_event
from ._schemas import AnswerRequest, AnswerResponse

router = APIRouter(tags=["retrieval"])


@router.post("/v1/answer", response_model=AnswerResponse, responses=ERRORS)
def answer(body: AnswerRequest, who: Caller, svc: Svc) -> Response:
    """An answer whose every sentence cites a passage the caller may read, or a decline
    with its reason and the handoff."""
    with svc.pool.handle() as kb:
        out = _operations.answer(kb, who.actor, body, svc.answer_settings, svc.generator)
    # The id a handoff (and an operator reading the log) names this answer by.
    out["trace_id"] = uuid.uuid4().hex
    # The button needs a route and an answer that offers a person (answer.when_no_evidence:
    # say_so declines without offering one).
    out["handoff_available"] = (out["status"] == "declined" and svc.handoff is not None
                                and bool(out.get("handoff")))
    log_event("answer", trace_id=out["trace_id"], status=out["status"], key=who.label,
              reason=out.get("reason"))
    return JSONResponse(out)
