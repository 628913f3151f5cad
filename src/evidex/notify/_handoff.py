"""A handoff: a declined question, with the conversation so far, sent to a person.

What is sent is what the asker wrote and the trace ids of evidex's replies, never passage text:
the person on the other end may not be allowed to read what the asker could, and looks the
traces up with their own access.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..model import NotifyError
from ..routes import HandoffRoute, SmtpSettings
from ._send import Delivery, Message, deliver

__all__ = ["Handoff", "send_handoff"]

#: What a conversation turn may carry: the asker's own words, and evidex's replies by status
#: and trace id only (their text quotes passages).
_TURN_KEYS = ("role", "text", "status", "trace_id")


@dataclass(frozen=True)
class Handoff:
    reference: str
    deliveries: list[Delivery]

    def as_dict(self) -> dict[str, Any]:
        return {"reference": self.reference, "deliveries": [
            {"route": d.route, "ok": d.ok, "attempts": d.attempts} for d in self.deliveries]}


def send_handoff(route: HandoffRoute, smtp: SmtpSettings | None, *, tenant: str, caller: str,
                 question: str, conversation: Sequence[Mapping[str, str]], trace_ids: Sequence[str],
                 env: Mapping[str, str] | None = None, attempts: int = 3, pause: float = 0.5) -> Handoff:
    """Send the handoff on every target of ``route``; returns its reference when at least one
    target took it, else raises ``NotifyError`` naming why each failed."""
    reference = "HO-" + secrets.token_hex(6).upper()
    turns = [{k: str(v) for k, v in t.items() if k in _TURN_KEYS and v} for t in conversation]
    lines = [f"Handoff {reference} (tenant {tenant}, from {caller})", "", f"Question: {question}", ""]
    if turns:
        lines.append("Conversation so far:")
        lines += ["  " + " ".join(f"{k}={t[k]}" if k != "text" else repr(t[k]) for k in t) for t in turns]
    if trace_ids:
        lines += ["", "Trace ids: " + ", ".join(trace_ids)]
    payload = {"type": "evidex.handoff", "reference": reference, "tenant": tenant, "caller": caller,
               "question": question, "conversation": turns, "trace_ids": list(trace_ids),
               "sent_at": datetime.now(UTC).isoformat(timespec="seconds")}
    # A subject is one line: the question's line breaks (an asker may type several lines)
    # become spaces there; the body and the payload keep the question as written.
    subject = f"evidex handoff {reference}: {' '.join(question.split())[:80]}"
    message = Message(subject, "\n".join(lines) + "\n", payload)
    done = deliver(caller, route, message, smtp=smtp, env=env, attempts=attempts, pause=pause)
    if not any(d.ok for d in done):
        raise NotifyError("the handoff could not be delivered: "
                          + "; ".join(f"{d.route}: {d.error}" for d in done))
    return Handoff(reference, done)
