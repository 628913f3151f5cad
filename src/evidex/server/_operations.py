"""The three read operations as the HTTP routes and the MCP tools both run them.

Each takes a validated request model and the caller's actor (from a credential, never from the
request) and returns the JSON-ready reply, so the two front ends cannot drift apart. A
document's ``file://`` source URL (a files source without ``base_url``) is a path on the
server: only admin keys see it; everyone else sees the document id and title.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..answer import AnswerSettings
from ..knowledge import Knowledge
from ..model import Actor
from ..retrieve import Fusion
from ..store import ReadSession
from ..tools import LiveSource
from ._schemas import AnswerRequest, ResolveBody, SearchRequest

__all__ = ["answer", "resolve", "search", "without_server_paths"]


def without_server_paths(value: Any) -> Any:
    """``value`` (JSON-ready) with every ``source_url`` that names a server path (``file:``)
    set to None."""
    if isinstance(value, dict):
        return {k: None if k == "source_url" and isinstance(v, str) and v[:5].lower() == "file:"
                else without_server_paths(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_server_paths(v) for v in value]
    return value


def search(kb: Knowledge, actor: Actor, body: SearchRequest, fusion: Fusion, *,
           admin: bool = False, session: ReadSession | None = None) -> dict[str, Any]:
    """``fusion`` is the configured one; the request's fusion fields override it. ``session``:
    the request's (MCP has none: one caller, reading through its own handle)."""
    hits = kb.search(actor, body.query, limit=body.top_k, match=body.match, mode=body.mode,
                     filters=body.filters.model_dump() if body.filters else None,
                     max_per_document=body.max_per_document, explain=body.explain,
                     fusion=body.fusion_over(fusion), evidence=body.evidence, session=session)
    out = {"hits": [h.as_dict() for h in hits], "evidence": hits.evidence, "fallback": hits.fallback}
    return out if admin else without_server_paths(out)  # type: ignore[no-any-return]


def answer(kb: Knowledge, actor: Actor, body: AnswerRequest, settings: AnswerSettings | None,
           generator: str, *, admin: bool = False,
           live: Sequence[LiveSource] | None = None, session: ReadSession | None = None) -> dict[str, Any]:
    """``live``: the question's lookups, made before the handle was taken (see ``_answer``)."""
    out = kb.answer(actor, body.question, generator=generator,
                    filters=body.filters.model_dump() if body.filters else None,
                    settings=settings, live=live, session=session).as_dict()
    return out if admin else without_server_paths(out)  # type: ignore[no-any-return]


def resolve(kb: Knowledge, actor: Actor, body: ResolveBody, *,
            session: ReadSession | None = None) -> dict[str, Any]:
    return kb.resolve(actor, body.root.model_dump(), session=session).as_dict()
