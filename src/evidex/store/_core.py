"""The store algorithm, written once for every SQL backend.

``SQLStore`` writes documents, passages, segments, history and sync records and merges
segments; a backend subclass supplies only its connection handling (how a read snapshot and a
write transaction are opened, where merges run) and two helpers: a ``Dialect`` (the SQL that
differs) and a ``VectorStorage`` (where passage vectors live). SQL here uses ``?`` placeholders;
a backend with another style converts them.

Invariants every write keeps, in one transaction:

* A passage id is never reused, and a live passage never changes (a new version of a document
  gets new ids): so readers may cache rows and arrays by id for as long as the id lives.
* Segments are immutable. A passage that dies (superseded, removed) is tombstoned in the
  transaction that kills it; a merge writes a new segment without the dead and drops their
  tombstones. A merged segment never holds a tombstoned passage: a reader that had applied the
  tombstone would otherwise see the passage again.
* Signature counters (passages, total length) change with the rows they count.
* Every write that changes anything bumps the generation last, and its tombstones carry the
  new generation: the generation row's lock orders commits, so any snapshot holds exactly the
  tombstones of the generations up to its own, and a reader refreshes by difference.
* A write that changes nothing rolls back: a no-op re-ingest or re-sync leaves the store and
  every reader's caches untouched.
* A write of a tenant the store marks as moving or moved to another server (``tenant_moves``,
  see ``_tenants``) is refused inside its transaction, unless the move itself writes it.
  Setting the mark takes the writers' lock exclusively, so every write either committed
  before the mark (and a move's last catch-up copies it) or sees the mark.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from ..model import StoreError
from . import _tenants
from ._contract import MissingVectors, StoredDocument
from ._core_merge import Merging, PendingMerge
from ._core_rebuild import Rebuilds
from ._core_write import WritePath
from ._dialect import Dialect, Tx, VectorStorage, now
from ._merge_policy import POLICY
from ._migrations import SCHEMA_VERSION, upgrade
from ._records import Records
from ._segments import (
    SegmentCache,
)
from ._session import ReadSession
from ._view import DOC_SELECT, SQLView, read_signatures

if TYPE_CHECKING:
    from ._merge_runner import Merges

__all__ = ["PendingMerge", "SQLStore"]

#: The analyzer of a store created without one: per-language analysis (see ``query``).
DEFAULT_ANALYZER = "auto"
#: Write transactions that fail with one of the dialect's ``retry_errors`` are run again.
WRITE_RETRIES = 5


class SQLStore(WritePath, Rebuilds, Merging, Records):
    """The store contract over SQL (see the module docstring); subclasses connect."""

    analyzer: str
    embedder: str
    dimension: int
    dialect: Dialect
    #: Names the store in messages (a path, a schema).
    _where: str
    #: Names the server in what a read reports (``ReadSession.served``): a path, or the role
    #: and host of a PostgreSQL server.
    label: str
    #: Identifies the history of writes this store's generations count: its own location, or
    #: for a replica its primary's. Equal lineage and generation mean equal content.
    lineage: str
    _merge_policy = POLICY

    def __init__(self, embedder: str | None, dimension: int, create_embedder: tuple[str, int]) -> None:
        self.embedder, self.dimension = (embedder, dimension) if embedder else create_embedder
        self._lock = threading.RLock()
        self._cache = SegmentCache()
        self._closed = False
        #: The newest generation a write through this handle committed (0: none yet).
        self.written = 0

    # -- what a backend provides ---------------------------------------------------------------
    _vectors: VectorStorage
    _merges: Merges

    def _snapshot(self) -> AbstractContextManager[Any]:
        """A read transaction on one consistent snapshot, holding ``_lock``; yields a cursor."""
        raise NotImplementedError

    def _transaction(self, exclusive: bool, conn: Any) -> AbstractContextManager[Any]:
        """BEGIN a write transaction (on ``conn``, or the store's connection when None) and
        yield its cursor; roll back if the body raises. ``exclusive`` keeps every other writer
        out (merges, re-embeds). The caller commits or rolls back."""
        raise NotImplementedError

    def _connection(self) -> AbstractContextManager[Any]:
        """A cursor for reads outside a transaction."""
        raise NotImplementedError

    def _merge(self, conn: Any, ids: list[int]) -> None:
        """Merge segments ``ids`` (reading on ``conn`` when not None), or do nothing if they
        are gone."""
        raise NotImplementedError

    def _stats_location(self) -> dict[str, object]:
        raise NotImplementedError

    def _stats_extra(self, c: Any, meta: dict[str, str]) -> dict[str, object]:
        raise NotImplementedError

    def _close_connections(self) -> None:
        raise NotImplementedError

    def _pause(self) -> None:
        """Called between the steps of a merge; a backend may yield to searches there."""

    # -- schema ---------------------------------------------------------------------------------
    def _open_schema(self, c: Any, analyzer: str | None, foreign: str) -> dict[str, str]:
        """Create the store in an empty location or bring it up to date (inside the backend's
        schema transaction); its meta."""
        if upgrade(c, self.dialect, self._where, foreign):
            c.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", [
                ("schema_version", str(SCHEMA_VERSION)), ("analyzer", analyzer or DEFAULT_ANALYZER),
                ("generation", "0"), ("created_at", now()), ("embedder", self.embedder),
                ("dimension", str(self.dimension)), *self._vectors.meta_rows()])
        return dict(c.execute("SELECT key, value FROM meta").fetchall())

    def _adopt(self, meta: dict[str, str], analyzer: str | None, embedder: str | None) -> str:
        """Check the caller's analyzer and model against the store's; the store's analyzer."""
        stored = meta["analyzer"]
        if analyzer is not None and analyzer != stored:
            raise StoreError(
                f"{self._where} was created with the analyzer {stored!r}; it cannot be searched "
                f"with {analyzer!r} (change it with `evidex reindex --analyzer {analyzer}`)")
        model = meta.get("embedder", "none")
        if embedder is not None and embedder != model:
            raise StoreError(
                f"{self._where} holds vectors of the embedding model {model!r}, not {embedder!r}; "
                f"open it without choosing a model, or convert it with `evidex reembed --model {embedder}`")
        self.embedder, self.dimension = model, int(meta.get("dimension", "0"))
        return str(stored)

    def _load_model(self, c: Any) -> None:
        """The model and analyzer the index holds now (``reembed``, ``reindex`` change them)."""
        meta = dict(c.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'dimension', "
                              "'analyzer')").fetchall())
        self.analyzer = meta.get("analyzer", self.analyzer)
        self.embedder = meta.get("embedder", "none")
        self.dimension = int(meta.get("dimension", "0"))

    # -- reading --------------------------------------------------------------------------------
    @contextmanager
    def read(self, at_least: int | None = None, latest: bool = False,
             session: ReadSession | None = None) -> Iterator[SQLView]:
        """One consistent snapshot. It holds every committed write, so ``at_least`` (a
        generation), ``latest`` and ``session``'s writes ask nothing more of a single server; a
        generation it has not reached was never committed here (a number from another store)
        and is an error. ``session`` records which server answered."""
        with self._open_view() as view:
            gen = int(view.generation)  # type: ignore[call-overload]
            named = session.at_least.get(self.lineage) if session is not None else None
            need = max((g for g in (at_least, named) if g is not None), default=None)
            if need is not None and gen < need:
                raise StoreError(f"{self._where} is at generation {gen}; generation {need} was "
                                 "never committed here (it names a write to another store)")
            if session is not None:
                session.read(self.label, gen)
            yield view

    @contextmanager
    def _open_view(self) -> Iterator[SQLView]:
        """A snapshot with the caches brought to its generation (what ``read`` yields; a store
        with replicas opens its servers' views this way and reports the one it keeps)."""
        with self._snapshot() as c:
            gen = int(c.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])
            view = SQLView(self._cache, self._vectors, self.dialect, c)
            if gen != self._cache.generation:
                self._load_model(c)  # a re-embed bumps the generation too
                self._cache.refresh(view, gen)
                view = SQLView(self._cache, self._vectors, self.dialect, c)  # the arrays may be new
            yield view

    # -- writing --------------------------------------------------------------------------------
    @contextmanager
    def _write(self, exclusive: bool = False, conn: Any = None,
               session: ReadSession | None = None) -> Iterator[Tx]:
        """One write transaction: committed, with the last step of ``_finish``, when the body
        changed something; rolled back otherwise. ``session``: the caller's, told the generation
        committed."""
        with self._transaction(exclusive, conn) as c:
            tx = Tx(c)
            yield tx
            if tx.changed:
                self._finish(tx)
                c.execute("COMMIT")
                self._committed(int(tx.generation or 0), session)
            else:
                c.execute("ROLLBACK")

    def _committed(self, generation: int, session: ReadSession | None) -> None:
        """A write committed ``generation``: this handle's newest, and the caller's session's
        (so the caller's next reads include it, on whichever server)."""
        self.written = max(self.written, generation)
        if session is not None:
            session.wrote(self.lineage, generation)

    def _finish(self, tx: Tx) -> None:
        """Counters (in signature order, so concurrent writers lock them alike), then the
        generation, then the tombstones with the new generation (see the module docstring)."""
        c = tx.cur
        for sig in sorted(tx.sig_delta):
            n, total = tx.sig_delta[sig]
            if n or total:
                c.execute("UPDATE signatures SET passages = passages + ?, total_length = total_length + ? "
                          "WHERE id = ?", (n, total, sig))
        gen = self.dialect.bump_generation(c)
        _tenants.record_generation(c, tx.tenants, gen)
        if tx.dead:
            self.dialect.insert_many(c, "tombstones", ("gen", "pid"), [(gen, p) for p in tx.dead])
        tx.generation = gen
        if tx.segment is not None:
            tx.signatures = read_signatures(c)

    def _retrying(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn`` (one whole transaction) again after a deadlock or serialization failure,
        which roll the transaction back whole."""
        for attempt in range(WRITE_RETRIES):
            try:
                return fn(*args)
            except self.dialect.retry_errors:
                if attempt == WRITE_RETRIES - 1:
                    raise
        raise AssertionError("unreachable")

    def _check_model(self, c: Any) -> None:
        """Another handle re-embedded or reindexed the store since our vectors and terms were
        computed: the caller must embed (``MissingVectors``) or analyse (``StoreError``) again."""
        model, analyzer = self.embedder, self.analyzer
        self._load_model(c)
        if self.analyzer != analyzer:
            raise StoreError(f"the store was reindexed with the analyzer {self.analyzer!r} since "
                             "these passages were analysed; nothing was written, write them again")
        if self.embedder != model:
            raise MissingVectors(f"the store now uses the model {self.embedder!r}")

    # -- tenants moving between servers (see ``_tenants``) ---------------------------------------
    def mark_tenant(self, tenant: str, state: str | None, location: str = "",
                    replicas: Sequence[str] = ()) -> None:
        """Mark ``tenant`` as ``moving`` or ``moved`` to ``location`` (None: clear the mark),
        with every other writer kept out while the mark commits."""
        def run() -> None:
            with self._write(exclusive=True) as tx:
                tx.changed = _tenants.set_mark(tx.cur, tenant, state, location, tuple(replicas))
                tx.tenants.add(tenant)

        self._retrying(run)

    def tenant_marks(self) -> dict[str, _tenants.Mark]:
        """Every tenant marked as moving or moved away, as committed now."""
        with self._connection() as c:
            return _tenants.marks(c, None)

    # -- inspection -----------------------------------------------------------------------------
    def stats(self) -> dict[str, object]:
        with self._connection() as c:
            def one(q: str) -> Any:
                return c.execute(q).fetchone()[0]

            meta = dict(c.execute("SELECT key, value FROM meta").fetchall())
            return {
                **self._stats_location(),
                "analyzer": self.analyzer,
                "schema_version": int(meta["schema_version"]),
                "documents": one("SELECT count(*) FROM documents"),
                "passages": one("SELECT count(*) FROM passages"),
                "tenants": one("SELECT count(DISTINCT tenant) FROM documents"),
                "history_versions": one("SELECT count(*) FROM history"),
                "segments": one("SELECT count(*) FROM segments"),
                "tombstones": one("SELECT count(*) FROM tombstones"),
                "embedder": meta.get("embedder", "none"),
                "dimension": int(meta.get("dimension", "0")),
                **self._stats_extra(c, meta),
            }

    def integrity(self) -> list[str]:
        with self._connection() as c:
            return self.dialect.integrity(c)

    def iter_documents(self, tenant: str | None = None) -> Iterator[StoredDocument]:
        with self._connection() as c:
            rows = (c.execute(f"{DOC_SELECT} ORDER BY tenant, doc_id") if tenant is None else
                    c.execute(f"{DOC_SELECT} WHERE tenant = ? ORDER BY doc_id", (tenant,))).fetchall()
        for r in rows:
            yield StoredDocument.from_row(r)

    def close(self) -> None:
        try:
            self._merges.close()
        finally:
            with self._lock:
                self._close_connections()
                self._closed = True
                self._cache = SegmentCache()  # its arrays are hundreds of MB at a million passages
                self._vectors.close()
