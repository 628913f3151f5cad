"""Checks of an ingest batch before anything is written (``KnowledgeBase.ingest``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from .model import Document, DocumentError
from .query import identify_document
from .store import SourceEntry

__all__ = ["checked_batch", "entries_by_document"]


def checked_batch(docs: list[Document]) -> list[Document]:
    """Every item a Document, no (tenant, id) twice: checked before anything is written. A
    document that states no language gets the one identified from its text, when the model is
    sure (``query.identify_document``): the ``auto`` analyzer stems it and the answer knows
    which language it quotes."""
    seen: dict[tuple[str, str], int] = {}
    for i, d in enumerate(docs):
        if not isinstance(d, Document):
            raise DocumentError(f"item {i} of the batch is a {type(d).__name__}, not a Document")
        key = (d.tenant, d.id)
        if key in seen:
            raise DocumentError(
                f"document {d.id!r} of tenant {d.tenant!r} appears twice in the batch "
                f"(items {seen[key]} and {i}); nothing was written"
            )
        seen[key] = i
    return [d if d.language else dataclasses.replace(d, language=identify_document(d.text))
            for d in docs]


def entries_by_document(docs: list[Document], sources: Sequence[SourceEntry]
                         ) -> dict[tuple[str, str], list[SourceEntry]]:
    """Source entries by the document they describe, so each goes with its document's batch."""
    out: dict[tuple[str, str], list[SourceEntry]] = {}
    for e in sources:
        out.setdefault((e.tenant, e.doc_id), []).append(e)
    stray = set(out) - {(d.tenant, d.id) for d in docs}
    if stray:
        tenant, doc_id = min(stray)
        raise DocumentError(f"a source entry names document {doc_id!r} of tenant {tenant!r}, "
                            "which is not in the input; nothing was written")
    return out
