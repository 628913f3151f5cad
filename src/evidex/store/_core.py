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

import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model import IngestReport, StoreError, TenantMoved
from . import _reindex, _tenants
from ._contract import DocumentWrite, HistoryEntry, MissingVectors, SourceEntry, StoredDocument
from ._dialect import Dialect, Retry, Tx, VectorStorage, now, sig_key
from ._merge_policy import POLICY, merge_budget, merge_postings, next_merge
from ._migrations import SCHEMA_VERSION, upgrade
from ._records import Records
from ._schema import columns
from ._segments import (
    PACK_LIMIT,
    PID,
    TF,
    FlatPostings,
    PackedPostings,
    SegmentArrays,
    SegmentCache,
    decode,
    encode,
    segment_from_rows,
)
from ._session import current_session
from ._view import DOC_SELECT, SQLView, read_signatures

if TYPE_CHECKING:
    from ._merge_runner import Merges

__all__ = ["PendingMerge", "SQLStore"]

#: The analyzer of a store created without one: per-language analysis (see ``query``).
DEFAULT_ANALYZER = "auto"
#: Write transactions that fail with one of the dialect's ``retry_errors`` are run again.
WRITE_RETRIES = 5

@dataclass(frozen=True, slots=True)
class PendingMerge:
    """A merged segment computed from a snapshot, to be committed if its inputs still exist."""

    ids: list[int]
    large: list[int]  # the inputs whose postings are rows of their own
    cols: list[np.ndarray]
    postings: FlatPostings
    vectors: np.ndarray | None
    model: str
    dead: np.ndarray  # tombstoned passages the merged segment leaves out
    generation: int  # of the snapshot the merge was computed from

    @property
    def packed(self) -> bool:
        """Whether the merged segment keeps its postings in its own row (one small write)."""
        return len(self.cols[0]) <= PACK_LIMIT


class SQLStore(Records):
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
    def read(self, at_least: int | None = None, latest: bool = False) -> Iterator[SQLView]:
        """One consistent snapshot. It holds every committed write, so ``at_least`` (a
        generation) and ``latest`` ask nothing more of a single server; a generation it has not
        reached was never committed here (a number from another store) and is an error."""
        with self._open_view() as view:
            gen = int(view.generation)  # type: ignore[call-overload]
            if at_least is not None and gen < at_least:
                raise StoreError(f"{self._where} is at generation {gen}; generation {at_least} was "
                                 "never committed here (it names a write to another store)")
            session = current_session()
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
    def _write(self, exclusive: bool = False, conn: Any = None) -> Iterator[Tx]:
        """One write transaction: committed, with the last step of ``_finish``, when the body
        changed something; rolled back otherwise."""
        with self._transaction(exclusive, conn) as c:
            tx = Tx(c)
            yield tx
            if tx.changed:
                self._finish(tx)
                c.execute("COMMIT")
                self._committed(int(tx.generation or 0))
            else:
                c.execute("ROLLBACK")

    def _committed(self, generation: int) -> None:
        """A write committed ``generation``: this handle's newest, and the session's (so the
        caller's next reads include it, on whichever server)."""
        self.written = max(self.written, generation)
        session = current_session()
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

    def apply(self, writes: Sequence[DocumentWrite], *, keep_history: bool = True,
              sources: Sequence[SourceEntry] = (), moving: bool = False,
              history: Sequence[tuple[str, str, HistoryEntry]] = ()) -> IngestReport:
        if not writes and not sources and not history:
            return IngestReport()
        keys = [(w.document.tenant, w.document.id) for w in writes]
        if len(set(keys)) != len(keys):
            raise StoreError("a document appears twice in the batch; nothing was written")
        self._merges.check()  # a failed background merge is reported before writing more
        report: IngestReport = self._retrying(self._apply, writes, keep_history, sources, moving, history)
        if report.passages_written:
            self._merges.request(merge_budget(report.passages_written, self._merge_policy))
        return report

    def _apply(self, writes: Sequence[DocumentWrite], keep_history: bool,
               sources: Sequence[SourceEntry], moving: bool,
               history: Sequence[tuple[str, str, HistoryEntry]]) -> IngestReport:
        added = superseded = written = 0
        with self._write() as tx:
            c = tx.cur
            self._check_model(c)
            keys = [(w.document.tenant, w.document.id) for w in writes]
            if not moving:
                self._refuse_moved(c, {t for t, _ in keys} | {e.tenant for e in sources})
            self.dialect.lock_documents(c, keys)
            existing = {(r[0], r[1]): r[2:] for r in self.dialect.by_document(
                c, "SELECT tenant, doc_id, dkey, version, content_sha256, meta, split, sig FROM documents",
                keys)}
            changed = []
            for w, key in zip(writes, keys, strict=True):
                row = existing.get(key)
                if not (row and tuple(row[1:5]) == w.index_key()):
                    changed.append((w, row))
            sigs = self._signatures(c, [w for w, _ in changed])
            pids = iter(self.dialect.next_pids(c, sum(len(w.passages) for w, _ in changed)))
            seg_rows: list[tuple[int, int, int, int, int, dict[str, int]]] = []
            prows: list[tuple[Any, ...]] = []
            vectors: list[np.ndarray | None] = []
            for w, row in changed:
                d = w.document
                version, sha, meta, split = w.index_key()
                sig = sigs[sig_key(d.tenant, d.groups, d.visibility, d.language, d.tags)]
                if row:
                    dkey = int(row[0])
                    if keep_history:
                        c.execute(
                            "INSERT INTO history (tenant, doc_id, version, content_sha256, meta, split, "
                            "text, superseded_at) SELECT d.tenant, d.doc_id, d.version, d.content_sha256, "
                            "d.meta, d.split, t.text, ? FROM documents d JOIN document_texts t USING (dkey) "
                            "WHERE dkey = ?", (now(), dkey))
                    self._drop_passages(tx, dkey, int(row[5]))
                    c.execute("UPDATE documents SET version = ?, content_sha256 = ?, meta = ?, split = ?, "
                              "sig = ?, indexed_at = ? WHERE dkey = ?",
                              (version, sha, meta, split, sig, now(), dkey))
                    c.execute("UPDATE document_texts SET text = ? WHERE dkey = ?", (d.text, dkey))
                    superseded += 1
                else:
                    dkey = self.dialect.insert_id(
                        c, "INSERT INTO documents (tenant, doc_id, version, content_sha256, meta, split, "
                        "sig, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (d.tenant, d.id, version, sha, meta, split, sig, now()), "dkey")
                    c.execute("INSERT INTO document_texts (dkey, text) VALUES (?, ?)", (dkey, d.text))
                    added += 1
                total = 0
                for pw in w.passages:
                    p, pid = pw.passage, next(pids)
                    prows.append((pid, dkey, p.number, p.start, p.end, pw.length,
                                  json.dumps(list(p.heading_path), ensure_ascii=False), p.anchor, p.page,
                                  json.dumps(list(pw.flags)), p.text))
                    seg_rows.append((pid, sig, pw.length, dkey, p.number, pw.terms))
                    vectors.append(pw.vector)
                    total += pw.length
                tx.add(sig, len(w.passages), total)
                written += len(w.passages)
            if prows:
                self.dialect.insert_many(c, "passages", columns("passages"), prows)
                cols, postings = segment_from_rows(seg_rows)
                stacked = self._stack(vectors)
                seg = self._insert_segment(c, cols, postings, stacked, self.embedder)
                # As a reader would load it (``SQLView.segment_arrays``).
                packed = postings if len(prows) <= PACK_LIMIT else None
                cached = stacked if self._vectors.cache_model()[0] != "none" else None
                tx.segment = SegmentArrays(seg, *(col.astype(PID) for col in cols), packed=packed,
                                           vectors=cached)
            self._put_sources(tx, sources)
            if history:
                self._put_history(tx, history)
        # Committed: the readers' cache gets the new passages' rows as the database would return
        # them, and the new segment when it held the generation before this write's (a reader
        # after the write, such as conflict detection, then reads neither back).
        self._cache.remember_passages([(*r[:5], r[10], r[6], r[7], r[8], r[9]) for r in prows])
        if tx.segment is not None and tx.generation is not None:
            with self._lock:
                self._cache.install(tx.segment, tx.dead, tx.generation, tx.signatures or [],
                                    self._vectors.cache_model())
        return IngestReport(added, superseded, len(writes) - len(changed), written,
                            generation=tx.generation if tx.changed else None)

    def _refuse_moved(self, c: Any, tenants: set[str]) -> None:
        """Raise ``TenantMoved`` when one of ``tenants`` is marked as moving or moved away
        (inside the write's transaction, after the writers' lock: see the module docstring)."""
        if not tenants:
            return
        for tenant, mark in sorted(_tenants.marks(c, sorted(tenants)).items()):
            raise TenantMoved(tenant, mark.state, mark.location, mark.replicas)

    def _signatures(self, c: Any, writes: Sequence[DocumentWrite]) -> dict[str, int]:
        """Signature ids of these writes, created in key order (so concurrent writers creating
        the same new signatures wait for each other instead of deadlocking)."""
        wanted: dict[str, DocumentWrite] = {}
        for w in writes:
            d = w.document
            wanted.setdefault(sig_key(d.tenant, d.groups, d.visibility, d.language, d.tags), w)
        out: dict[str, int] = {}
        for key in sorted(wanted):
            row = c.execute("SELECT id FROM signatures WHERE key = ?", (key,)).fetchone()
            if row is None:
                d = wanted[key].document
                c.execute("INSERT INTO signatures (key, tenant, groups, visibility, language, tags) "
                          "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING",
                          (key, d.tenant, json.dumps(sorted(d.groups)), d.visibility, d.language,
                           json.dumps(sorted(d.tags))))
                row = c.execute("SELECT id FROM signatures WHERE key = ?", (key,)).fetchone()
            out[key] = int(row[0])
        return out

    def _drop_passages(self, tx: Tx, dkey: int, sig: int) -> None:
        c = tx.cur
        rows = self.dialect.delete_returning(c, "passages", "dkey = ?", (dkey,), "pid, length")
        if not rows:
            return
        pids = [int(r[0]) for r in rows]
        self._vectors.drop(c, pids)
        tx.dead.extend(pids)
        tx.add(sig, -len(rows), -sum(int(r[1]) for r in rows))

    def _stack(self, vectors: list[np.ndarray | None]) -> np.ndarray | None:
        if self.embedder == "none":
            return None
        if any(v is None for v in vectors):
            raise MissingVectors("a changed document arrived without passage vectors")
        mat = np.vstack(vectors).astype(np.float32)  # type: ignore[arg-type]
        if mat.shape[1] != self.dimension:
            raise StoreError(f"vectors have {mat.shape[1]} dimensions; the store's model "
                             f"{self.embedder!r} has {self.dimension}")
        return mat

    def _insert_segment(self, c: Any, cols: list[np.ndarray], postings: FlatPostings,
                        vectors: np.ndarray | None, model: str) -> int:
        """Store one segment: a small one with its postings packed into its row (one write
        instead of hundreds of scattered index rows), a large one with a row per term."""
        n = len(cols[0])
        packed = postings.stored() if n <= PACK_LIMIT else (None, None, None, None)
        seg = self.dialect.insert_id(
            c, "INSERT INTO segments (n, pids, sigs, lengths, dkeys, numbers, terms, term_ends, term_pids, "
            "term_tfs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (n, *(encode(col, PID) for col in cols), *packed), "id")
        if vectors is not None:
            self._vectors.write(c, seg, cols[0], cols[1], vectors, model)
        if n > PACK_LIMIT:
            self.dialect.insert_many(c, "postings", ("term", "segment", "pids", "tfs"), (
                (t, seg, encode(p, PID), encode(f, TF)) for t, p, f in postings.items()))
        return seg

    def _put_sources(self, tx: Tx, entries: Sequence[SourceEntry]) -> None:
        """Upsert entries. An entry equal to the stored one changes no row; a changed one (a new
        stamp, say) is a change like any other and bumps the generation."""
        if not entries:
            return
        cur = tx.cur.executemany(
            "INSERT INTO source_documents (source, tenant, doc_id, item, stamp, content_sha256) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, doc_id) DO UPDATE SET "
            "source = excluded.source, item = excluded.item, stamp = excluded.stamp, "
            "content_sha256 = excluded.content_sha256 WHERE source_documents.source != excluded.source "
            "OR source_documents.item != excluded.item OR source_documents.stamp != excluded.stamp "
            "OR source_documents.content_sha256 != excluded.content_sha256",
            [(e.source, e.tenant, e.doc_id, e.item, e.stamp, e.content_sha256) for e in entries])
        if cur.rowcount:
            tx.changed = True

    def source_entries(self, source: str | None = None) -> list[SourceEntry]:
        q = "SELECT source, tenant, doc_id, item, stamp, content_sha256 FROM source_documents"
        with self._connection() as c:
            rows = (c.execute(q + " ORDER BY tenant, doc_id") if source is None else
                    c.execute(q + " WHERE source = ? ORDER BY tenant, doc_id", (source,)))
            return [SourceEntry(*r) for r in rows.fetchall()]

    def unchanged(self, writes: Sequence[DocumentWrite]) -> set[tuple[str, str]]:
        """(tenant, id) of the writes that would be no-ops now: lets the caller skip embedding
        them. ``apply`` checks again inside its transaction."""
        if not writes:
            return set()
        with self._connection() as c:
            rows = self.dialect.by_document(
                c, "SELECT tenant, doc_id, version, content_sha256, meta, split FROM documents",
                [(w.document.tenant, w.document.id) for w in writes])
        have = {(r[0], r[1]): tuple(r[2:]) for r in rows}
        return {(w.document.tenant, w.document.id) for w in writes
                if have.get((w.document.tenant, w.document.id)) == w.index_key()}

    def live_passages(self) -> list[tuple[int, str]]:
        """(passage id, text) of every live passage: what a re-embed must cover."""
        with self._connection() as c:
            return [(int(r[0]), r[1]) for r in c.execute("SELECT pid, text FROM passages ORDER BY pid")]

    def switch_vectors(self, model: str, dimension: int, vectors: dict[int, np.ndarray]) -> bool:
        """Atomically replace every stored vector by ``model``'s. ``vectors`` must cover every
        live passage; returns False (changing nothing) if passages were added meanwhile, so the
        caller embeds those and tries again. Readers keep the old vectors until this commits."""
        def run() -> bool:
            try:
                with self._write(exclusive=True) as tx:
                    live = [int(r[0]) for r in tx.cur.execute("SELECT pid FROM passages").fetchall()]
                    if not all(p in vectors for p in live):
                        raise Retry
                    self._vectors.switch(tx.cur, model, dimension, vectors)
                    tx.cur.executemany("UPDATE meta SET value = ? WHERE key = ?",
                                       [(model, "embedder"), (str(dimension), "dimension")])
                    tx.changed = True
            except Retry:
                return False
            return True

        done: bool = self._retrying(run)
        if done:
            self.embedder, self.dimension = model, dimension
        return done

    def reindex(self, analyzer: str) -> int:
        """Analyse every live passage with ``analyzer`` and switch to the new postings (see
        ``_reindex``); the number of passages analysed. Passages written meanwhile are read and
        analysed again (a few times, then it gives up)."""
        for _ in range(5):
            with self._connection() as c:
                terms = _reindex.new_terms(c.execute(_reindex.LIVE_PASSAGES).fetchall(), analyzer)
            vectors: dict[int, np.ndarray] = {}
            if self.embedder != "none":
                with self.read() as view:
                    vectors = view.passage_vectors(terms)
            if self._switch_analyzer(analyzer, terms, vectors):
                return len(terms)
        raise StoreError("the store kept changing during reindex; try again when writes pause")

    def _switch_analyzer(self, analyzer: str, terms: Mapping[int, Mapping[str, int]],
                         vectors: Mapping[int, np.ndarray]) -> bool:
        """Replace every live passage's postings by ``terms`` and record ``analyzer``,
        atomically; False, changing nothing, when passages were written or the model changed
        meanwhile, so the caller reads them again and retries."""
        def run() -> bool:
            try:
                with self._write(exclusive=True) as tx:
                    self._check_model(tx.cur)
                    rows = tx.cur.execute(_reindex.REWRITE_ROWS).fetchall()
                    if not _reindex.covered(rows, terms, vectors if self.embedder != "none" else None):
                        raise Retry
                    self._rewrite(tx, rows, terms, vectors)
                    tx.cur.execute("UPDATE meta SET value = ? WHERE key = 'analyzer'", (analyzer,))
                    tx.changed = True
            except (Retry, MissingVectors):
                return False
            return True

        done: bool = self._retrying(run)
        if done:
            self.analyzer = analyzer
            if terms:
                self._merges.request(merge_budget(len(terms), self._merge_policy))
        return done

    def _rewrite(self, tx: Tx, rows: list[Any], terms: Mapping[int, Mapping[str, int]],
                 vectors: Mapping[int, np.ndarray]) -> None:
        """Every passage of ``rows`` dies and is written again under a new id with its new
        terms, in one new segment."""
        for dkey, sig in _reindex.documents_of(rows):
            self._drop_passages(tx, dkey, sig)
        if not rows:
            return
        prows, seg_rows, vecs = _reindex.rewritten(rows, terms, vectors,
                                                   self.dialect.next_pids(tx.cur, len(rows)))
        for _, sig, length, *_ in seg_rows:
            tx.add(sig, 1, length)
        self.dialect.insert_many(tx.cur, "passages", columns("passages"), prows)
        cols, postings = segment_from_rows(seg_rows)
        self._insert_segment(tx.cur, cols, postings, self._stack(vecs), self.embedder)

    def remove(self, tenant: str, doc_id: str) -> bool:
        def run() -> bool:
            with self._write() as tx:
                c = tx.cur
                self._refuse_moved(c, {tenant})
                self.dialect.lock_documents(c, [(tenant, doc_id)])
                row = c.execute("SELECT dkey, sig FROM documents WHERE tenant = ? AND doc_id = ?",
                                (tenant, doc_id)).fetchone()
                if not row:
                    return False
                self._drop_passages(tx, int(row[0]), int(row[1]))
                c.execute("DELETE FROM document_texts WHERE dkey = ?", (row[0],))
                c.execute("DELETE FROM documents WHERE dkey = ?", (row[0],))
                for table in ("history", "source_documents"):
                    c.execute(f"DELETE FROM {table} WHERE tenant = ? AND doc_id = ?", (tenant, doc_id))
                tx.changed = True
                return True

        removed: bool = self._retrying(run)
        return removed

    def remove_documents(self, tenant: str, doc_ids: Sequence[str], *, moving: bool = False) -> int:
        """Delete these documents of ``tenant`` with their passages, history and source
        entries, in one transaction (a move clears a tenant off its old server this way);
        the number that existed. ``moving``: the move itself writes (see ``apply``)."""
        def run() -> int:
            with self._write() as tx:
                c = tx.cur
                if not moving:
                    self._refuse_moved(c, {tenant})
                keys = [(tenant, d) for d in doc_ids]
                self.dialect.lock_documents(c, keys)
                rows = self.dialect.by_document(c, "SELECT dkey, sig, doc_id FROM documents", keys)
                # History and sync records go with the ids, whether or not a document is left.
                loose = {(t, d) for table in ("history", "source_documents") for t, d in
                         self.dialect.by_document(c, f"SELECT tenant, doc_id FROM {table}", keys)}
                if not rows and not loose:
                    return 0
                dkeys = [int(r[0]) for r in rows]
                sig_of = {int(r[0]): int(r[1]) for r in rows}
                for cond, params in self.dialect.where_in("dkey", dkeys):
                    dead = self.dialect.delete_returning(c, "passages", cond, params, "pid, length, dkey")
                    if dead:
                        self._vectors.drop(c, [int(r[0]) for r in dead])
                        tx.dead.extend(int(r[0]) for r in dead)
                        for r in dead:
                            tx.add(sig_of[int(r[2])], -1, -int(r[1]))
                    c.execute(f"DELETE FROM document_texts WHERE {cond}", params)
                    c.execute(f"DELETE FROM documents WHERE {cond}", params)
                for table in ("history", "source_documents"):
                    _tenants.delete_by_document(c, table, sorted(loose))
                tx.changed = True
                return len(rows)

        removed: int = self._retrying(run)
        return removed

    # -- tenants moving between servers (see ``_tenants``) ---------------------------------------
    def mark_tenant(self, tenant: str, state: str | None, location: str = "",
                    replicas: Sequence[str] = ()) -> None:
        """Mark ``tenant`` as ``moving`` or ``moved`` to ``location`` (None: clear the mark),
        with every other writer kept out while the mark commits."""
        def run() -> None:
            with self._write(exclusive=True) as tx:
                tx.changed = _tenants.set_mark(tx.cur, tenant, state, location, tuple(replicas))

        self._retrying(run)

    def tenant_marks(self) -> dict[str, _tenants.Mark]:
        """Every tenant marked as moving or moved away, as committed now."""
        with self._connection() as c:
            return _tenants.marks(c, None)

    def restore_history(self, entries: Sequence[tuple[str, str, HistoryEntry]]) -> None:
        if not entries:
            return
        with self._write() as tx:
            self._put_history(tx, entries)

    def _put_history(self, tx: Tx, entries: Sequence[tuple[str, str, HistoryEntry]]) -> None:
        """Append (tenant, document id, entry) to the history verbatim, oldest first."""
        self.dialect.insert_many(tx.cur, "history", columns("history")[1:], [
            (t, d, e.version, e.content_sha256, e.meta, e.split, e.text, e.superseded_at)
            for t, d, e in entries])
        tx.changed = True

    # -- merging --------------------------------------------------------------------------------
    def _merge_due(self, conn: Any, budget: int) -> None:
        """Run every merge the policy calls for under ``budget`` (reading on ``conn``, or on the
        store's connection when None)."""
        while True:
            with nullcontext(conn) if conn is not None else self._connection() as c:
                sizes = {int(i): int(n) for i, n in c.execute("SELECT id, n FROM segments ORDER BY id")}
            ids = next_merge(sizes, budget, self._merge_policy)
            if ids is None:
                return
            self._merge(conn, ids)

    def _fold(self, tx: Tx, ids: list[int]) -> None:
        """Merge segments ``ids`` within one write transaction."""
        plan = self._plan_merge(tx.cur, ids)
        if plan is not None:
            self._commit_merge(tx, plan)

    def settle(self) -> None:
        """Return once the merges earlier writes asked for are done, raising a failure."""
        self._merges.settle()

    def optimize(self) -> None:
        """Merge every segment into one and drop all tombstoned postings."""
        self.settle()

        def run() -> None:
            with self._write(exclusive=True) as tx:
                ids = [int(r[0]) for r in tx.cur.execute("SELECT id FROM segments ORDER BY id").fetchall()]
                tomb = tx.cur.execute("SELECT count(*) FROM tombstones").fetchone()[0]
                if len(ids) > 1 or (ids and tomb):
                    self._fold(tx, ids)

        self._retrying(run)

    def _tombstoned(self, c: Any, where: str, args: tuple[int, ...]) -> np.ndarray:
        """The passage ids of the tombstones ``where`` selects, as one string parsed by numpy:
        a merge at a million passages reads tens of thousands, and a tuple per row costs the
        merge time it otherwise shares with searches and writes."""
        text = c.execute(f"SELECT {self.dialect.pid_list} FROM tombstones WHERE {where}", args).fetchone()[0]
        return np.array([], dtype=np.int64) if text is None else np.fromstring(text, dtype=np.int64, sep=",")

    def _rows_in(self, c: Any, columns: str, table: str, column: str, ids: Sequence[int]) -> list[Any]:
        rows: list[Any] = []
        for cond, params in self.dialect.where_in(column, ids):
            rows += c.execute(f"SELECT {columns} FROM {table} WHERE {cond}", params).fetchall()
        return rows

    def _plan_merge(self, c: Any, ids: list[int]) -> PendingMerge | None:
        """Read segments ``ids`` and build their merged segment without the passages dead now
        (inside a transaction of ``c``; None if a segment is gone, i.e. merged meanwhile)."""
        rows = sorted(self._rows_in(c, "id, pids, sigs, lengths, dkeys, numbers, terms, term_ends, "
                                            "term_pids, term_tfs", "segments", "id", ids))
        if len(rows) != len(ids):
            return None
        meta = dict(c.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'dimension', "
                              "'generation')").fetchall())
        model, dimension = meta.get("embedder", "none"), int(meta.get("dimension", "0"))
        cols = [np.concatenate([decode(r[i], PID) for r in rows]) for i in range(1, 6)]
        vecs = self._vectors.segment(c, [r[0] for r in rows], model, dimension) if model != "none" else None
        # Only the tombstones in these segments' id range: those of passages in large segments
        # that are rarely merged pile up, and every small merge would read them all.
        lo, hi = (int(cols[0].min()), int(cols[0].max())) if len(cols[0]) else (0, -1)
        tomb = self._tombstoned(c, "pid BETWEEN ? AND ?", (lo, hi))
        self._pause()
        dead_mask = np.isin(cols[0], tomb)
        dead = cols[0][dead_mask]
        keep = ~dead_mask
        order = np.argsort(cols[0][keep], kind="stable")
        cols = [col[keep][order] for col in cols]
        if vecs is not None:
            vecs = vecs[keep][order]
        parts = [FlatPostings.from_stored(*r[6:]) for r in rows if r[6] is not None]
        self._pause()
        large = [r[0] for r in rows if r[6] is None]
        if large:
            by_segment: dict[int, PackedPostings] = {}
            for seg, term, p, f in self._rows_in(c, "segment, term, pids, tfs", "postings", "segment",
                                                      large):
                by_segment.setdefault(seg, {})[term] = (decode(p, PID), decode(f, TF))
            parts += [FlatPostings.from_dict(v) for v in by_segment.values()]
        postings = merge_postings(parts, dead, self._pause)
        return PendingMerge([r[0] for r in rows], large, cols, postings, vecs, model, dead,
                            int(meta["generation"]))

    def _commit_merge(self, tx: Tx, plan: PendingMerge) -> bool:
        """Replace the plan's segments by the merged one (inside a write transaction).

        False, changing nothing, when a segment is gone or the store switched vector models
        since the plan was read. Passages that died after the plan was read are left out here,
        with their tombstones (see the module docstring)."""
        c, ids = tx.cur, plan.ids
        still = len(self._rows_in(c, "id", "segments", "id", ids))
        model = c.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        if still != len(ids) or (model[0] if model else "none") != plan.model:
            return False
        cols, postings, vectors, dead = plan.cols, plan.postings, plan.vectors, plan.dead
        late_mask = np.isin(cols[0], self._tombstoned(c, "gen > ?", (plan.generation,)))
        if late_mask.any():
            late = cols[0][late_mask]
            cols = [col[~late_mask] for col in cols]
            vectors = vectors[~late_mask] if vectors is not None else None
            postings = merge_postings([postings], late)
            dead = np.concatenate([dead, late])
        self._insert_segment(c, cols, postings, vectors, plan.model)
        self._vectors.drop_segments(c, ids)
        for table, column, keys in (("postings", "segment", plan.large), ("segments", "id", ids),
                                    ("tombstones", "pid", [int(p) for p in dead])):
            for cond, params in self.dialect.where_in(column, keys):
                c.execute(f"DELETE FROM {table} WHERE {cond}", params)
        tx.changed = True
        return True

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
