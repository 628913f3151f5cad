"""``POST /v1/answer``.

The question's live lookups are started and waited for before a store handle is taken, and
the wait suspends this request's task rather than holding a thread: a tool service that
answers slowly (or never) holds neither the worker's few store handles nor its request
threads, so every other request of the worker goes on as before.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from ..tools import LiveSource
from . import _operations
from ._deps import ERRORS, Caller, Reads, Svc
from ._feedback import record_answer
from ._handoff import issue_trace_id
from ._logging import log_event
from ._schemas import AnswerRequest, AnswerResponse

router = APIRouter(tags=["retrieval"])


@router.post("/v1/answer", response_model=AnswerResponse, responses=ERRORS)
async def answer(body: AnswerRequest, who: Caller, svc: Svc, reads: Reads) -> Response:
    """An answer whose every sentence cites a passage the caller may read, or a decline
    with its reason and the handoff."""
    live: list[LiveSource] | None = None
    if svc.tools is not None:
        pending = svc.tools.start(svc.tools.asked(who.actor, body.question))
        live = await pending.wait_async()
        if svc.metrics is not None:
            svc.metrics.looked_up(who, live)

    # The id a handoff, feedback (and an operator reading the log) name this answer by; only
    # this caller's key can name it.
    trace_id = issue_trace_id(who)

    def run() -> dict[str, Any]:
        with svc.pool.handle() as kb:
            reply = _operations.answer(kb, who.actor, body, svc.answer_settings, svc.generator,
                                       admin=who.admin, live=live, session=reads)
            record_answer(kb, who, body.question, trace_id, reply)
            return reply

    out = await run_in_threadpool(run)
    out["trace_id"] = trace_id
    # The button needs a route and an answer that offers a person (answer.when_no_evidence:
    # say_so declines without offering one).
    out["handoff_available"] = (out["status"] == "declined" and svc.handoff is not None
                                and bool(out.get("handoff")))
    if svc.metrics is not None:
        svc.metrics.answered(who, out)
    log_event("answer", trace_id=out["trace_id"], status=out["status"], key=who.label,
              reason=out.get("reason"))
    return JSONResponse(out)
