"""Live lookups in an answer: numbered sources before the passages, quoted verbatim, or an
honest decline.

A lookup's rendered text is the answer's first sentences, each with its [n] marker; the
passages' answer (numbered after the lookups) follows when the passages support one. When any
lookup the question asked for failed, was flagged, or needs a claim the caller lacks, the whole
answer is declined: never a stale value, never passages about the same thing standing in for
live data. Lookups are not re-resolved at release: they were made for this answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..tools import LiveSource
from ._contract import check_output
from ._types import Answer, AnswerSettings

__all__ = ["LIVE_DECLINE_TEXT", "join_live", "live_gate"]

#: What a declined answer says when a lookup could not be used, by reason.
LIVE_DECLINE_TEXT = {
    "tool_unavailable": "I can't check that right now: the live lookup it needs did not give a "
                        "usable answer.",
    "tool_needs_sign_in": "I can't look that up for you: the lookup needs a signed-in customer.",
}


def live_gate(found: Sequence[LiveSource], settings: AnswerSettings) -> Answer | None:
    """The declined answer when a lookup in ``found`` cannot be used (failed, refused, needs a
    claim, or its text breaks the output contract); None when every one can."""
    bad = [s for s in found if not s.ok]
    if bad:
        reason = ("tool_needs_sign_in" if all(s.status == "needs_claim" for s in bad)
                  else "tool_unavailable")
        return _decline(found, settings, reason, "; ".join(f"{s.tool}: {s.detail}" for s in bad))
    # A lookup's text is the system's data, not ours: it meets the same output contract as any
    # answer (no HTML, no links off the allowlist, no stray [n] markers) or is not released.
    broken = [f"{s.tool}: its text breaks the output contract ({'; '.join(problems)})"
              for n, s in enumerate(found, start=1)
              if (problems := check_output({"answer": f"{s.quote} [{n}]", "citations": [n]}, [n],
                                           settings.link_allowlist))]
    if broken:
        return _decline(found, settings, "tool_unavailable", "; ".join(broken))
    return None


def join_live(found: Sequence[LiveSource], passages: Answer) -> Answer:
    """The answer for the lookups ``found`` (which passed ``live_gate``) followed by the
    passages' answer, numbered from ``len(found) + 1``; the lookups alone when the passages
    declined."""
    numbered = list(enumerate(found, start=1))
    text = " ".join(f"{s.quote} [{n}]" for n, s in numbered)
    citations = [{"n": n, **(s.citation or {})} for n, s in numbered]
    trace = passages.trace
    if trace is not None:
        trace["live"] = [s.trace() for s in found]
    if passages.status == "answered":
        return Answer("answered", f"{text} {passages.text}", citations + passages.citations,
                      None, None, trace)
    if trace is not None:
        trace["passages_declined"] = passages.reason
    return Answer("answered", text, citations, None, None, trace)


def _decline(found: Sequence[LiveSource], settings: AnswerSettings, reason: str,
             detail: str) -> Answer:
    trace = {"live": [s.trace() for s in found]} if settings.trace != "off" else None
    return Answer("declined", LIVE_DECLINE_TEXT[reason], [], reason, settings.handoff or None,
                  trace, detail)
