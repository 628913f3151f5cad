"""A handoff: a declined question, with the conversation so far, sent to a person.

What is sent is what the asker wrote and the trace ids of evidex's replies, never passage text:
the person on the other end may not be allowed to read what the asker could, and looks the
traces up with their own access.

The asker's words are untrusted text in a message a person reads as evidex's: control and
format characters (NUL, escape sequences, DEL, bidirectional overrides) are removed, the
subject is one line, and in the body every line the asker wrote is quoted (``> ``), so no line
of theirs can look like one of evidex's own ("Handoff HO-...", "Trace ids: ...").
"""

from __future__ import annotations

import secrets
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model import EvidexError, NotifyError
from ._routes import HandoffRoute, SmtpSettings
from ._send import Delivery, Message, deliver

__all__ = ["Handoff", "clean_text", "handoff_message", "send_handoff"]

#: What a conversation turn may carry: the asker's own words, and evidex's replies by status
#: and trace id only (their text quotes passages).
_TURN_KEYS = ("role", "text", "status", "trace_id")
#: Longest question shown in a subject line.
_SUBJECT_CHARS = 80
_LINE_BREAKS = {"\r\n": "\n", "\r": "\n", "\u2028": "\n", "\u2029": "\n", "\x85": "\n",
                "\v": "\n", "\f": "\n"}


def clean_text(text: str) -> str:
    """``text`` with line breaks as ``\\n`` and every other control, format, surrogate or
    unassigned character removed (tabs become spaces)."""
    for old, new in _LINE_BREAKS.items():
        text = text.replace(old, new)
    text = text.replace("\t", " ")
    return "".join(ch for ch in text if ch == "\n" or not unicodedata.category(ch).startswith("C"))


def _quoted(text: str, indent: str = "") -> list[str]:
    return [f"{indent}> {line}".rstrip() for line in clean_text(text).split("\n")]


@dataclass(frozen=True)
class Handoff:
    reference: str
    deliveries: list[Delivery]

    def as_dict(self) -> dict[str, Any]:
        return {"reference": self.reference, "deliveries": [
            {"route": d.route, "ok": d.ok, "attempts": d.attempts} for d in self.deliveries]}


def handoff_message(reference: str, *, tenant: str, caller: str, question: str,
                    conversation: Sequence[Mapping[str, str]], trace_ids: Sequence[str]) -> Message:
    """The e-mail and the webhook body of one handoff, from sanitised text."""
    turns = [{k: clean_text(str(v)) for k, v in t.items() if k in _TURN_KEYS and v} for t in conversation]
    asked = clean_text(question).strip("\n")
    lines = [f"Handoff {reference} (tenant {clean_text(tenant)}, from {clean_text(caller)})", "",
             "Question, as the asker wrote it:", *_quoted(asked), ""]
    if turns:
        lines.append("Conversation so far:")
        for t in turns:
            lines.append("  " + " ".join(f"{k}={t[k]}" for k in ("role", "status", "trace_id") if k in t))
            if "text" in t:
                lines += _quoted(t["text"], "    ")
    if trace_ids:
        lines += ["", "Trace ids: " + ", ".join(trace_ids)]
    payload = {"type": "evidex.handoff", "reference": reference, "tenant": tenant, "caller": caller,
               "question": asked, "conversation": turns, "trace_ids": list(trace_ids)}
    subject = f"evidex handoff {reference}: {' '.join(asked.split())[:_SUBJECT_CHARS]}"
    return Message(subject, "\n".join(lines) + "\n", payload)


def send_handoff(route: HandoffRoute, smtp: SmtpSettings | None, *, tenant: str, caller: str,
                 question: str, conversation: Sequence[Mapping[str, str]], trace_ids: Sequence[str],
                 env: Mapping[str, str] | None = None, attempts: int = 3, pause: float = 0.5) -> Handoff:
    """Send the handoff on every target of ``route``; returns its reference when at least one
    target took it, else raises ``NotifyError`` naming why each failed."""
    if not clean_text(question).strip():
        raise EvidexError("the question of a handoff has no words")
    reference = "HO-" + secrets.token_hex(6).upper()
    message = handoff_message(reference, tenant=tenant, caller=caller, question=question,
                              conversation=conversation, trace_ids=trace_ids)
    done = deliver(caller, route, message, smtp=smtp, env=env, attempts=attempts, pause=pause)
    if not any(d.ok for d in done):
        raise NotifyError("the handoff could not be delivered: "
                          + "; ".join(f"{d.route}: {d.error}" for d in done))
    return Handoff(reference, done)
