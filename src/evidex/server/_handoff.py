"""``POST /v1/handoff``: a declined question goes to a person on the configured route.

The body carries the question, the conversation so far in the asker's browser tab (their own
words, and evidex's replies by status and trace id only) and the trace ids; never passage text.
Each key may send ``answer.handoff.per_key_per_hour`` handoffs an hour.

A trace id names one answer to one caller: it is a random part and a MAC of it with the
caller's tenant and key (``issue_trace_id``), so a handoff may name only its own caller's
answers (another key's, another tenant's or a made-up id is refused, 422), and the person
reading it never looks up a trace the asker did not get. The MAC key is ``EVIDEX_TRACE_KEY``
(``evidex serve`` sets one for all its workers), else one per process. The same handoff sent
again by the same key within ``RESEND_WINDOW_S`` returns the first one's reference, unsent.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections import OrderedDict, defaultdict, deque
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..model import NotifyError
from ..notify import HandoffRoute, SmtpSettings, clean_text, send_handoff
from ._deps import ERRORS, Caller, Svc
from ._feedback import record_handoff
from ._identity import Principal
from ._schemas import Problem

router = APIRouter(tags=["retrieval"])
_TRACE = r"^[0-9a-f]{32}$"
#: Names the environment variable holding the key trace ids are signed with.
TRACE_KEY_ENV = "EVIDEX_TRACE_KEY"
#: A handoff repeated by the same key within this many seconds is the first one again.
RESEND_WINDOW_S = 600.0
_REMEMBERED = 10_000


@functools.cache
def _trace_key() -> bytes:
    return (os.environ.get(TRACE_KEY_ENV) or secrets.token_hex(32)).encode()


def _mac(who: Principal, nonce: str) -> str:
    signed = f"{who.actor.tenant}\x00{who.label}\x00{nonce}".encode()
    return hmac.new(_trace_key(), signed, hashlib.sha256).hexdigest()[:16]


def issue_trace_id(who: Principal) -> str:
    """A new trace id (32 hex digits) that only ``who`` can name in a handoff."""
    nonce = secrets.token_hex(8)
    return nonce + _mac(who, nonce)


def owns_trace_id(who: Principal, trace_id: str) -> bool:
    return hmac.compare_digest(trace_id[16:], _mac(who, trace_id[:16]))


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

    @field_validator("question")
    @classmethod
    def _words(cls, value: str) -> str:
        if not clean_text(value).strip():
            raise ValueError("the question has no words")
        return value

    def named_traces(self) -> list[str]:
        return [*self.trace_ids, *(t.trace_id for t in self.conversation if t.trace_id)]

    def digest(self) -> str:
        """What makes two handoffs the same one."""
        return hashlib.sha256(json.dumps([self.question, self.turns(), self.trace_ids]).encode()).hexdigest()

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
        #: (key label, handoff digest) -> (when, the reply), the latest ``_REMEMBERED``.
        self._recent: OrderedDict[tuple[str, str], tuple[float, dict[str, Any]]] = OrderedDict()

    def earlier(self, label: str, body: HandoffRequest, now: float | None = None) -> dict[str, Any] | None:
        """The reply to the same handoff from the same key within ``RESEND_WINDOW_S``."""
        now = time.monotonic() if now is None else now
        with self._lock:
            hit = self._recent.get((label, body.digest()))
        return hit[1] if hit is not None and now - hit[0] < RESEND_WINDOW_S else None

    def remember(self, label: str, body: HandoffRequest, reply: dict[str, Any]) -> None:
        with self._lock:
            self._recent[(label, body.digest())] = (time.monotonic(), reply)
            while len(self._recent) > _REMEMBERED:
                self._recent.popitem(last=False)

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
    foreign = [t for t in body.named_traces() if not owns_trace_id(who, t)]
    if foreign:
        raise HTTPException(422, f"{len(foreign)} trace id(s) name no answer given to this key")
    sent = svc.handoff.earlier(who.label, body)
    if sent is not None:  # the same handoff again (a double click, a resend): one person, once
        return sent
    wait = svc.handoff.wait(who.label)
    if wait:
        return JSONResponse({"detail": "too many handoffs from this key; try again later"},
                            status_code=429, headers={"Retry-After": str(int(wait) + 1)})
    try:
        reply = svc.handoff(who, body)
    except NotifyError as exc:  # the route is down: the asker should try again or call
        return JSONResponse({"detail": str(exc)}, status_code=502)
    svc.handoff.remember(who.label, body, reply)
    with svc.pool.handle() as kb:  # the operators' handoff queue (``_ops``)
        record_handoff(kb, who, body.question, body.named_traces(), reply)
    return reply
