"""The embedded backend: one SQLite file in WAL mode.

Layout (see ``_SCHEMA``): documents and passages as ordinary rows, superseded versions in
``history``, and the keyword index as immutable segments: one row of per-passage arrays per
segment plus one row of (passage ids, term frequencies) blobs per (term, segment). Every write is
one ``BEGIN IMMEDIATE`` transaction that changes rows, segments, tombstones, signature counts and
the generation counter together, so a reader (in any process) sees either all of it or none.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..model import IngestReport, StoreError
from ._contract import (
    DocumentWrite,
    HistoryEntry,
    MissingVectors,
    Signature,
    SourceEntry,
    StoredDocument,
    StoredPassage,
)
from ._integrity import sqlite_integrity
from ._merger import Merger
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
    merge_budget,
    merge_postings,
    next_merge,
    segment_from_rows,
)

__all__ = ["MissingVectors", "SQLiteStore"]

SCHEMA_VERSION = 5

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE signatures (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    groups TEXT NOT NULL,
    visibility TEXT NOT NULL,
    language TEXT,
    tags TEXT NOT NULL,
    passages INTEGER NOT NULL DEFAULT 0,
    total_length INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE documents (
    dkey INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    version TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    meta TEXT NOT NULL,
    split TEXT NOT NULL,
    sig INTEGER NOT NULL REFERENCES signatures(id),
    indexed_at TEXT NOT NULL,
    UNIQUE (tenant, doc_id)
);
CREATE TABLE document_texts (
    dkey INTEGER PRIMARY KEY REFERENCES documents(dkey),
    text TEXT NOT NULL
);
CREATE TABLE passages (
    pid INTEGER PRIMARY KEY AUTOINCREMENT,
    dkey INTEGER NOT NULL REFERENCES documents(dkey),
    number INTEGER NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    length INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    anchor TEXT,
    page INTEGER,
    flags TEXT NOT NULL DEFAULT '[]',
    text TEXT NOT NULL,
    UNIQUE (dkey, number)
);
CREATE TABLE history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    version TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    meta TEXT NOT NULL,
    split TEXT NOT NULL,
    text TEXT NOT NULL,
    superseded_at TEXT NOT NULL
);
CREATE INDEX history_doc ON history (tenant, doc_id);
CREATE TABLE segments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    n INTEGER NOT NULL,
    pids BLOB NOT NULL,
    sigs BLOB NOT NULL,
    lengths BLOB NOT NULL,
    dkeys BLOB NOT NULL,
    numbers BLOB NOT NULL,
    terms TEXT,
    term_ends BLOB,
    term_pids BLOB,
    term_tfs BLOB
);
CREATE TABLE postings (
    id INTEGER PRIMARY KEY,
    term TEXT NOT NULL,
    segment INTEGER NOT NULL,
    pids BLOB NOT NULL,
    tfs BLOB NOT NULL
);
CREATE UNIQUE INDEX postings_term ON postings (term, segment);
CREATE INDEX postings_segment ON postings (segment);
CREATE TABLE tombstones (seq INTEGER PRIMARY KEY AUTOINCREMENT, pid INTEGER NOT NULL);
CREATE INDEX tombstones_pid ON tombstones (pid);
CREATE TABLE source_documents (
    tenant TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    source TEXT NOT NULL,
    item TEXT NOT NULL,
    stamp TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    PRIMARY KEY (tenant, doc_id)
) WITHOUT ROWID;
CREATE INDEX source_documents_source ON source_documents (source);
CREATE TABLE segment_vectors (
    id INTEGER PRIMARY KEY,
    segment INTEGER NOT NULL,
    model TEXT NOT NULL,
    part INTEGER NOT NULL,
    vecs BLOB NOT NULL
);
CREATE UNIQUE INDEX segment_vectors_key ON segment_vectors (segment, model, part);
"""

#: Tables whose rows hold blobs of up to hundreds of megabytes are rowid tables with their key in
#: a separate index (schema version 4). As WITHOUT ROWID tables (versions <= 3) their key
#: b-tree's interior cells were whole rows, and SQLite reads a cell's entire overflowing payload
#: to compare keys: every lookup read megabytes of neighbouring blobs (at 1M passages, a term
#: found in no segment took 5-22 ms to look up, a common word's 5 MB row 10-60 ms; now 0.02 and
#: 3.5-11 ms). SQLite's own advice is to keep WITHOUT ROWID rows under ~1/20 of a page.
_BLOB_TABLES = {  # table: (key columns, other columns)
    "postings": ("term, segment", "pids, tfs"),
    "segment_vectors": ("segment, model, part", "vecs"),
}

#: segment_vectors of version 3 (the upgrade from version 2 goes through it).
_SEGMENT_VECTORS_V3 = (
    "CREATE TABLE segment_vectors (segment INTEGER NOT NULL, model TEXT NOT NULL, "
    "part INTEGER NOT NULL, vecs BLOB NOT NULL, PRIMARY KEY (segment, model, part)) WITHOUT ROWID"
)


def _schema_of(table: str) -> list[str]:
    """The statements of ``_SCHEMA`` that create ``table`` and its indexes."""
    return [st for st in _SCHEMA.split(";")
            if re.search(rf"\b(TABLE|ON) {table}\b", st)]

#: Bytes of vectors per segment_vectors row. SQLite refuses blobs over 1e9 bytes (SQLITE_MAX_LENGTH),
#: which one segment of 1M x 384 float32 exceeds (1.5 GB: `optimize` failed on such a store), so a
#: segment's vectors are stored in parts of consecutive rows.
VECTOR_PART_BYTES = 256 << 20


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _sig_key(tenant: str, groups: Iterable[str], visibility: str, language: str | None,
             tags: Iterable[str]) -> str:
    return json.dumps([tenant, sorted(groups), visibility, language, sorted(tags)],
                      ensure_ascii=False)


class _Retry(Exception):
    """Internal: the transaction saw a state its input did not cover."""


class _View:
    """ReadView over one SQLite read transaction."""

    def __init__(self, store: SQLiteStore) -> None:
        self._s = store
        self._c = store._conn
        cache = store._cache
        self.sig, self.length, self.dkey, self.number = cache.columns()
        self.generation = cache.generation
        self.deaths_mark = cache.deaths_mark()

    # -- SegmentSource ------------------------------------------------------------------------
    def segment_ids(self) -> list[int]:
        return [r[0] for r in self._c.execute("SELECT id FROM segments")]

    def segment_arrays(self, ids: Sequence[int]) -> Iterator[SegmentArrays]:
        for sid in ids:
            row = self._c.execute(
                "SELECT pids, sigs, lengths, dkeys, numbers, terms, term_ends, term_pids, term_tfs "
                "FROM segments WHERE id = ?",
                (sid,),
            ).fetchone()
            packed = FlatPostings.from_stored(*row[5:]) if row[5] is not None else None
            vectors = None
            if self._s.embedder != "none":
                vectors = _get_vectors(self._c, [sid], self._s.embedder, self._s.dimension)[sid]
            yield SegmentArrays(sid, *(decode(b, PID) for b in row[:5]), packed=packed,
                                vectors=vectors)

    def tombstones_after(self, seq: int) -> tuple[np.ndarray, int]:
        rows = self._c.execute(
            "SELECT seq, pid FROM tombstones WHERE seq > ? ORDER BY seq", (seq,)
        ).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), seq
        return np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)), rows[-1][0]

    def all_signatures(self) -> list[Signature]:
        return [
            Signature(r[0], r[1], frozenset(json.loads(r[2])), r[3], r[4],
                      frozenset(json.loads(r[5])), r[6], r[7])
            for r in self._c.execute(
                "SELECT id, tenant, groups, visibility, language, tags, passages, total_length "
                "FROM signatures WHERE passages > 0"
            )
        ]

    def vector_model(self) -> tuple[str, int]:
        return self._s.embedder, self._s.dimension

    def fetch_postings(self, term: str) -> list[tuple[np.ndarray, np.ndarray]]:
        return [
            (decode(p, PID), decode(t, TF))
            for p, t in self._c.execute("SELECT pids, tfs FROM postings WHERE term = ?", (term,))
        ]

    # -- ReadView -----------------------------------------------------------------------------
    def signatures(self, tenant: str) -> Sequence[Signature]:
        return self._s._cache.by_tenant.get(tenant, ())

    def postings(self, term: str) -> Sequence[tuple[np.ndarray, np.ndarray]]:
        return self._s._cache.postings(self, term)

    def deaths_since(self, mark: tuple[object, int]) -> np.ndarray | None:
        return self._s._cache.deaths_since(mark)

    def doc_ids(self, dkeys: Iterable[int]) -> dict[int, str]:
        known = self._s._cache.doc_ids
        missing = [int(k) for k in set(dkeys) if k not in known]
        for chunk in _chunks(missing):
            q = f"SELECT dkey, doc_id FROM documents WHERE dkey IN ({','.join('?' * len(chunk))})"
            known.update(self._c.execute(q, chunk).fetchall())
        return known

    def documents(self, dkeys: Iterable[int]) -> dict[int, StoredDocument]:
        return self._s._cache.documents(dkeys, partial(self._rows, f"{_DOC_SELECT} WHERE dkey"))

    def passages(self, pids: Iterable[int]) -> dict[int, StoredPassage]:
        return self._s._cache.passages(pids, partial(self._rows, f"{_PASSAGE_SELECT} WHERE pid"))

    def _rows(self, select: str, keys: list[int]) -> Iterator[tuple[Any, ...]]:
        """``select`` (ending in a key column) IN ``keys``, in chunks of SQLite's variables."""
        for chunk in _chunks(keys):
            yield from self._c.execute(f"{select} IN ({','.join('?' * len(chunk))})", chunk)

    def document(self, tenant: str, doc_id: str) -> StoredDocument | None:
        r = self._c.execute(f"{_DOC_SELECT} WHERE tenant = ? AND doc_id = ?",
                            (tenant, doc_id)).fetchone()
        return StoredDocument.from_row(r) if r else None

    def vector_search(self, sigs: Iterable[int], query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        vectors = self._s._cache.vectors
        if vectors is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        return vectors.search(sigs, query, k)

    def document_text(self, dkey: int) -> str:
        r = self._c.execute("SELECT text FROM document_texts WHERE dkey = ?", (dkey,)).fetchone()
        return r[0] if r else ""

    def passage(self, dkey: int, number: int) -> StoredPassage | None:
        r = self._c.execute(f"{_PASSAGE_SELECT} WHERE dkey = ? AND number = ?",
                            (dkey, number)).fetchone()
        return StoredPassage.from_row(r) if r else None

    def document_passages(self, dkey: int) -> list[StoredPassage]:
        return [StoredPassage.from_row(r) for r in self._c.execute(
            f"{_PASSAGE_SELECT} WHERE dkey = ? ORDER BY number", (dkey,))]

    def passage_vectors(self, pids: Iterable[int]) -> dict[int, np.ndarray]:
        vectors = self._s._cache.vectors
        return {} if vectors is None else vectors.get(pids)

    def history(self, tenant: str, doc_id: str) -> list[HistoryEntry]:
        return [
            HistoryEntry(*r)
            for r in self._c.execute(
                "SELECT version, content_sha256, text, split, superseded_at, meta FROM history "
                "WHERE tenant = ? AND doc_id = ? ORDER BY id DESC",
                (tenant, doc_id),
            )
        ]


_DOC_SELECT = (
    "SELECT d.dkey, d.tenant, d.doc_id, d.version, d.content_sha256, d.meta, d.split, "
    "d.indexed_at FROM documents d"
)
_PASSAGE_SELECT = (
    "SELECT pid, dkey, number, start, end, text, heading_path, anchor, page, flags FROM passages"
)


#: The longest a merge plan waits for the handle between two of its steps (``_yield_to_handle``).
_YIELD_SECONDS = 0.05

#: SQLite's default automatic checkpoint threshold (log pages), which the handle's connection keeps.
_AUTOCHECKPOINT_PAGES = 1000


def _bump_generation(c: sqlite3.Connection) -> None:
    """Readers (in any process) compare the generation to refresh their segment caches."""
    c.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")


@dataclass(frozen=True, slots=True)
class _MergePlan:
    """A merged segment computed from a snapshot, to be committed if its inputs still exist."""

    ids: list[int]
    large: list[int]  # the inputs whose postings are rows of their own
    cols: list[np.ndarray]
    postings: FlatPostings
    vectors: np.ndarray | None
    model: str
    dead: np.ndarray  # tombstoned passages the merged segment leaves out
    tomb_seq: int  # the last tombstone the plan saw


def _tombstoned(c: sqlite3.Connection, where: str, args: tuple[int, ...]) -> np.ndarray:
    """The passage ids of the tombstones ``where`` selects, as one string parsed by numpy: a
    merge reads ~24,000 of them at 1M, which took 12-16 ms of interpreter time as Python rows
    (a tuple each) and 3 ms this way, time the merge thread otherwise takes from searches and
    writes (see ``SQLiteStore._yield_to_handle``)."""
    text = c.execute(f"SELECT group_concat(pid) FROM tombstones WHERE {where}", args).fetchone()[0]
    return np.array([], dtype=np.int64) if text is None else np.fromstring(text, dtype=np.int64, sep=",")


def _chunks(items: list[int], size: int = 500) -> Iterator[list[int]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _put_vectors(c: sqlite3.Connection, segment: int, model: str, vectors: np.ndarray) -> None:
    mat = np.ascontiguousarray(vectors, dtype=np.float32)
    rows = max(1, VECTOR_PART_BYTES // max(1, mat.shape[1] * 4)) if mat.ndim == 2 else len(mat)
    c.executemany(
        "INSERT INTO segment_vectors (segment, model, part, vecs) VALUES (?, ?, ?, ?)",
        [(segment, model, i, mat[start : start + rows].tobytes())
         for i, start in enumerate(range(0, max(len(mat), 1), rows))],
    )


def _get_vectors(c: sqlite3.Connection, segments: Sequence[int], model: str,
                 dimension: int) -> dict[int, np.ndarray]:
    """Each segment's vectors, its parts joined in order; a segment without any is an error."""
    marks = ",".join("?" * len(segments))
    parts: dict[int, list[np.ndarray]] = {}
    for seg, _, blob in c.execute(
        f"SELECT segment, part, vecs FROM segment_vectors WHERE model = ? AND segment IN ({marks}) "
        "ORDER BY segment, part", [model, *segments],
    ):
        parts.setdefault(seg, []).append(np.frombuffer(blob, dtype=np.float32).reshape(-1, dimension))
    missing = [s for s in segments if s not in parts]
    if missing:
        raise StoreError(f"segment {missing[0]} has no vectors for {model!r}")
    return {s: p[0] if len(p) == 1 else np.concatenate(p) for s, p in parts.items()}


class SQLiteStore:
    """One SQLite file; safe for many reader processes and serialised writers."""

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
        thread of the handle's own (see ``_merger``) instead of inside the write call."""
        self.path = str(path)
        self.embedder, self.dimension = (embedder, dimension) if embedder else create_embedder
        self._busy_timeout_ms = busy_timeout_ms
        self._closed = False
        try:
            self._main = self._connect()
            self.analyzer = self._init_schema(analyzer, embedder)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open {self.path} as an evidex store: {exc}") from None
        self._lock = threading.RLock()
        #: Taken around every write transaction of this handle's connections (the writer's and
        #: the merge thread's): in-process they queue here and wake at once, instead of meeting
        #: in SQLite's busy handler, which sleeps in steps of up to 100 ms. (Only large merges
        #: still commit on the merge thread's connection; see ``_merge_due``.)
        self._write_gate = threading.Lock()
        self._cache = SegmentCache()
        self._merger = Merger(self._merge_connection, self._merge_due) if background_merges else None

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
        # differ in the default; the interpreter's own has it on). It costs merges time: freeing
        # a segment row zeroes its overflow pages (a 2.5 MB fold deleting 8 rows: 5.5 ms of
        # its delete against 0.5 ms without, isolated on the benchmark VM).
        c.execute("PRAGMA secure_delete = ON")
        # Reads go through a memory map and a 64 MiB page cache: postings blobs and the
        # small document rows are read at random on every query.
        c.execute("PRAGMA cache_size = -65536")
        c.execute("PRAGMA mmap_size = 4294967296")
        return c

    # -- schema -------------------------------------------------------------------------------
    def _init_schema(self, analyzer: str | None, embedder: str | None) -> str:
        c = self._conn
        c.execute("BEGIN IMMEDIATE")
        try:
            exists = c.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
            ).fetchone()
            if not exists:
                other = c.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
                if other:
                    raise StoreError(f"{self.path} is an SQLite file but not an evidex store")
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        c.execute(stmt)
                chosen = analyzer or "exact"
                c.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("schema_version", str(SCHEMA_VERSION)), ("analyzer", chosen),
                     ("generation", "0"), ("created_at", _now()), ("embedder", self.embedder),
                     ("dimension", str(self.dimension))],
                )
                c.execute("COMMIT")
                return chosen
            meta = dict(c.execute("SELECT key, value FROM meta").fetchall())
            found = meta.get("schema_version")
            if meta.get("schema_version") == "1":
                # Version 2 added the source_documents table (sync); nothing else changed.
                for stmt in _SCHEMA.split(";"):
                    if "source_documents" in stmt:
                        c.execute(stmt)
                meta["schema_version"] = "2"
            if meta.get("schema_version") == "2":
                # Version 3 stores a segment's vectors in parts (see VECTOR_PART_BYTES).
                c.execute("ALTER TABLE segment_vectors RENAME TO segment_vectors_v2")
                c.execute(_SEGMENT_VECTORS_V3)
                c.execute("INSERT INTO segment_vectors (segment, model, part, vecs) "
                          "SELECT segment, model, 0, vecs FROM segment_vectors_v2")
                c.execute("DROP TABLE segment_vectors_v2")
                meta["schema_version"] = "3"
            if meta.get("schema_version") == "3":
                # Version 4 moves the blob tables' keys out of their rows (see _BLOB_TABLES).
                for table, (key, rest) in _BLOB_TABLES.items():
                    for (index,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                              "AND tbl_name = ? AND sql IS NOT NULL", (table,)).fetchall():
                        c.execute(f"DROP INDEX {index}")
                    c.execute(f"ALTER TABLE {table} RENAME TO {table}_v3")
                    for stmt in _schema_of(table):
                        c.execute(stmt)
                    c.execute(f"INSERT INTO {table} ({key}, {rest}) "
                              f"SELECT {key}, {rest} FROM {table}_v3 ORDER BY {key}")
                    c.execute(f"DROP TABLE {table}_v3")
                meta["schema_version"] = "4"
            if meta.get("schema_version") == "4":
                # Version 5 indexes tombstones by passage: a merge deletes the tombstones of the
                # passages it drops, and without the index each 500-id DELETE scanned the whole
                # table (5 ms per chunk of a fold at 1M, under the write lock; see _commit_merge).
                c.execute("CREATE INDEX IF NOT EXISTS tombstones_pid ON tombstones (pid)")
                meta["schema_version"] = "5"
            if meta.get("schema_version") != found:
                c.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                          (meta["schema_version"],))
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        version = int(meta.get("schema_version", "0"))
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {version}; this evidex supports up to "
                f"{SCHEMA_VERSION}: upgrade evidex"
            )
        stored = meta["analyzer"]
        if analyzer is not None and analyzer != stored:
            raise StoreError(
                f"{self.path} was created with the analyzer {stored!r}; it cannot be searched "
                f"with {analyzer!r} (re-create the store to change analyzers)"
            )
        model = meta.get("embedder", "none")
        if embedder is not None and embedder != model:
            raise StoreError(
                f"{self.path} holds vectors of the embedding model {model!r}, not {embedder!r}; "
                f"open it without choosing a model, or convert it with `evidex reembed --model "
                f"{embedder}`"
            )
        self.embedder, self.dimension = model, int(meta.get("dimension", "0"))
        return stored

    # -- reading ------------------------------------------------------------------------------
    @contextmanager
    def read(self) -> Iterator[_View]:
        with self._lock:
            c = self._conn
            c.execute("BEGIN")
            try:
                gen = int(c.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])
                view = _View(self)
                if gen != self._cache.generation:
                    meta = dict(c.execute(
                        "SELECT key, value FROM meta WHERE key IN ('embedder', 'dimension')"
                    ).fetchall())
                    self.embedder = meta.get("embedder", "none")
                    self.dimension = int(meta.get("dimension", "0"))
                    self._cache.refresh(view, gen)
                    view = _View(self)  # arrays may have been reallocated by the refresh
                yield view
            finally:
                c.execute("COMMIT")

    # -- writing ------------------------------------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on the handle's connection (see ``_transaction``)."""
        with self._lock, self._transaction(self._conn) as c:
            yield c

    @contextmanager
    def _transaction(self, c: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        """One write transaction on ``c`` (the handle's or the merge thread's connection); it
        bumps the generation (readers refresh their caches) only when it changed something, so
        a no-op re-ingest, or a merge that gives up, leaves the file untouched."""
        with self._write_gate:
            c.execute("BEGIN IMMEDIATE")
            before = c.total_changes
            try:
                yield c
            except BaseException:
                c.execute("ROLLBACK")
                raise
            if c.total_changes != before:
                _bump_generation(c)
                c.execute("COMMIT")
            else:
                c.execute("ROLLBACK")

    def _signature(self, c: sqlite3.Connection, w: DocumentWrite) -> int:
        d = w.document
        key = _sig_key(d.tenant, d.groups, d.visibility, d.language, d.tags)
        row = c.execute("SELECT id FROM signatures WHERE key = ?", (key,)).fetchone()
        if row:
            return int(row[0])
        cur = c.execute(
            "INSERT INTO signatures (key, tenant, groups, visibility, language, tags) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (key, d.tenant, json.dumps(sorted(d.groups)), d.visibility, d.language,
             json.dumps(sorted(d.tags))),
        )
        return int(cur.lastrowid or 0)

    def _drop_passages(self, c: sqlite3.Connection, dkey: int, sig: int) -> None:
        rows = c.execute("SELECT pid, length FROM passages WHERE dkey = ?", (dkey,)).fetchall()
        if not rows:
            return
        c.executemany("INSERT INTO tombstones (pid) VALUES (?)", [(r[0],) for r in rows])
        c.execute(
            "UPDATE signatures SET passages = passages - ?, total_length = total_length - ? "
            "WHERE id = ?",
            (len(rows), sum(r[1] for r in rows), sig),
        )
        c.execute("DELETE FROM passages WHERE dkey = ?", (dkey,))

    def apply(self, writes: Sequence[DocumentWrite], *, keep_history: bool = True,
              sources: Sequence[SourceEntry] = ()) -> IngestReport:
        added = superseded = unchanged = written = 0
        if not writes and not sources:
            return IngestReport()
        if self._merger is not None:
            self._merger.check()  # a failed background merge is reported before writing more
        with self._write() as c:
            meta = dict(c.execute(
                "SELECT key, value FROM meta WHERE key IN ('embedder', 'dimension')").fetchall())
            if meta.get("embedder", "none") != self.embedder:
                # Another process re-embedded the store since our vectors were computed: the
                # caller must embed again with the store's model now.
                self.embedder = meta.get("embedder", "none")
                self.dimension = int(meta.get("dimension", "0"))
                raise MissingVectors(f"the store now uses the model {self.embedder!r}")
            seq = c.execute("SELECT seq FROM sqlite_sequence WHERE name = 'passages'").fetchone()
            next_pid = (seq[0] if seq else 0) + 1
            seg_rows: list[tuple[int, int, int, int, int, dict[str, int]]] = []
            vectors: list[np.ndarray | None] = []
            for w in writes:
                d = w.document
                version, sha, meta, split = w.index_key()
                row = c.execute(
                    "SELECT dkey, version, content_sha256, meta, split, sig FROM documents "
                    "WHERE tenant = ? AND doc_id = ?",
                    (d.tenant, d.id),
                ).fetchone()
                if row and tuple(row[1:5]) == (version, sha, meta, split):
                    unchanged += 1
                    continue
                sig = self._signature(c, w)
                if row:
                    dkey = int(row[0])
                    if keep_history:
                        c.execute(
                            "INSERT INTO history (tenant, doc_id, version, content_sha256, meta, "
                            "split, text, superseded_at) SELECT d.tenant, d.doc_id, d.version, "
                            "d.content_sha256, d.meta, d.split, t.text, ? FROM documents d "
                            "JOIN document_texts t USING (dkey) WHERE dkey = ?",
                            (_now(), dkey),
                        )
                    self._drop_passages(c, dkey, int(row[5]))
                    c.execute(
                        "UPDATE documents SET version = ?, content_sha256 = ?, meta = ?, "
                        "split = ?, sig = ?, indexed_at = ? WHERE dkey = ?",
                        (version, sha, meta, split, sig, _now(), dkey),
                    )
                    c.execute("UPDATE document_texts SET text = ? WHERE dkey = ?", (d.text, dkey))
                    superseded += 1
                else:
                    cur = c.execute(
                        "INSERT INTO documents (tenant, doc_id, version, content_sha256, meta, "
                        "split, sig, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (d.tenant, d.id, version, sha, meta, split, sig, _now()),
                    )
                    dkey = int(cur.lastrowid or 0)
                    c.execute("INSERT INTO document_texts (dkey, text) VALUES (?, ?)", (dkey, d.text))
                    added += 1
                prow = []
                total = 0
                for pw in w.passages:
                    p = pw.passage
                    prow.append((next_pid, dkey, p.number, p.start, p.end, pw.length, p.text,
                                 json.dumps(list(p.heading_path), ensure_ascii=False), p.anchor,
                                 p.page, json.dumps(list(pw.flags))))
                    seg_rows.append((next_pid, sig, pw.length, dkey, p.number, pw.terms))
                    vectors.append(pw.vector)
                    total += pw.length
                    next_pid += 1
                c.executemany(
                    "INSERT INTO passages (pid, dkey, number, start, end, length, text, "
                    "heading_path, anchor, page, flags) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    prow,
                )
                c.execute(
                    "UPDATE signatures SET passages = passages + ?, total_length = total_length + ? "
                    "WHERE id = ?",
                    (len(prow), total, sig),
                )
                written += len(prow)
            if seg_rows:
                self._write_segment(c, seg_rows, self._stack(vectors))
            self._put_sources(c, sources)
        if written:
            self._schedule_merges(merge_budget(written))
        return IngestReport(added, superseded, unchanged, written)

    @staticmethod
    def _put_sources(c: sqlite3.Connection, entries: Sequence[SourceEntry]) -> None:
        """Upsert entries; an entry equal to the stored one changes no row (so a no-op sync
        does not bump the generation)."""
        c.executemany(
            "INSERT INTO source_documents (tenant, doc_id, source, item, stamp, content_sha256) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, doc_id) DO UPDATE SET "
            "source = excluded.source, item = excluded.item, stamp = excluded.stamp, "
            "content_sha256 = excluded.content_sha256 WHERE source != excluded.source "
            "OR item != excluded.item OR stamp != excluded.stamp "
            "OR content_sha256 != excluded.content_sha256",
            [(e.tenant, e.doc_id, e.source, e.item, e.stamp, e.content_sha256) for e in entries],
        )

    def source_entries(self, source: str | None = None) -> list[SourceEntry]:
        with self._lock:
            q = "SELECT source, tenant, doc_id, item, stamp, content_sha256 FROM source_documents"
            rows = (self._conn.execute(q + " ORDER BY tenant, doc_id") if source is None else
                    self._conn.execute(q + " WHERE source = ? ORDER BY tenant, doc_id", (source,)))
            return [SourceEntry(*r) for r in rows.fetchall()]

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

    def _write_segment(self, c: sqlite3.Connection,
                       rows: list[tuple[int, int, int, int, int, dict[str, int]]],
                       vectors: np.ndarray | None) -> None:
        cols, postings = segment_from_rows(rows)
        self._insert_segment(c, cols, postings, vectors)

    def _insert_segment(self, c: sqlite3.Connection, cols: list[np.ndarray],
                        postings: FlatPostings, vectors: np.ndarray | None,
                        model: str | None = None) -> int:
        """Store one segment: small ones with their postings packed into the segment row (one
        write instead of hundreds of scattered index rows), large ones with a row per term."""
        n = len(cols[0])
        packed = postings.stored() if n <= PACK_LIMIT else (None, None, None, None)
        cur = c.execute(
            "INSERT INTO segments (n, pids, sigs, lengths, dkeys, numbers, terms, term_ends, "
            "term_pids, term_tfs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (n, *(encode(col, PID) for col in cols), *packed),
        )
        seg = int(cur.lastrowid or 0)
        if vectors is not None:
            _put_vectors(c, seg, model or self.embedder, vectors)
        if n > PACK_LIMIT:
            c.executemany(
                "INSERT INTO postings (term, segment, pids, tfs) VALUES (?, ?, ?, ?)",
                ((t, seg, encode(p, PID), encode(f, TF)) for t, p, f in postings.items()),
            )
        return seg

    def unchanged(self, writes: Sequence[DocumentWrite]) -> set[tuple[str, str]]:
        """(tenant, id) of the writes that would be no-ops now: lets the caller skip embedding
        them. ``apply`` checks again inside its transaction."""
        out: set[tuple[str, str]] = set()
        with self._lock:
            for w in writes:
                d = w.document
                row = self._conn.execute(
                    "SELECT version, content_sha256, meta, split FROM documents "
                    "WHERE tenant = ? AND doc_id = ?",
                    (d.tenant, d.id),
                ).fetchone()
                if row and tuple(row) == w.index_key():
                    out.add((d.tenant, d.id))
        return out

    def live_passages(self) -> list[tuple[int, str]]:
        """(passage id, text) of every live passage: what a re-embed must cover."""
        with self._lock:
            return self._conn.execute("SELECT pid, text FROM passages ORDER BY pid").fetchall()

    def switch_vectors(self, model: str, dimension: int, vectors: dict[int, np.ndarray]) -> bool:
        """Atomically replace every segment's vectors by ``model``'s. ``vectors`` must cover
        every live passage; returns False (changing nothing) if passages were added meanwhile,
        so the caller embeds those and tries again. Readers keep using the old vectors until
        this commits."""
        try:
            with self._write() as c:
                live = {r[0] for r in c.execute("SELECT pid FROM passages")}
                if not live.issubset(vectors):
                    raise _Retry
                zero = np.zeros(dimension, dtype=np.float32)
                for sid, pids_blob in c.execute("SELECT id, pids FROM segments").fetchall():
                    pids = decode(pids_blob, PID).tolist()
                    # Rows of dead passages keep a zero vector: they are never read.
                    mat = np.array([vectors[p] if p in live else zero for p in pids],
                                   dtype=np.float32).reshape(len(pids), dimension)
                    c.execute("DELETE FROM segment_vectors WHERE segment = ? AND model = ?", (sid, model))
                    _put_vectors(c, sid, model, mat)
                c.execute("DELETE FROM segment_vectors WHERE model != ?", (model,))
                c.executemany("UPDATE meta SET value = ? WHERE key = ?",
                              [(model, "embedder"), (str(dimension), "dimension")])
        except _Retry:
            return False
        self.embedder, self.dimension = model, dimension
        return True

    def remove(self, tenant: str, doc_id: str) -> bool:
        with self._write() as c:
            row = c.execute(
                "SELECT dkey, sig FROM documents WHERE tenant = ? AND doc_id = ?", (tenant, doc_id)
            ).fetchone()
            if not row:
                return False
            self._drop_passages(c, int(row[0]), int(row[1]))
            c.execute("DELETE FROM document_texts WHERE dkey = ?", (row[0],))
            c.execute("DELETE FROM documents WHERE dkey = ?", (row[0],))
            c.execute("DELETE FROM history WHERE tenant = ? AND doc_id = ?", (tenant, doc_id))
            c.execute("DELETE FROM source_documents WHERE tenant = ? AND doc_id = ?", (tenant, doc_id))
        return True

    def restore_history(self, entries: Sequence[tuple[str, str, HistoryEntry]]) -> None:
        if not entries:
            return
        with self._write() as c:
            c.executemany(
                "INSERT INTO history (tenant, doc_id, version, content_sha256, meta, split, text, "
                "superseded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(t, d, e.version, e.content_sha256, e.meta, e.split, e.text, e.superseded_at)
                 for t, d, e in entries])

    # -- merging ------------------------------------------------------------------------------
    def _schedule_merges(self, budget: int) -> None:
        """After a write: the merges the shared policy (``_segments.next_merge``) calls for, on
        the merger thread, or here when background merges are off."""
        if self._merger is not None:
            self._merger.request(budget)
        else:
            with self._lock:
                self._merge_due(self._conn, budget)

    def _merge_connection(self) -> sqlite3.Connection:
        """The merge thread's connection. SQLite's automatic checkpoint runs inside the commit
        that crosses 1,000 log pages; inside a merge's commit it would hold the in-process
        write lock, and the next supersede would wait for the whole checkpoint (1.2-1.3 s once,
        for the log of an `optimize`). The merge thread checkpoints after releasing the lock."""
        c = self._connect()
        c.execute("PRAGMA wal_autocheckpoint = 0")
        # No memory map: a connection drops its whole map when it sees another connection's
        # commit (SQLite unmaps on any change it did not make), which the merge thread does
        # on every plan; its reads are small segments.
        c.execute("PRAGMA mmap_size = 0")
        return c

    def settle(self) -> None:
        """Wait for the merges earlier writes asked for (a no-op without background merges)."""
        if self._merger is not None:
            self._merger.settle()

    def _merge_due(self, c: sqlite3.Connection, budget: int) -> None:
        """Run every merge the policy calls for under ``budget``, one transaction pair each."""
        while True:
            sizes = dict(c.execute("SELECT id, n FROM segments ORDER BY id").fetchall())
            ids = next_merge(sizes, budget)
            if ids is None:
                return
            c.execute("BEGIN")  # a read snapshot: writers go on while the merge is computed
            try:
                plan = self._plan_merge(c, ids)
            finally:
                c.execute("COMMIT")
            if plan is None:
                continue
            if c is self._conn or len(plan.cols[0]) <= PACK_LIMIT:
                done = self._commit_on_handle(plan)
            else:
                # A large one writes a row per term, long enough that searches should not wait
                # for it: the next transaction of the handle pays the remap instead.
                with self._transaction(c):
                    done = self._commit_merge(c, plan)
            if done and c is not self._conn:
                # PASSIVE: copies what it can without waiting for readers or writers, which
                # go on meanwhile (the writer's own commits still checkpoint automatically).
                c.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def _commit_on_handle(self, plan: _MergePlan) -> bool:
        """Commit a small merge on the handle's own connection (a few ms, one segment row).
        Committed on the merge connection, it was a change the handle's connection had not
        made, and SQLite then unmaps that connection's whole memory map at its next
        transaction: 20-25 ms of munmap inside the next supersede or search at 1M (their
        slowest, measured). Without SQLite's automatic checkpoint: a merge's commit crosses its
        1,000 log pages more often than a supersede's, and the checkpoint then ran inside the
        commit, under the lock (18 ms of a 37 ms supersede that waited, at 1M); the merge thread
        checkpoints after releasing the lock."""
        with self._lock:
            self._conn.execute("PRAGMA wal_autocheckpoint = 0")
            try:
                with self._write() as w:
                    return self._commit_merge(w, plan)
            finally:
                self._conn.execute(f"PRAGMA wal_autocheckpoint = {_AUTOCHECKPOINT_PAGES}")

    def optimize(self) -> None:
        """Merge every segment into one and drop all tombstoned postings."""
        self.settle()
        with self._write() as c:
            ids = [r[0] for r in c.execute("SELECT id FROM segments ORDER BY id")]
            tomb = c.execute("SELECT count(*) FROM tombstones").fetchone()[0]
            if len(ids) > 1 or (ids and tomb):
                plan = self._plan_merge(c, ids)
                if plan is not None:
                    self._commit_merge(c, plan)

    def _plan_merge(self, c: sqlite3.Connection, ids: list[int]) -> _MergePlan | None:
        """Read segments ``ids`` and build their merged segment without the passages dead now
        (inside a transaction of ``c``; None if a segment is gone, i.e. merged meanwhile)."""
        marks = ",".join("?" * len(ids))
        rows = c.execute(
            "SELECT id, pids, sigs, lengths, dkeys, numbers, terms, term_ends, term_pids, "
            f"term_tfs FROM segments WHERE id IN ({marks})",
            ids,
        ).fetchall()
        if len(rows) != len(ids):
            return None
        meta = dict(c.execute(
            "SELECT key, value FROM meta WHERE key IN ('embedder', 'dimension')").fetchall())
        model, dimension = meta.get("embedder", "none"), int(meta.get("dimension", "0"))
        cols = [np.concatenate([decode(r[i], PID) for r in rows]) for i in range(1, 6)]
        vecs = None
        if model != "none":
            vmap = _get_vectors(c, ids, model, dimension)
            vecs = np.concatenate([vmap[r[0]] for r in rows])
        # Only the tombstones in these segments' id range: those of passages in large segments
        # that are never merged pile up (18,700 in the 1M benchmark store), and turning all of
        # them into Python rows on every small merge took ~20 ms of the merge thread's GIL time.
        tomb_seq = c.execute("SELECT coalesce(max(seq), 0) FROM tombstones").fetchone()[0]
        lo, hi = (int(cols[0].min()), int(cols[0].max())) if len(cols[0]) else (0, -1)
        tomb = _tombstoned(c, "pid BETWEEN ? AND ?", (lo, hi))
        self._yield_to_handle()
        dead_mask = np.isin(cols[0], tomb)
        dead = cols[0][dead_mask]
        keep = ~dead_mask
        order = np.argsort(cols[0][keep], kind="stable")
        cols = [col[keep][order] for col in cols]
        if vecs is not None:
            vecs = vecs[keep][order]
        parts = [FlatPostings.from_stored(*r[6:]) for r in rows if r[6] is not None]
        self._yield_to_handle()
        large = [r[0] for r in rows if r[6] is None]
        if large:
            by_segment: dict[int, PackedPostings] = {}
            marks_l = ",".join("?" * len(large))
            q = f"SELECT segment, term, pids, tfs FROM postings WHERE segment IN ({marks_l})"
            for seg, term, p, f in c.execute(q, large):
                by_segment.setdefault(seg, {})[term] = (decode(p, PID), decode(f, TF))
            parts += [FlatPostings.from_dict(v) for v in by_segment.values()]
        postings = merge_postings(parts, dead, self._yield_to_handle)
        return _MergePlan(ids, large, cols, postings, vecs, model, dead, tomb_seq)

    def _yield_to_handle(self) -> None:
        """Called between the steps of a merge plan: wait while the handle's connection is in
        use (a search or a write holds ``_lock``), up to ``_YIELD_SECONDS``.

        The merge thread shares the interpreter lock with the threads that search and write,
        and Python hands that lock over only every 5 ms: a write took it back after each of its
        statements, and a one-document supersede that overlapped the ~160 ms plan of a
        5,600-passage merge at 1M took 50-140 ms instead of 8 (its own CPU time was 8-12 ms).
        Waiting here lets a search or write that is under way finish undisturbed; the plan
        goes on between them, and after the time limit also under unbroken load, so merges
        cannot starve. Free when the caller already holds the lock (inline merges, optimize)."""
        if self._lock.acquire(timeout=_YIELD_SECONDS):
            self._lock.release()

    def _commit_merge(self, c: sqlite3.Connection, plan: _MergePlan) -> bool:
        """Replace the plan's segments by the merged one (inside a write transaction of ``c``).

        False, changing nothing, when a segment is gone or the store switched vector models
        since the plan was read. Passages that died after the plan was read are left out here
        (with their tombstones): a merged segment never holds a tombstoned passage, since a
        reader that already applied the tombstone would otherwise see the passage again."""
        ids, marks = plan.ids, ",".join("?" * len(plan.ids))
        still = c.execute(f"SELECT count(*) FROM segments WHERE id IN ({marks})", ids).fetchone()[0]
        model = c.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        if still != len(ids) or (model[0] if model else "none") != plan.model:
            return False
        cols, postings, vectors, dead = plan.cols, plan.postings, plan.vectors, plan.dead
        since = _tombstoned(c, "seq > ?", (plan.tomb_seq,))
        late_mask = np.isin(cols[0], since)
        if late_mask.any():
            late = cols[0][late_mask]
            cols = [col[~late_mask] for col in cols]
            vectors = vectors[~late_mask] if vectors is not None else None
            postings = merge_postings([postings], late)
            dead = np.concatenate([dead, late])
        self._insert_segment(c, cols, postings, vectors, plan.model)
        c.execute(f"DELETE FROM segment_vectors WHERE segment IN ({marks})", ids)
        if plan.large:
            c.execute(f"DELETE FROM postings WHERE segment IN ({','.join('?' * len(plan.large))})",
                      plan.large)
        c.execute(f"DELETE FROM segments WHERE id IN ({marks})", ids)
        for chunk in _chunks([int(p) for p in dead]):
            c.execute(f"DELETE FROM tombstones WHERE pid IN ({','.join('?' * len(chunk))})", chunk)
        return True

    # -- inspection ---------------------------------------------------------------------------
    def stats(self) -> dict[str, object]:
        c = self._conn
        one = lambda q: c.execute(q).fetchone()[0]  # noqa: E731
        return {
            "backend": "sqlite",
            "path": self.path,
            "analyzer": self.analyzer,
            "schema_version": SCHEMA_VERSION,
            "documents": one("SELECT count(*) FROM documents"),
            "passages": one("SELECT count(*) FROM passages"),
            "tenants": one("SELECT count(DISTINCT tenant) FROM documents"),
            "history_versions": one("SELECT count(*) FROM history"),
            "segments": one("SELECT count(*) FROM segments"),
            "tombstones": one("SELECT count(*) FROM tombstones"),
            "embedder": c.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()[0],
            "dimension": int(c.execute("SELECT value FROM meta WHERE key = 'dimension'").fetchone()[0]),
            "file_bytes": Path(self.path).stat().st_size if Path(self.path).exists() else 0,
        }

    def integrity(self) -> list[str]:
        return sqlite_integrity(self._conn)

    def iter_documents(self, tenant: str | None = None) -> Iterator[StoredDocument]:
        if tenant is None:
            rows = self._conn.execute(f"{_DOC_SELECT} ORDER BY tenant, doc_id").fetchall()
        else:
            rows = self._conn.execute(f"{_DOC_SELECT} WHERE tenant = ? ORDER BY doc_id",
                                      (tenant,)).fetchall()
        for r in rows:
            yield StoredDocument.from_row(r)

    def close(self) -> None:
        try:
            if self._merger is not None:
                self._merger.close()
        finally:
            with self._lock:
                self._main.close()
                self._closed = True
                self._cache = SegmentCache()  # its arrays are hundreds of MB at 1M passages
