"""A scanner for instruction-like text inside passages (English and German).

This is a filter, not a guarantee. It flags passages that look like attempts to steer a model
(override its rules, speak as the system or the assistant, tell an AI what to answer, ask to
reveal or send data, call a tool or a URL, or hide text) so that answers keep them out of model
context and show them as untrusted. Nothing depends on it for security: a passage, flagged or
not, never grants a permission or changes a rule, because access is decided by the actor alone
and the model is given no tools.

Matching runs on normalised text (NFKC, look-alike letters folded to Latin, invisible characters
dropped, spaced-out letters and words broken over lines joined: `_scan_views`), against rules
grouped by family (`_scan_steer`, `_scan_leak`). The families are the flag names, in this order:

- ``override``: ignore / forget / stop following previous instructions, "from now on answer only".
- ``role_claim``: role markers and chat-template tokens (``SYSTEM:``, ``### System:``,
  ``<|im_start|>``, ``[INST]``, ``Assistant:``), "you are now ...", "I am your developer".
- ``exfiltration``: reveal or send prompts, secrets, credentials or other people's data;
  Markdown images and links whose URL carries data to be filled in.
- ``tool_or_url_call``: requests to call a tool or function, to fetch a URL, to send data to a URL.
- ``hidden_text``: zero-width and other invisible characters, instructions in HTML comments,
  hidden or white-on-white elements.
- ``answer_steering``: text addressed to an AI about what to answer ("Note to AI assistants: ...",
  "The chatbot must always say ...").
"""

from __future__ import annotations

from ._scan_leak import EXFILTRATION, HIDDEN_TEXT, TOOL_CALL
from ._scan_steer import ANSWER_STEERING, OVERRIDE, ROLE_CLAIM
from ._scan_views import Rule, normalise

__all__ = ["DOCUMENT_FLAG", "FLAGS", "scan", "scan_document"]

FAMILIES: dict[str, list[Rule]] = {
    "override": OVERRIDE,
    "role_claim": ROLE_CLAIM,
    "exfiltration": EXFILTRATION,
    "tool_or_url_call": TOOL_CALL,
    "hidden_text": HIDDEN_TEXT,
    "answer_steering": ANSWER_STEERING,
}
FLAGS: tuple[str, ...] = tuple(FAMILIES)
#: The flag of a passage whose own text matched nothing but whose document holds a flagged
#: passage: the same author wrote both (a forum thread with an injected post, a page with a
#: hidden block), so its other passages are no more trustworthy and are never quoted either.
DOCUMENT_FLAG = "flagged_document"


def scan(text: str) -> tuple[str, ...]:
    """Names of the families whose rules match ``text``, in the fixed order of `FLAGS` (empty
    when none)."""
    return _scan(text, gated=True)


def _scan(text: str, gated: bool) -> tuple[str, ...]:
    """`scan`; ``gated=False`` runs every pattern (tests check that gates never change a result)."""
    v = normalise(text)
    return tuple(name for name, rules in FAMILIES.items() if any(r.hit(v, gated) for r in rules))


def scan_document(texts: list[str]) -> list[tuple[str, ...]]:
    """`scan` of each passage of one document; when any passage is flagged, every passage that
    is not gets `DOCUMENT_FLAG`."""
    flags = [scan(t) for t in texts]
    if any(flags):
        flags = [f or (DOCUMENT_FLAG,) for f in flags]
    return flags
