"""Storage backends behind one contract (see ``_contract``)."""

from __future__ import annotations

from pathlib import Path

from ._contract import (
    DocumentWrite,
    HistoryEntry,
    PassageWrite,
    ReadView,
    Signature,
    SourceEntry,
    Store,
    StoredDocument,
    StoredPassage,
)
from ._sqlite import MissingVectors, SQLiteStore

__all__ = [
    "DocumentWrite",
    "HistoryEntry",
    "MissingVectors",
    "PassageWrite",
    "ReadView",
    "SQLiteStore",
    "Signature",
    "SourceEntry",
    "Store",
    "StoredDocument",
    "StoredPassage",
    "open_store",
]


def open_store(
    location: str | Path,
    *,
    analyzer: str | None = None,
    embedder: str | None = None,
    dimension: int = 0,
    create_embedder: tuple[str, int] = ("none", 0),
) -> Store:
    """Pick the backend from the location: a file path (or ``sqlite:///path``) is SQLite."""
    loc = str(location)
    if loc.startswith("sqlite:///"):
        loc = loc[len("sqlite:///") :]
    return SQLiteStore(loc, analyzer=analyzer, embedder=embedder, dimension=dimension,
                       create_embedder=create_embedder)
