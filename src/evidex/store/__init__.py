"""Storage backends behind one contract (see ``_contract``)."""

from __future__ import annotations

from pathlib import Path

from ._contract import (
    DocumentWrite,
    HistoryEntry,
    MissingVectors,
    PassageWrite,
    ReadView,
    Signature,
    SourceEntry,
    Store,
    StoredDocument,
    StoredPassage,
)
from ._copy import CopyReport, copy_store, verify_copy
from ._postgres import PostgresStore, is_postgres_url
from ._runs import RunRecord
from ._sqlite import SQLiteStore

__all__ = [
    "CopyReport",
    "DocumentWrite",
    "HistoryEntry",
    "MissingVectors",
    "PassageWrite",
    "PostgresStore",
    "ReadView",
    "RunRecord",
    "SQLiteStore",
    "Signature",
    "SourceEntry",
    "Store",
    "StoredDocument",
    "StoredPassage",
    "copy_store",
    "is_postgres_url",
    "open_store",
    "verify_copy",
]


def open_store(
    location: str | Path,
    *,
    analyzer: str | None = None,
    embedder: str | None = None,
    dimension: int = 0,
    create_embedder: tuple[str, int] = ("none", 0),
) -> Store:
    """Pick the backend from the location: ``postgresql://...`` (or ``postgres://``) is
    PostgreSQL, a file path (or ``sqlite:///path``) is SQLite."""
    loc = str(location)
    if is_postgres_url(loc):
        return PostgresStore(loc, analyzer=analyzer, embedder=embedder, dimension=dimension,
                             create_embedder=create_embedder)
    if loc.startswith("sqlite:///"):
        loc = loc[len("sqlite:///") :]
    return SQLiteStore(loc, analyzer=analyzer, embedder=embedder, dimension=dimension,
                       create_embedder=create_embedder)
