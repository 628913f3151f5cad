"""Re-checking a citation against the store as it is now.

The checks run in a fixed order and the first failure is the reason, so a client can act on it:
``unavailable`` (unknown document, or the actor may no longer read it: the two are deliberately
indistinguishable), ``source_changed`` (the document has another version or fingerprint now;
``matched_version`` says when the quote still matches the superseded version kept in history),
``quote_mismatch`` (same version, but the locator does not hold exactly that quote).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .model import Actor, CitationError, Resolution, can_access
from .store import ReadView

__all__ = ["resolve_citation"]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _quote_in(text: str, citation: Mapping[str, Any]) -> bool:
    quote, start, end = citation.get("quote"), citation.get("start"), citation.get("end")
    if not isinstance(quote, str) or not quote:
        return False
    if _is_int(start) and _is_int(end):
        return 0 <= start <= end <= len(text) and text[start:end] == quote
    return quote in text


def resolve_citation(view: ReadView, actor: Actor, citation: object) -> Resolution:
    if not isinstance(citation, Mapping):
        raise CitationError(f"a citation must be a JSON object, got {type(citation).__name__}")
    doc_id = citation.get("document_id")
    doc = view.document(actor.tenant, doc_id) if isinstance(doc_id, str) else None
    if doc is None or not can_access(actor, doc.tenant, doc.groups, doc.visibility):
        return Resolution(False, "unavailable", "the document is not available to you")
    if citation.get("version") != doc.version or citation.get("content_sha256") != doc.content_sha256:
        matched = None
        for h in view.history(doc.tenant, doc.id):
            if (h.version == citation.get("version")
                    and h.content_sha256 == citation.get("content_sha256")
                    and _quote_in(h.text, citation)):
                matched = h.version
                break
        detail = f"the document is now version {doc.version!r}"
        if matched is not None:
            detail += f"; the quote matched the superseded version {matched!r}"
        return Resolution(False, "source_changed", detail, doc.version, matched)
    number = citation.get("passage")
    if not _is_int(number):
        return Resolution(False, "quote_mismatch", "the passage locator is not an integer",
                          doc.version)
    passage = view.passage(doc.dkey, number)
    if passage is None:
        return Resolution(False, "quote_mismatch", f"version {doc.version!r} has no passage {number}",
                          doc.version)
    if citation.get("quote") != passage.text:
        return Resolution(False, "quote_mismatch",
                          f"the quote is not the text of passage {number}", doc.version)
    for key in ("start", "end"):
        if key in citation and citation[key] is not None and (
            not _is_int(citation[key]) or citation[key] != getattr(passage, key)
        ):
            return Resolution(False, "quote_mismatch",
                              f"the {key} offset does not locate passage {number}", doc.version)
    return Resolution(True, None, "", doc.version)
