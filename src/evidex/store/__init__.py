"""Storage backends behind one contract (see ``_contract``).

The PostgreSQL backend is imported on first use (``open_store`` with a PostgreSQL URL, or the
name ``PostgresStore``), so the library and its embedded SQLite store never load the driver.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..extras import require
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
from ._location import is_postgres_url
from ._runs import RunRecord
from ._sqlite import SQLiteStore

if TYPE_CHECKING:
    from ._postgres import PostgresStore

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

def _load_postgres() -> Any:
    """The PostgreSQL backend, imported on first use; without the extra, the install line."""
    require("postgres", "a PostgreSQL store")
    from . import _postgres

    return _postgres


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":
        return _load_postgres().PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        store: Store = _load_postgres().PostgresStore(loc, analyzer=analyzer, embedder=embedder,
                                                 dimension=dimension, create_embedder=create_embedder)
        return store
    if loc.startswith("sqlite:///"):
        loc = loc[len("sqlite:///") :]
    return SQLiteStore(loc, analyzer=analyzer, embedder=embedder, dimension=dimension,
                       create_embedder=create_embedder)
