"""The three read operations as the HTTP routes and the MCP tools both run them.

Each takes a validated request model and the caller's actor (from a credential, never from the
request) and returns the JSON-ready reply, so the two front ends cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from ..answer import AnswerSettings
from ..kb import KnowledgeBase
from ..model import Actor
from ..retrieve import Fusion
from ._schemas import AnswerRequest, ResolveBody, SearchRequest

__all__ = ["answer", "resolve", "search"]


def search(kb: KnowledgeBase, actor: Actor, body: SearchRequest, fusion: Fusion) -> dict[str, Any]:
    """``fusion`` is the configured one; the request's fusion fields override it."""
    hits = kb.search(actor, body.query, limit=body.top_k, match=body.match, mode=body.mode,
                     filters=body.filters.model_dump() if body.filters else None,
                     max_per_document=body.max_per_document, explain=body.explain,
                     fusion=body.fusion_over(fusion), evidence=body.evidence)
    return {"hits": [h.as_dict() for h in hits], "evidence": hits.evidence, "fallback": hits.fallback}


def answer(kb: KnowledgeBase, actor: Actor, body: AnswerRequest, settings: AnswerSettings | None,
           generator: str) -> dict[str, Any]:
    return kb.answer(actor, body.question, generator=generator,
                     filters=body.filters.model_dump() if body.filters else None,
                     settings=settings).as_dict()


def resolve(kb: KnowledgeBase, actor: Actor, body: ResolveBody) -> dict[str, Any]:
    return kb.resolve(actor, body.root.model_dump()).as_dict()
