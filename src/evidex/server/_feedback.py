"""``POST /v1/feedback``: "helpful" or "not helpful" on one of the caller's own answers, with an
optional note; ``GET /v1/feedback``: an admin key's tenant's feedback with the answers it rates.

Every answer the service gives is recorded by its trace id (``record_answer``, called by
``POST /v1/answer`` and the MCP ``answer`` tool): the question, status, reason and the cited
passages by id, version and fingerprint, never their text (``store.AnswerRecord``). Feedback
names that trace id; only the key the answer was given to may rate it (another key's, another
tenant's or an unknown trace id is the same 404), so a rating always belongs to its asker. A
key may give ``PER_KEY_PER_HOUR`` ratings an hour (429 past it); rating an answer again
replaces the earlier rating. ``evidex feedback export`` turns the feedback into draft
evaluation cases (``evaluation.feedback_cases``).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from ..knowledge import Knowledge
from ..store import AnswerRecord, FeedbackRecord, HandoffRecord, since_stamp
from ._deps import ADMIN_ERRORS, ERRORS, Admin, Caller, Svc
from ._identity import Principal
from ._logging import log_failure
from ._schemas import Problem

__all__ = ["LIMITER", "MAX_NOTE_CHARS", "PER_KEY_PER_HOUR", "FeedbackLimiter", "FeedbackRequest",
           "UnknownAnswer", "give_feedback", "record_answer", "record_handoff", "router"]

router = APIRouter(tags=["feedback"])
#: The longest note kept (a sentence or two for whoever labels the case).
MAX_NOTE_CHARS = 1000
#: Ratings a key may give an hour (per worker process, like the other rate limits).
PER_KEY_PER_HOUR = 120
_TRACE = r"^[0-9a-f]{32}$"


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": [
        {"trace_id": "0" * 32, "rating": "not_helpful", "note": "It quoted last year's policy."}]})

    trace_id: str = Field(pattern=_TRACE, description="the answer's trace_id, as POST /v1/answer returned it")
    rating: Literal["helpful", "not_helpful"]
    note: str | None = Field(default=None, max_length=MAX_NOTE_CHARS,
                             description=f"optional, at most {MAX_NOTE_CHARS} characters")


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


class FeedbackLimiter:
    """At most ``per_hour`` ratings per key label in any hour."""

    def __init__(self, per_hour: int = PER_KEY_PER_HOUR) -> None:
        self.per_hour = per_hour
        self._given: defaultdict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def wait(self, label: str, now: float | None = None) -> float:
        """0 (and one rating counted) when ``label`` may rate now, else seconds until it may."""
        now = time.monotonic() if now is None else now
        with self._lock:
            given = self._given[label]
            while given and now - given[0] >= 3600:
                given.popleft()
            if len(given) >= self.per_hour:
                return 3600 - (now - given[0])
            given.append(now)
            return 0.0


#: The ratings given by each key in this process (HTTP and MCP alike).
LIMITER = FeedbackLimiter()


def _actor_of(who: Principal) -> dict[str, list[str]]:
    return {"groups": sorted(who.actor.groups), "visibilities": sorted(who.actor.visibilities)}


def record_answer(kb: Knowledge, who: Principal, question: str, trace_id: str,
                  reply: Mapping[str, Any]) -> None:
    """Record an answer just given to ``who`` by its trace id: ids and fingerprints of what it
    cited (passages only; a live lookup is not a passage and stays out), never text. A store
    that cannot take the record is logged (``answer_record_failed``), never the answer's end."""
    cited = tuple({"document_id": c["document_id"], "version": c["version"], "passage": c["passage"],
                   "content_sha256": c["content_sha256"]}
                  for c in reply.get("citations") or () if c.get("kind", "passage") == "passage")
    related = tuple(dict.fromkeys(r["document_id"] for r in reply.get("related") or ()))
    try:
        kb.for_tenant(who.actor.tenant).store.record_answer(AnswerRecord(
            tenant=who.actor.tenant, trace_id=trace_id, caller=who.label, question=question,
            status=str(reply.get("status")), reason=reply.get("reason"), asked_at=_now(),
            actor=_actor_of(who), cited=cited, related=related))
    except Exception as exc:
        # The answer is served all the same (a PostgreSQL primary that is down stops writes,
        # not reads); feedback on it then gets the unknown-trace 404, and the log says why.
        log_failure("answer_record_failed", exc, trace_id=trace_id)


def record_handoff(kb: Knowledge, who: Principal, question: str, trace_ids: list[str],
                   reply: Mapping[str, Any]) -> None:
    """Record a handoff the route took (or did not: ``delivered`` says whether any did)."""
    delivered = any(d.get("ok") for d in reply.get("deliveries") or ())
    try:
        kb.for_tenant(who.actor.tenant).store.record_handoff(HandoffRecord(
            tenant=who.actor.tenant, reference=str(reply.get("reference", "")), caller=who.label,
            question=question, delivered=delivered, sent_at=_now(), trace_ids=tuple(trace_ids)))
    except Exception as exc:  # the person has the handoff: the asker must not send it again
        log_failure("handoff_record_failed", exc, reference=str(reply.get("reference", "")))


class UnknownAnswer(LookupError):
    """No answer with this trace id was given to this key."""


def give_feedback(kb: Knowledge, who: Principal, body: FeedbackRequest) -> dict[str, Any]:
    """Record ``who``'s rating of its own answer ``body.trace_id`` (``UnknownAnswer`` otherwise)."""
    store = kb.for_tenant(who.actor.tenant).store
    found = store.answer_records(who.actor.tenant, trace_id=body.trace_id, limit=1)
    if not found or found[0].caller != who.label:
        raise UnknownAnswer(body.trace_id)
    note = body.note.strip() if body.note else None
    store.record_feedback(FeedbackRecord(who.actor.tenant, body.trace_id, who.label, body.rating,
                                         note or None, _now()))
    return {"trace_id": body.trace_id, "rating": body.rating, "recorded": True}


def _limited(who: Principal) -> Response | None:
    wait = LIMITER.wait(who.label)
    if wait:
        return JSONResponse({"detail": "too much feedback from this key; try again later"},
                            status_code=429, headers={"Retry-After": str(int(wait) + 1)})
    return None


@router.post("/v1/feedback", responses={
    **ERRORS, 404: {"model": Problem, "description": "no answer with this trace id was given to this key"}})
def feedback(body: FeedbackRequest, who: Caller, svc: Svc) -> Any:
    """Rate one of this key's answers: helpful or not_helpful, with an optional note."""
    refused = _limited(who)
    if refused is not None:
        return refused
    try:
        with svc.pool.handle() as kb:
            out = give_feedback(kb, who, body)
    except UnknownAnswer:
        raise HTTPException(404, "no answer with this trace id was given to this key") from None
    if svc.metrics is not None:
        svc.metrics.rated(who, body.rating)
    return out


@router.get("/v1/feedback", responses=ADMIN_ERRORS)
def list_feedback(who: Admin, svc: Svc,
                  since: Annotated[str | None, Query(max_length=40, description="ISO 8601 date or time "
                                                     "(UTC), e.g. 2026-12-06")] = None,
                  limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict[str, Any]:
    """The admin key's tenant's feedback, newest first, each with the answer it rates (question,
    status, reason, cited passages by id and version)."""
    tenant = who.actor.tenant
    with svc.pool.handle() as kb:
        store = kb.for_tenant(tenant).store
        given = store.feedback(tenant, since=since_stamp(since), limit=limit)
        rated = {f.trace_id: store.answer_records(tenant, trace_id=f.trace_id, limit=1) for f in given}
    return {"feedback": [{**f.as_dict(), "answer": rated[f.trace_id][0].as_dict() if rated[f.trace_id]
                          else None} for f in given]}
