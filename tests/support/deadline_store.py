"""A small internal collection for the vector leg's deadline tests (tests/retrieve): four
documents of one tenant, a caller who may read them, and query texts no earlier search
embedded (query vectors are cached per process, so a repeated text would skip the model)."""

from __future__ import annotations

import uuid
from pathlib import Path

from actors import PUBLIC_INTERNAL
from evidex import Actor, Document, KnowledgeBase

STAFF = Actor("acme", frozenset({"staff"}), visibilities=PUBLIC_INTERNAL)  # the documents are internal
TEXTS = {
    "returns": "# Returns\n\nUnworn boots can be returned within 30 days for a full refund.",
    "shipping": "# Shipping\n\nParcels to Austria take three working days; express takes one.",
    "repairs": "# Repairs\n\nZips and seams of jackets are repaired free for two years.",
    "club": "# Club\n\nMembers collect points on every order and redeem them at checkout.",
}


def docs() -> list[Document]:
    return [Document(id=k, tenant="acme", groups=frozenset({"staff"}), version="1", text=v)
            for k, v in TEXTS.items()]


def fresh(words: str) -> str:
    """A query text no earlier search embedded."""
    return f"{words} {uuid.uuid4().hex[:8]}"


def warm_store(path: Path) -> KnowledgeBase:
    """The collection in a new store at ``path``, its model loaded: the model's first query is
    never under a deadline."""
    kb = KnowledgeBase.open(path)
    kb.ingest(docs(), split="heading")
    kb.search(STAFF, fresh("warm up"))
    return kb
