"""The embedded backend: one SQLite file in WAL mode.

The algorithm is the core's (``_core``); this module holds SQLite's dialect, its vector storage
(a segment's vectors as float32 blobs beside the segment, loaded with it into the segment cache)
and its connection handling. Each handle has one connection for reads and writes, used under one
lock, and a merge thread with a connection of its own (``_merge_runner``). Writers are serialised by
SQLite (``BEGIN IMMEDIATE``); a reader in any process sees a commit whole or not at all.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from ..model import StoreError
from ._contract import MissingVectors
from ._core import PendingMerge, SQLStore
from ._integrity import sqlite_integrity
from ._merge_runner import InlineMerges, Merger
from ._segments import PID, decode

__all__ = ["MissingVectors", "SQLiteStore"]

#: Bytes of vectors per segment_vectors row: SQLite refuses blobs over 1e9 bytes.
VECTOR_PART_BYTES = 256 << 20

#: The longest a merge plan waits for the handle between two of its steps (``_pause``).
_YIELD_SECONDS = 0.05

#: SQLite's default automatic checkpoint threshold (log pages), which the handle's connection keeps.
_AUTOCHECKPOINT_PAGES = 1000

#: Host parameters per statement: SQLite limits them (999 in older builds).
_CHUNK = 500


class SQLiteDialect:
    name = "sqlite"
    retry_errors: tuple[type[BaseException], ...] = ()  # one writer at a time: nothing to retry
    pid_list = "group_concat(pid)"

    def where_in(self, column: str, keys: Sequence[int]) -> Iterator[tuple[str, Sequence[Any]]]:
        for i in range(0, len(keys), _CHUNK):
            chunk = keys[i : i + _CHUNK]
            yield f"{column} IN ({','.join('?' * len(chunk))})", chunk

    def by_document(self, c: Any, select: str, keys: Sequence[tuple[str, str]]) -> list[Any]:
        rows = []
        for key in keys:  # one primary-key lookup each: cheaper than any join in-process
            rows += c.execute(f"{select} WHERE tenant = ? AND doc_id = ?", key).fetchall()
        return rows

    def insert_many(self, c: Any, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        c.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({','.join('?' * len(columns))})",
                      rows)

    def insert_id(self, c: Any, insert: str, params: Sequence[Any], key: str) -> int:
        return int(c.execute(insert, params).lastrowid or 0)

    def delete_returning(self, c: Any, table: str, where: str, params: Sequence[Any],
                         columns: str) -> list[Any]:
        rows = c.execute(f"SELECT {columns} FROM {table} WHERE {where}", params).fetchall()
        if rows:
            c.execute(f"DELETE FROM {table} WHERE {where}", params)
        return rows

    def bump_generation(self, c: Any) -> int:
        c.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
        return int(c.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])

    def next_pids(self, c: Any, n: int) -> list[int]:
        # AUTOINCREMENT keeps the largest id ever used in sqlite_sequence, so ids of removed
        # passages are never handed out again.
        row = c.execute("SELECT seq FROM sqlite_sequence WHERE name = 'passages'").fetchone()
        first = (row[0] if row else 0) + 1
        return list(range(first, first + n))

    def lock_documents(self, c: Any, keys: Iterable[tuple[str, str]]) -> None:
        return None  # the write transaction already holds the database's write lock

    def objects(self, c: Any) -> set[str]:
        return {r[0] for r in c.execute("SELECT name FROM sqlite_master").fetchall()}

    def legacy_version(self, c: Any, objects: set[str]) -> int | None:
        if "meta" not in objects:
            return None
        row = c.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else None

    def integrity(self, c: Any) -> list[str]:
        return sqlite_integrity(c)


class _SegmentVectors:
    """Vectors as float32 blobs per segment (``segment_vectors``), in parts of at most
    ``VECTOR_PART_BYTES``; the segment cache loads them with their segment, so searches run on
    its in-memory ``VectorBlocks``. Rows of dead passages stay until their segment is merged."""

    def __init__(self, store: SQLiteStore) -> None:
        self._s = store

    def meta_rows(self) -> list[tuple[str, str]]:
        return []

    def cache_model(self) -> tuple[str, int]:
        return self._s.embedder, self._s.dimension

    def segment(self, c: Any, ids: Sequence[int], model: str, dimension: int) -> np.ndarray:
        parts: dict[int, list[np.ndarray]] = {s: [] for s in ids}
        for cond, params in self._s.dialect.where_in("segment", list(ids)):
            q = f"SELECT segment, vecs FROM segment_vectors WHERE model = ? AND {cond} ORDER BY segment, part"
            for seg, blob in c.execute(q, [model, *params]):
                parts[seg].append(np.frombuffer(blob, dtype=np.float32).reshape(-1, dimension))
        missing = [s for s, p in parts.items() if not p]
        if missing:
            raise StoreError(f"segment {missing[0]} has no vectors for {model!r}")
        joined = [p for s in ids for p in parts[s]]
        return joined[0] if len(joined) == 1 else np.concatenate(joined)

    def write(self, c: Any, segment: int, pids: np.ndarray, sigs: np.ndarray, vectors: np.ndarray,
              model: str) -> None:
        mat = np.ascontiguousarray(vectors, dtype=np.float32)
        rows = max(1, VECTOR_PART_BYTES // max(1, mat.shape[1] * 4)) if mat.ndim == 2 else len(mat)
        c.executemany("INSERT INTO segment_vectors (segment, model, part, vecs) VALUES (?, ?, ?, ?)",
                      [(segment, model, i, mat[start : start + rows].tobytes())
                       for i, start in enumerate(range(0, max(len(mat), 1), rows))])

    def drop(self, c: Any, pids: list[int]) -> None:
        return None  # tombstones hide them; the merge of their segment drops them

    def drop_segments(self, c: Any, ids: Sequence[int]) -> None:
        for cond, params in self._s.dialect.where_in("segment", list(ids)):
            c.execute(f"DELETE FROM segment_vectors WHERE {cond}", params)

    def switch(self, c: Any, model: str, dimension: int, vectors: dict[int, np.ndarray]) -> None:
        live = {r[0] for r in c.execute("SELECT pid FROM passages")}
        zero = np.zeros(dimension, dtype=np.float32)
        for sid, pids_blob in c.execute("SELECT id, pids FROM segments").fetchall():
            pids = decode(pids_blob, PID).tolist()
            # Rows of dead passages keep a zero vector: they are never read.
            mat = np.array([vectors[p] if p in live else zero for p in pids],
                           dtype=np.float32).reshape(len(pids), dimension)
            c.execute("DELETE FROM segment_vectors WHERE segment = ? AND model = ?", (sid, model))
            self.write(c, sid, np.asarray(pids), np.zeros(0), mat, model)
        c.execute("DELETE FROM segment_vectors WHERE model != ?", (model,))

    def search(self, c: Any, sigs: Iterable[int], query: np.ndarray,
               k: int) -> tuple[np.ndarray, np.ndarray]:
        vectors = self._s._cache.vectors
        if vectors is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        return vectors.search(sigs, query, k)

    def sums(self, c: Any, sigs: Iterable[int]) -> dict[int, tuple[np.ndarray, int]]:
        vectors = self._s._cache.vectors
        return {} if vectors is None else vectors.sums(sigs)

    def get(self, c: Any, pids: Iterable[int]) -> dict[int, np.ndarray]:
        vectors = self._s._cache.vectors
        return {} if vectors is None else vectors.get(pids)

    def matrix(self, c: Any, pids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        vectors = self._s._cache.vectors
        if vectors is None:
            return np.zeros(0, dtype=np.int64), np.zeros((0, max(1, self._s.dimension)), dtype=np.float32)
        return vectors.matrix(pids)

    def close(self) -> None:
        return None


class SQLiteStore(SQLStore):
    """One SQLite file; safe for many reader processes and serialised writers."""

    dialect = SQLiteDialect()

    def __init__(
        self,
        path: str | Path,
        *,
        analyzer: str | None = None,
        embedder: str | None = None,
        dimension: int = 0,
        create_embedder: tuple[str, int] = ("none", 0),
        busy_timeout_ms: int = 30_000,
        background_merges: bool = True,
    ) -> None:
        """Open or create the store. ``embedder``/``dimension`` insist on a model (an existing
        store made with another one is an error); ``create_embedder`` is the model a new store
        gets when ``embedder`` is None. ``background_merges`` (the default) folds segments on a
        thread of the handle's own (see ``_merge_runner``) instead of inside the write call."""
        super().__init__(embedder, dimension, create_embedder)
        self.path = self._where = str(path)
        self.label = self.path
        self.lineage = f"sqlite:{Path(self.path).resolve()}"
        self._busy_timeout_ms = busy_timeout_ms
        self._vectors = _SegmentVectors(self)
        #: Taken around every write transaction of this handle's connections (the writer's and
        #: the merge thread's): in-process they queue here and wake at once, instead of meeting
        #: in SQLite's busy handler, which sleeps in growing steps between retries.
        self._write_gate = threading.Lock()
        try:
            self._main = self._connect()
            self._main.execute("BEGIN IMMEDIATE")
            try:
                meta = self._open_schema(self._main, analyzer,
                                         f"{self.path} is an SQLite file but not an evidex store")
                self._main.execute("COMMIT")
            except BaseException:
                self._main.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open {self.path} as an evidex store: {exc}") from None
        self.analyzer = self._adopt(meta, analyzer, embedder)
        self._merges = (Merger(self._merge_connection, self._merge_due) if background_merges
                        else InlineMerges(self._merge_inline))

    @property
    def _conn(self) -> sqlite3.Connection:
        """The handle's connection (reads and writes); StoreError once the store is closed."""
        if self._closed:
            raise StoreError("the store is closed")
        return self._main

    def _connect(self) -> sqlite3.Connection:
        c = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                            timeout=self._busy_timeout_ms / 1000)
        c.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
        c.execute("PRAGMA journal_mode = WAL")
        c.execute("PRAGMA synchronous = NORMAL")
        c.execute("PRAGMA foreign_keys = ON")
        # Deleted rows are overwritten, not left in free pages: `remove` erases (SQLite builds
        # differ in the default). It costs merges some time: freeing a segment row zeroes its
        # overflow pages.
        c.execute("PRAGMA secure_delete = ON")
        # Reads go through a memory map and a 64 MiB page cache: postings blobs and the small
        # document rows are read at random on every query.
        c.execute("PRAGMA cache_size = -65536")
        c.execute("PRAGMA mmap_size = 4294967296")
        return c

    # -- transactions ---------------------------------------------------------------------------
    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            c = self._conn
            c.execute("BEGIN")
            try:
                yield c
            finally:
                c.execute("COMMIT")

    @contextmanager
    def _transaction(self, exclusive: bool, conn: sqlite3.Connection | None) -> Iterator[sqlite3.Connection]:
        """On the handle's connection (under ``_lock``) or the merge thread's; every write is
        exclusive in SQLite."""
        with self._lock if conn is None else nullcontext(), self._write_gate:
            c = self._conn if conn is None else conn
            c.execute("BEGIN IMMEDIATE")
            try:
                yield c
            except BaseException:
                c.execute("ROLLBACK")
                raise

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self._conn

    # -- merging --------------------------------------------------------------------------------
    def _merge_inline(self, budget: int) -> None:
        with self._lock:
            self._merge_due(self._conn, budget)

    def _merge_connection(self) -> sqlite3.Connection:
        """The merge thread's connection. SQLite's automatic checkpoint runs inside the commit
        that crosses its threshold; inside a merge's commit it would hold the in-process write
        lock, and the next write would wait for the whole checkpoint. The merge thread
        checkpoints after releasing the lock instead."""
        c = self._connect()
        c.execute("PRAGMA wal_autocheckpoint = 0")
        # No memory map: a connection drops its whole map when it sees another connection's
        # commit (SQLite unmaps on any change it did not make), which the merge thread does on
        # every plan; its reads are small segments.
        c.execute("PRAGMA mmap_size = 0")
        return c

    def _merge(self, conn: sqlite3.Connection, ids: list[int]) -> None:
        """Plan in a read snapshot of ``conn`` (writers go on meanwhile), then commit: a small
        merge on the handle's connection, a large one on ``conn``."""
        conn.execute("BEGIN")
        try:
            plan = self._plan_merge(conn, ids)
        finally:
            conn.execute("COMMIT")
        if plan is None:
            return
        if conn is self._conn or plan.packed:
            done = self._commit_on_handle(plan)
        else:
            # A large merge writes a row per term, long enough that searches should not wait
            # for it: the next transaction of the handle pays the remap instead.
            with self._write(conn=conn) as tx:
                done = self._commit_merge(tx, plan)
        if done and conn is not self._conn:
            # PASSIVE: copies what it can without waiting for readers or writers, which go on
            # meanwhile (the handle's own commits still checkpoint automatically).
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def _commit_on_handle(self, plan: PendingMerge) -> bool:
        """Commit a small merge on the handle's own connection. Committed on another connection,
        it would be a change the handle's connection had not made, and SQLite then unmaps that
        connection's whole memory map at its next transaction, inside the next search or write.
        Without the automatic checkpoint, which would otherwise run inside this commit, under
        the lock; the merge thread checkpoints after releasing it."""
        with self._lock:
            self._conn.execute("PRAGMA wal_autocheckpoint = 0")
            try:
                with self._write() as tx:
                    return self._commit_merge(tx, plan)
            finally:
                self._conn.execute(f"PRAGMA wal_autocheckpoint = {_AUTOCHECKPOINT_PAGES}")

    def _pause(self) -> None:
        """Between the steps of a merge plan: wait while the handle's connection is in use (a
        search or write holds ``_lock``), up to ``_YIELD_SECONDS``.

        The merge thread shares the interpreter lock with the threads that search and write,
        and Python hands it over only every few milliseconds, so a search or write that
        overlapped a plan would take several times its own CPU time. Waiting here lets the one
        under way finish undisturbed; after the time limit the plan goes on even under unbroken
        load, so merges cannot starve. Free when the caller holds the lock (inline merges,
        optimize)."""
        if self._lock.acquire(timeout=_YIELD_SECONDS):
            self._lock.release()

    # -- inspection -----------------------------------------------------------------------------
    def _stats_location(self) -> dict[str, object]:
        return {"backend": "sqlite", "path": self.path}

    def _stats_extra(self, c: Any, meta: dict[str, str]) -> dict[str, object]:
        return {"file_bytes": Path(self.path).stat().st_size if Path(self.path).exists() else 0}

    def _close_connections(self) -> None:
        self._main.close()
