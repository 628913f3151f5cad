"""Re-checking a citation against the store as it is now.

The checks run in a fixed order and the first failure is the reason, so a client can act on it:
``unavailable`` (unknown document, or the actor may no longer read it: the two are deliberately
indistinguishable), ``source_changed`` (the document has another version or fingerprint now;
``matched_version`` says when the quote still matches the superseded version kept in history),
``quote_mismatch`` (same version, but the locator does not hold exactly that quote).

Before any of that, the citation's shape is checked (``CitationError``): something that is not
a citation at all (a search result, a document, fields of the wrong JSON type) is an input
error, never an answer about a document. The shape check reads nothing from the store, so it
says nothing about which documents exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from .model import CITATION_REQUIRED, Actor, Citation, CitationError, Resolution, can_access, check_unicode
from .store import ReadView

__all__ = ["check_citation", "resolve_citation"]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _quote_in(text: str, citation: Mapping[str, Any]) -> bool:
    quote, start, end = citation.get("quote"), citation.get("start"), citation.get("end")
    if not isinstance(quote, str) or not quote:
        return False
    if _is_int(start) and _is_int(end):
        return 0 <= start <= end <= len(text) and text[start:end] == quote
    return quote in text


def _json_type(annotation: str) -> str:
    """The JSON type a ``Citation`` field's annotation asks for, in words."""
    if annotation.startswith("int"):
        return "an integer"
    return "a list of strings" if annotation.startswith("tuple") else "a string"


_TYPES = {f.name: _json_type(str(f.type)) for f in fields(Citation)}
#: What identifies a cited passage, with the JSON type each must have (``Citation``'s fields).
_REQUIRED = {name: _TYPES[name] for name in CITATION_REQUIRED}
#: Optional locator and display fields: absent, null, or of this type.
_OPTIONAL = {name: kind for name, kind in _TYPES.items() if name not in _REQUIRED}


def _has_type(value: Any, kind: str) -> bool:
    if kind == "an integer":
        return _is_int(value)
    if kind == "a list of strings":
        return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    return isinstance(value, str)


def check_citation(citation: object) -> Mapping[str, Any]:
    """``citation`` if it has a citation's shape (a hit's or an answer's extra fields may come
    along); else ``CitationError`` saying what is wrong."""
    if not isinstance(citation, Mapping):
        raise CitationError(f"this is not a citation: a citation is a JSON object, got "
                            f"{type(citation).__name__}")
    missing = [k for k in _REQUIRED if k not in citation]
    if missing:
        hint = ("; a search result holds citations in its hits: pass one hit"
                if "hits" in citation else "")
        raise CitationError(f"this is not a citation: {', '.join(missing)} "
                            f"{'is' if len(missing) == 1 else 'are'} missing (a citation has "
                            f"{', '.join(_REQUIRED)}){hint}")
    for key, kind in _REQUIRED.items():
        if not _has_type(citation[key], kind):
            raise CitationError(f"this is not a citation: {key} must be {kind}, got "
                                f"{type(citation[key]).__name__}")
        if isinstance(citation[key], str):
            check_unicode(citation[key], f"this is not a citation: its {key}", CitationError)
    for key, kind in _OPTIONAL.items():
        if citation.get(key) is not None and not _has_type(citation[key], kind):
            raise CitationError(f"this is not a citation: {key} must be {kind} or null, got "
                                f"{type(citation[key]).__name__}")
    return citation


def _changed(current_version: str, cited_version: str, matched: str | None) -> str:
    """What changed, in words that fit the case: a new version, or new text under the same
    version name."""
    if cited_version == current_version:
        detail = (f"the text of version {current_version!r} changed since it was cited (same "
                  "version name, another fingerprint)")
        if matched is not None:
            detail += "; the quote matched the earlier text of that version, kept in the history"
        return detail
    detail = f"the document is now version {current_version!r}, the citation is of version {cited_version!r}"
    if matched is not None:
        detail += f"; the quote matched the superseded version {matched!r}"
    return detail


def resolve_citation(view: ReadView, actor: Actor, citation: object) -> Resolution:
    citation = check_citation(citation)
    doc = view.document(actor.tenant, citation["document_id"])
    if doc is None or not can_access(actor, doc.tenant, doc.groups, doc.visibility):
        return Resolution(False, "unavailable", "the document is not available to you")
    if citation["version"] != doc.version or citation["content_sha256"] != doc.content_sha256:
        matched = None
        for h in view.history(doc.tenant, doc.id):
            if (h.version == citation["version"]
                    and h.content_sha256 == citation["content_sha256"]
                    and _quote_in(h.text, citation)):
                matched = h.version
                break
        return Resolution(False, "source_changed", _changed(doc.version, citation["version"], matched),
                          doc.version, matched)
    number = citation["passage"]
    passage = view.passage(doc.dkey, number)
    if passage is None:
        return Resolution(False, "quote_mismatch", f"version {doc.version!r} has no passage {number}",
                          doc.version)
    if citation["quote"] != passage.text:
        return Resolution(False, "quote_mismatch",
                          f"the quote is not the text of passage {number}", doc.version)
    for key in ("start", "end"):
        if citation.get(key) is not None and citation[key] != getattr(passage, key):
            return Resolution(False, "quote_mismatch",
                              f"the {key} offset does not locate passage {number}", doc.version)
    return Resolution(True, None, "", doc.version)
