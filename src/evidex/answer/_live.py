"""Live lookups in an answer: numbered sources before the passages, quoted verbatim, or an
honest decline.

A lookup's rendered text is the answer's first sentences, each with its [n] marker; the
passages' answer (numbered after the lookups) follows when the passages support one. When any
lookup the question asked for failed, was flagged, or needs a claim the caller lacks, the whole
answer is declined: never a stale value, never passages about the same thing standing in for
live data. Lookups are not re-resolved at release: they were made for this answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..tools import LiveSource
from ._contract import check_output
from ._types import Answer, AnswerSettings

__all__ = ["LIVE_DECLINE_TEXT", "answer_with_live"]

#: What a declined answer says when a lookup could not be used, by reason.
LIVE_DECLINE_TEXT = {
    "tool_unavailable": "I can't check that right now: the live lookup it needs did not give a "
                        "usable answer.",
    "tool_needs_sign_in": "I can't look that up for you: the lookup needs a signed-in customer.",
}


def answer_with_live(found: Sequence[LiveSource], from_passages: Callable[[int], Answer],
                     settings: AnswerSettings) -> Answer:
    """The answer for the lookups ``found`` and, numbered from ``len(found) + 1`` by
    ``from_passages(first_n)``, the passages."""
    live_trace: list[dict[str, Any]] = [s.trace() for s in found]

    def decline(reason: str, detail: str) -> Answer:
        trace = {"live": live_trace} if settings.trace != "off" else None
        return Answer("declined", LIVE_DECLINE_TEXT[reason], [], reason, settings.handoff or None,
                      trace, detail)

    bad = [s for s in found if not s.ok]
    if bad:
        reason = ("tool_needs_sign_in" if all(s.status == "needs_claim" for s in bad)
                  else "tool_unavailable")
        return decline(reason, "; ".join(f"{s.tool}: {s.detail}" for s in bad))
    numbered = list(enumerate(found, start=1))
    # A lookup's text is the system's data, not ours: it meets the same output contract as any
    # answer (no HTML, no links off the allowlist, no stray [n] markers) or is not released.
    broken = [f"{s.tool}: its text breaks the output contract ({'; '.join(problems)})"
              for n, s in numbered
              if (problems := check_output({"answer": f"{s.quote} [{n}]", "citations": [n]}, [n],
                                           settings.link_allowlist))]
    if broken:
        return decline("tool_unavailable", "; ".join(broken))
    text = " ".join(f"{s.quote} [{n}]" for n, s in numbered)
    citations = [{"n": n, **(s.citation or {})} for n, s in numbered]
    passages = from_passages(len(found) + 1)
    trace = passages.trace
    if trace is not None:
        trace["live"] = live_trace
    if passages.status == "answered":
        return Answer("answered", f"{text} {passages.text}", citations + passages.citations,
                      None, None, trace)
    if trace is not None:
        trace["passages_declined"] = passages.reason
    return Answer("answered", text, citations, None, None, trace)
