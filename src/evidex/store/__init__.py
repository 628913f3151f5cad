"""Storage backends behind one contract (see ``_contract``).

The PostgreSQL backend is imported on first use (``open_store`` with a PostgreSQL URL, or the
name ``PostgresStore``), so the library and its embedded SQLite store never load the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..extras import require
from ..model import StoreError
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
from ._copy import (
    CopyReport,
    TenantCounts,
    TenantSync,
    clear_tenant,
    compare_tenant,
    copy_records,
    copy_store,
    sync_tenant,
    verify_copy,
)
from ._feedback import AnswerRecord, FeedbackRecord, HandoffRecord, since_stamp
from ._location import is_postgres_url, redacted, scrubbed, store_exists, without_password
from ._reports import EvalRecord, NoticeRecord
from ._runs import RunRecord
from ._session import ReadSession, RecentWrites, Served
from ._sqlite import SQLiteStore
from ._tenants import Mark

if TYPE_CHECKING:
    from ._postgres import PostgresStore
    from ._replicas import ReplicaSettings, ReplicatedStore

__all__ = [
    "AnswerRecord",
    "CopyReport",
    "DocumentWrite",
    "EvalRecord",
    "FeedbackRecord",
    "HandoffRecord",
    "HistoryEntry",
    "Mark",
    "MissingVectors",
    "NoticeRecord",
    "PassageWrite",
    "PostgresStore",
    "ReadSession",
    "ReadView",
    "RecentWrites",
    "ReplicaSettings",
    "ReplicatedStore",
    "RunRecord",
    "SQLiteStore",
    "Served",
    "Signature",
    "SourceEntry",
    "Store",
    "StoredDocument",
    "StoredPassage",
    "TenantCounts",
    "TenantSync",
    "clear_tenant",
    "compare_tenant",
    "copy_records",
    "copy_store",
    "is_postgres_url",
    "migrate_store",
    "open_store",
    "redacted",
    "scrubbed",
    "since_stamp",
    "store_exists",
    "sync_tenant",
    "verify_copy",
    "without_password",
]

def _load_postgres() -> Any:
    """The PostgreSQL backend, imported on first use; without the extra, the install line."""
    require("postgres", "a PostgreSQL store")
    from . import _postgres

    return _postgres


def _load_replicas() -> Any:
    require("postgres", "read replicas")
    from . import _replicas

    return _replicas


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":
        return _load_postgres().PostgresStore
    if name in ("ReplicaSettings", "ReplicatedStore"):
        return getattr(_load_replicas(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_store(
    location: str | Path,
    *,
    analyzer: str | None = None,
    embedder: str | None = None,
    dimension: int = 0,
    create_embedder: tuple[str, int] = ("none", 0),
    replicas: Sequence[str] = (),
    replica_settings: Any = None,
) -> Store:
    """Pick the backend from the location: ``postgresql://...`` (or ``postgres://``) is
    PostgreSQL, a file path (or ``sqlite:///path``) is SQLite. ``replicas``: URLs of streaming
    replicas of a PostgreSQL primary, which then serve its reads (``_replicas``;
    ``replica_settings`` a ``ReplicaSettings``)."""
    loc = str(location)
    if replicas:
        bad = [u for u in (loc, *replicas) if not is_postgres_url(u)]
        if bad:
            raise StoreError(f"read replicas are PostgreSQL servers: {bad[0]!r} is not a postgresql:// URL")
        replicated: Store = _load_replicas().ReplicatedStore(
            loc, list(replicas), analyzer=analyzer, embedder=embedder, dimension=dimension,
            create_embedder=create_embedder, settings=replica_settings)
        return replicated
    if is_postgres_url(loc):
        store: Store = _load_postgres().PostgresStore(loc, analyzer=analyzer, embedder=embedder,
                                                 dimension=dimension, create_embedder=create_embedder)
        return store
    if loc.startswith("sqlite:///"):
        loc = loc[len("sqlite:///") :]
    return SQLiteStore(loc, analyzer=analyzer, embedder=embedder, dimension=dimension,
                       create_embedder=create_embedder)


def migrate_store(source: str, target: str) -> CopyReport:
    """Copy the store at ``source`` with its history and records into the empty store
    ``target`` (another backend, typically: a SQLite file to a ``postgresql://`` URL), then
    verify the copy (``copy_store``; see ``CopyReport``)."""
    if not store_exists(source):
        raise StoreError(f"no store at {source}")
    src = open_store(source)
    try:
        dst = open_store(target, analyzer=src.analyzer, embedder=src.embedder, dimension=src.dimension)
        try:
            return copy_store(src, dst)
        finally:
            dst.close()
    finally:
        src.close()
