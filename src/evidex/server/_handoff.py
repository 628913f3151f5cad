"""``POST /v1/handoff``: a declined question goes to a person on the configured route.

The body carries the question, the conversation so far in the asker's browser tab (their own
words, and evidex's replies by status and trace id only) and the trace ids; never passage text.
Each key may send ``answer.handoff.per_key_per_hour`` handoffs an hour.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from ..model import NotifyError
from ..notify import HandoffRoute, SmtpSettings, send_handoff
from ._deps import ERRORS, Caller, Svc
from ._identity import Principal
from ._schemas import Problem

router = APIRouter(tags=["retrieval"])
_TRACE = r"^[0-9a-f]{32}$"


class HandoffTurn(BaseModel):
    """One turn: the asker's words (``role: user``, ``text``), or evidex's reply by its status
    and trace id (``role: evidex``; no text, which would quote passages)."""

    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "evidex"]
    text: str | None = Field(default=None, max_length=2000)
    status: Literal["answered", "declined"] | None = None
    trace_id: str | None = Field(default=None, pattern=_TRACE)


class HandoffRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=2000)
    conversation: list[HandoffTurn] = Field(default=[], max_length=50)
    #: Trace ids of evidex's replies (32 hex digits, as answers return them); anything else is
    #: refused, never passed on to the person or dropped unsaid.
    trace_ids: list[Annotated[str, Field(pattern=_TRACE)]] = Field(default=[], max_length=50)

    def turns(self) -> list[dict[str, str]]:
        return [{"role": t.role, "text": (t.text or "") if t.role == "user" else "",
                 "status": t.status or "", "trace_id": t.trace_id or ""} for t in self.conversation]


class HandoffResponse(BaseModel):
    reference: str
    deliveries: list[dict[str, Any]]


class HandoffSender:
    """Sends handoffs on the configured route, at most ``per_key_per_hour`` per key."""

    def __init__(self, route: HandoffRoute, smtp: SmtpSettings | None) -> None:
        self.route, self.smtp = route, smtp
        self._sent: defaultdict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def wait(self, label: str, now: float | None = None) -> float:
        """0 and counts one handoff when ``label`` may send now, else seconds until it may."""
        now = time.monotonic() if now is None else now
        with self._lock:
            sent = self._sent[label]
            while sent and now - sent[0] >= 3600:
                sent.popleft()
            if len(sent) >= self.route.per_key_per_hour:
                return 3600 - (now - sent[0])
            sent.append(now)
            return 0.0

    def __call__(self, who: Principal, body: HandoffRequest) -> dict[str, Any]:
        return send_handoff(self.route, self.smtp, tenant=who.actor.tenant, caller=who.label,
                            question=body.question, conversation=body.turns(),
                            trace_ids=body.trace_ids).as_dict()


@router.post("/v1/handoff", response_model=HandoffResponse, responses={
    **ERRORS, 404: {"model": Problem, "description": "this server has no handoff route"},
    502: {"model": Problem, "description": "the handoff route did not take the message"}})
def handoff(body: HandoffRequest, who: Caller, svc: Svc) -> Any:
    """Send the question and the conversation so far to a person; returns the reference."""
    if svc.handoff is None:  # this server has no handoff: the resource does not exist here
        raise HTTPException(404, "no handoff route is configured (answer.handoff)")
    wait = svc.handoff.wait(who.label)
    if wait:
        return JSONResponse({"detail": "too many handoffs from this key; try again later"},
                            status_code=429, headers={"Retry-After": str(int(wait) + 1)})
    try:
        return svc.handoff(who, body)
    except NotifyError as exc:  # the route is down: the asker should try again or call
        return JSONResponse({"detail": str(exc)}, status_code=502)
