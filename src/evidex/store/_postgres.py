"""The server backend: PostgreSQL (>= 14) with pgvector (>= 0.8).

It keeps the SQLite backend's design so both rank bit for bit alike: immutable keyword segments
(``bytea`` arrays) read into the shared in-memory ``SegmentCache`` and scored by the same BM25
core, tombstones, per-signature passage counts and total lengths changed in the same transaction
as the rows. What differs is concurrency and vectors:

* Reads run in one ``REPEATABLE READ READ ONLY`` transaction: the generation, the cache refresh,
  postings, rows and the vector search all come from one snapshot, so a reader never sees a
  torn version, whatever the writers do.
* Writers run concurrently. Each takes a transaction-scoped advisory lock per (tenant, document)
  it touches (in sorted order), plus a shared "segments" advisory lock that merges and
  re-embeds take exclusively (a merge must not race a tombstone for a passage it rewrites).
  Signature counters are updated at the end in id order; the generation row is updated last,
  which serialises commits in generation order, and tombstones carry that generation (see
  ``_pg_schema``).
* Vectors are stored as pgvector rows with their signature. ``exact`` (default) searches them the
  way the SQLite backend does: each process keeps the ``VectorBlocks`` of ``_vectors`` (one block
  per signature; float64 exact for small blocks, int8 first pass + exact re-scoring for large
  ones), loaded from pgvector by one binary ``COPY`` on the first vector search and then synced by
  generation (live passage ids not yet loaded are read, dead ones killed), so results and scores
  are SQLite's bit for bit and a query costs the same. The price is memory in every process that
  runs vector searches: about dim x 5 bytes per live passage (float32 + int8 copy; 1M x 384 is
  ~1.9 GB) and a first vector search that loads them all. ``hnsw`` (opt-in,
  ``?vector_search=hnsw``) keeps no vectors in memory: an HNSW index with pgvector's iterative
  index scans, candidates re-scored in float64; approximate, and the neighbours it finds can
  depend on rows the actor cannot see (the graph is built over all rows), though never include
  them. Actors who may read few passages, and index scans that give up early, get an exact scan in
  SQL instead.

Location: ``postgresql://user:pass@host:port/db?schema=evidex&vector_search=exact``; ``schema``
(default ``evidex``) and ``vector_search`` are evidex's own parameters, everything else goes to
libpq. The schema is created if missing; the ``vector`` extension too when the role may.
"""

from __future__ import annotations

import json
import re
import struct
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import psycopg
from psycopg import errors as pgerrors
from psycopg import sql
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo
from psycopg_pool import ConnectionPool, PoolTimeout

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
from ._integrity import postgres_integrity
from ._pg_schema import SCHEMA_VERSION, current_version, migrate
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
from ._vectors import VectorBlocks, _exact

__all__ = ["VECTOR_SEARCH_MODES", "PostgresStore", "is_postgres_url", "split_url"]

VECTOR_SEARCH_MODES = ("exact", "hnsw")
#: In hnsw mode, actors who may read at most this many passages get the exact search: it is
#: fast for them, and an iterative index scan would visit many rows they cannot read.
HNSW_EXACT_BELOW = 20_000
#: pgvector's hnsw.ef_search for an index scan (at least the candidate count asked for). The
#: 132 used first gave recall@10 0.978 at 100k passages with half of them readable; at 300k,
#: 400 gave 0.973 and 800 gave 0.99 (benchmarks/RESULTS.md). pgvector's maximum is 1000.
HNSW_EF_SEARCH = 800
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_WRITE_RETRIES = 5


def is_postgres_url(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


def split_url(url: str) -> tuple[str, str, str]:
    """(libpq conninfo, schema, vector search mode): evidex's own query parameters removed."""
    parts = urlsplit(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    own = {k: v for k, v in params if k in ("schema", "vector_search")}
    rest = [(k, v) for k, v in params if k not in own]
    schema = own.get("schema", "evidex")
    if not _IDENT.match(schema):
        raise StoreError(f"schema must be a lower-case SQL identifier (letters, digits, _), got {schema!r}")
    mode = own.get("vector_search", "exact")
    if mode not in VECTOR_SEARCH_MODES:
        raise StoreError(f"vector_search must be one of {', '.join(VECTOR_SEARCH_MODES)}, got {mode!r}")
    return urlunsplit(parts._replace(query=urlencode(rest))), schema, mode


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _sig_key(tenant: str, groups: Iterable[str], visibility: str, language: str | None,
             tags: Iterable[str]) -> str:
    return json.dumps([tenant, sorted(groups), visibility, language, sorted(tags)], ensure_ascii=False)


class _Retry(Exception):
    """Internal: the transaction saw a state its input did not cover."""


# -- pgvector's binary format: int16 dimension, int16 unused, float32 big-endian values ---------
class _VectorDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        a = np.ascontiguousarray(obj, dtype=">f4").reshape(-1)
        return struct.pack(">HH", a.shape[0], 0) + a.tobytes()


class _VectorLoader(Loader):
    format = Format.BINARY

    def load(self, data: Any) -> np.ndarray:
        return np.frombuffer(bytes(data), dtype=">f4", offset=4).astype(np.float32)


def _register_vector(conn: psycopg.Connection) -> None:
    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        raise StoreError("the pgvector extension (type 'vector') is not installed in this database")
    info.register(conn)
    dumper = type("VectorDumper", (_VectorDumper,), {"oid": info.oid})
    conn.adapters.register_dumper(np.ndarray, dumper)
    conn.adapters.register_loader(info.oid, _VectorLoader)


@dataclass
class _Tx:
    """What one write transaction accumulates for its final step (counters, tombstones)."""

    cur: psycopg.Cursor
    schema: str
    changed: bool = False
    #: Bookkeeping (sync records) to commit even when no searchable data changed.
    keep: bool = False
    dead: list[int] = field(default_factory=list)
    sig_delta: dict[int, list[int]] = field(default_factory=dict)

    def add(self, sig: int, passages: int, length: int) -> None:
        d = self.sig_delta.setdefault(sig, [0, 0])
        d[0] += passages
        d[1] += length
        self.changed = True


class _View:
    """ReadView over one REPEATABLE READ transaction."""

    def __init__(self, store: PostgresStore, cur: psycopg.Cursor) -> None:
        self._s = store
        self._c = cur
        cache = store._cache
        self.sig, self.length, self.dkey, self.number = cache.columns()
        self.generation = cache.generation
        self.deaths_mark = cache.deaths_mark()

    def _all(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._c.execute(query, params).fetchall()  # type: ignore[arg-type]

    # -- SegmentSource ------------------------------------------------------------------------
    def segment_ids(self) -> list[int]:
        return [r[0] for r in self._all("SELECT id FROM segments")]

    def segment_arrays(self, ids: Sequence[int]) -> Iterator[SegmentArrays]:
        for sid in ids:
            row = self._c.execute(
                "SELECT pids, sigs, lengths, dkeys, numbers, terms, term_ends, term_pids, term_tfs "
                "FROM segments WHERE id = %s", (sid,)
            ).fetchone()
            assert row is not None
            packed = FlatPostings.from_stored(*row[5:]) if row[5] is not None else None
            yield SegmentArrays(sid, *(decode(b, PID) for b in row[:5]), packed=packed)

    def tombstones_after(self, seq: int) -> tuple[np.ndarray, int]:
        rows = self._all("SELECT gen, pid FROM tombstones WHERE gen > %s", (seq,))
        if not rows:
            return np.zeros(0, dtype=np.int64), seq
        return np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)), max(r[0] for r in rows)

    def all_signatures(self) -> list[Signature]:
        return [
            Signature(r[0], r[1], frozenset(json.loads(r[2])), r[3], r[4], frozenset(json.loads(r[5])),
                      int(r[6]), int(r[7]))
            for r in self._all(
                "SELECT id, tenant, groups, visibility, language, tags, passages, total_length "
                "FROM signatures WHERE passages > 0"
            )
        ]

    def vector_model(self) -> tuple[str, int]:
        # The segment cache gets no vectors: exact mode keeps its own blocks, loaded on the first
        # vector search (``_sync_blocks``), so processes that only run keyword searches never
        # hold them; hnsw mode never loads them.
        return "none", 0

    def _sync_blocks(self) -> VectorBlocks:
        """The store's in-memory ``VectorBlocks`` brought to this snapshot (the segment cache was
        refreshed to it when the view opened). A passage's vector and signature never change
        while its id lives (a new version gets new ids), so the difference to the blocks is just
        ids: live ones not yet loaded are read with one binary COPY, loaded ones no longer live
        (superseded, removed) are killed. A merge moves ids between segments and costs nothing."""
        s = self._s
        cache = s._cache
        model = s.embedder
        if s._blocks is None or s._blocks_model != (model, s.dimension):
            s._blocks, s._blocks_model, s._blocks_gen = VectorBlocks(s.dimension), (model, s.dimension), None
        blocks = s._blocks
        if s._blocks_gen == cache.generation:
            return blocks
        live = cache.sig >= 0
        loaded = np.flatnonzero(blocks._blk >= 0)
        inside = loaded < len(live)
        still = np.zeros(len(loaded), dtype=bool)
        still[inside] = live[loaded[inside]]
        gone = loaded[~still]
        held = np.zeros(len(live), dtype=bool)
        held[loaded[inside]] = True
        if len(gone):
            blocks.kill(gone)
        new = np.flatnonzero(live & ~held)
        if len(new):
            pids, vecs = self._load_vectors(new, s.dimension)
            blocks.add(pids, cache.sig[pids], vecs)
        s._blocks_gen = cache.generation
        return blocks

    def _load_vectors(self, want: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """Stored vectors of these live passage ids (sorted), in that order, read in this
        snapshot with one binary COPY (no per-row Python). Every live passage has a vector
        row; one without is a corrupt store and raises rather than being searched as zeros."""
        lo, hi = int(want[0]), int(want[-1])
        if len(want) * 4 >= hi - lo + 1:
            # Mostly contiguous ids (a first load, bulk writes): a range scan, then filter.
            stmt = sql.SQL("COPY (SELECT pid, embedding FROM vectors WHERE pid BETWEEN {} AND {}) "
                           "TO STDOUT (FORMAT BINARY)").format(sql.Literal(lo), sql.Literal(hi))
        else:
            stmt = sql.SQL("COPY (SELECT pid, embedding FROM vectors WHERE pid = ANY({}::int4[])) "
                           "TO STDOUT (FORMAT BINARY)").format(sql.Literal(want.tolist()))
        buf = bytearray()
        with self._c.copy(stmt) as cp:
            for chunk in cp:
                buf += chunk
        pids, vecs = _parse_vector_copy(buf, dim)
        del buf
        keep = np.isin(pids, want)
        if not keep.all():
            pids, vecs = pids[keep], vecs[keep]
        if len(pids) != len(want):
            lost = np.setdiff1d(want, pids)
            raise StoreError(f"{len(lost)} live passages have no stored vector (e.g. pid {int(lost[0])}); "
                             "re-embed the store with `evidex reembed`")
        order = np.argsort(pids, kind="stable")
        return pids[order], vecs[order]

    def fetch_postings(self, term: str) -> list[tuple[np.ndarray, np.ndarray]]:
        return [(decode(p, PID), decode(t, TF))
                for p, t in self._all("SELECT pids, tfs FROM postings WHERE term = %s ORDER BY segment",
                                      (term,))]

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
        if missing:
            known.update(self._all("SELECT dkey, doc_id FROM documents WHERE dkey = ANY(%s)", (missing,)))
        return known

    def documents(self, dkeys: Iterable[int]) -> dict[int, StoredDocument]:
        return self._s._cache.documents(
            dkeys, lambda missing: self._all(f"{_DOC_SELECT} WHERE dkey = ANY(%s)", (missing,)))

    def passages(self, pids: Iterable[int]) -> dict[int, StoredPassage]:
        return self._s._cache.passages(
            pids, lambda missing: self._all(f"{_PASSAGE_SELECT} WHERE pid = ANY(%s)", (missing,)))

    def document(self, tenant: str, doc_id: str) -> StoredDocument | None:
        r = self._c.execute(f"{_DOC_SELECT} WHERE tenant = %s AND doc_id = %s", (tenant, doc_id)).fetchone()
        return StoredDocument.from_row(r) if r else None

    def document_text(self, dkey: int) -> str:
        r = self._c.execute("SELECT text FROM document_texts WHERE dkey = %s", (dkey,)).fetchone()
        return r[0] if r else ""

    def passage(self, dkey: int, number: int) -> StoredPassage | None:
        r = self._c.execute(f"{_PASSAGE_SELECT} WHERE dkey = %s AND number = %s", (dkey, number)).fetchone()
        return StoredPassage.from_row(r) if r else None

    def document_passages(self, dkey: int) -> list[StoredPassage]:
        rows = self._all(f"{_PASSAGE_SELECT} WHERE dkey = %s ORDER BY number", (dkey,))
        return [StoredPassage.from_row(r) for r in rows]

    def passage_vectors(self, pids: Iterable[int]) -> dict[int, np.ndarray]:
        if self._s.embedder == "none":
            return {}
        return {int(r[0]): r[1] for r in self._all("SELECT pid, embedding FROM vectors WHERE pid = ANY(%s)",
                                                   ([int(p) for p in pids],))}

    def history(self, tenant: str, doc_id: str) -> list[HistoryEntry]:
        return [HistoryEntry(*r) for r in self._all(
            "SELECT version, content_sha256, text, split, superseded_at, meta FROM history "
            "WHERE tenant = %s AND doc_id = %s ORDER BY id DESC", (tenant, doc_id))]

    def vector_search(self, sigs: Iterable[int], query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        sig_list = sorted({int(s) for s in sigs})
        empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if self._s.embedder == "none" or not sig_list or k < 1:
            return empty
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self._s.dimension:
            raise StoreError(f"query vector has {q.shape[0]} dimensions, the store {self._s.dimension}")
        if self._s.vector_search == "exact":
            return self._sync_blocks().search(sig_list, q, k)
        counts = {s.id: s.passages for ss in self._s._cache.by_tenant.values() for s in ss}
        allowed = sum(counts.get(s, 0) for s in sig_list)
        if allowed > HNSW_EXACT_BELOW:
            got = self._hnsw(sig_list, q, k)
            if len(got[0]) >= min(k, allowed):
                return got
            # The index scan gave up early (pgvector's hnsw.max_scan_tuples): fall back
            # to the exact scan, so a list is never under-filled.
            self._s.hnsw_fallbacks += 1
        return self._sql_exact(sig_list, q, k)

    def _sql_exact(self, sigs: list[int], q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """hnsw mode's exact path (small actors, under-filled index scans), run in SQL because
        that mode keeps no vectors in memory. pgvector orders, float64 re-scoring decides. A row
        not fetched has a float32 score at most the last fetched one's; both differ from the
        exact score by at most ``eps`` (a bound on float32 summation error over ``dim`` products
        of unit vectors), so once the last fetched row is more than ``eps`` below the k-th exact
        score, no unfetched row can reach or tie it."""
        eps = 2.0 * len(q) * 2.0**-24 * max(float(np.linalg.norm(q)), 1.0) + 1e-7
        limit = 2 * k + 32
        while True:
            rows = self._all(
                "SELECT pid, -(embedding <#> %s) AS s, embedding FROM vectors "
                "WHERE sig = ANY(%s) ORDER BY embedding <#> %s LIMIT %s", (q, sigs, q, limit))
            pids, scores = self._rescore(rows, q, k)
            if len(rows) < limit or float(rows[-1][1]) + eps < float(scores.min()):
                return pids, scores
            limit *= 4

    def _hnsw(self, sigs: list[int], q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        dim = int(self._s.dimension)
        limit = 2 * k + 32
        ef = min(1000, max(self._s.hnsw_ef_search, limit))  # pgvector accepts 1..1000
        self._c.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(ef)))
        self._c.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cast = sql.SQL("::vector({})").format(sql.Literal(dim))
        rows = self._all(sql.SQL(
            "SELECT pid, -((embedding{c}) <#> (%s{c})) AS s, embedding FROM vectors "
            "WHERE sig = ANY(%s) ORDER BY (embedding{c}) <#> (%s{c}) LIMIT %s").format(c=cast).as_string(),
            (q, sigs, q, limit))
        return self._rescore(rows, q, k)

    @staticmethod
    def _rescore(rows: list[tuple[Any, ...]], q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        pids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        exact = _exact(np.vstack([r[2] for r in rows]), q)
        if len(rows) > k:
            kth = np.partition(exact, len(rows) - k)[len(rows) - k]
            keep = exact >= kth
            pids, exact = pids[keep], exact[keep]
        return pids, exact


_DOC_SELECT = (
    "SELECT dkey, tenant, doc_id, version, content_sha256, meta, split, indexed_at FROM documents"
)
_PASSAGE_SELECT = (
    "SELECT pid, dkey, number, start_off, end_off, text, heading_path, anchor, page, flags FROM passages"
)



class PostgresStore:
    """One schema of a PostgreSQL database; safe for many reader and writer processes."""

    def __init__(
        self,
        url: str,
        *,
        analyzer: str | None = None,
        embedder: str | None = None,
        dimension: int = 0,
        create_embedder: tuple[str, int] = ("none", 0),
        pool_size: int = 4,
        connect_timeout: float = 30.0,
        _schema_version: int = SCHEMA_VERSION,
    ) -> None:
        self.url = url
        self.conninfo, self.schema, self.vector_search = split_url(url)
        self.embedder, self.dimension = (embedder, dimension) if embedder else create_embedder
        self.hnsw_fallbacks = 0
        #: Settable per store: higher is slower and finds more true neighbours.
        self.hnsw_ef_search = HNSW_EF_SEARCH
        try:
            with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=int(connect_timeout)) as c:
                self.analyzer = self._init_schema(c, analyzer, embedder, _schema_version)
        except psycopg.OperationalError as exc:
            raise StoreError(f"cannot connect to {_redacted(url)}: {str(exc).strip()}") from None
        self._pool = ConnectionPool(
            self.conninfo, min_size=1, max_size=pool_size, kwargs={"autocommit": True},
            configure=self._configure, timeout=connect_timeout, open=True,
            name=f"evidex-{self.schema}",
        )
        self._lock = threading.RLock()
        self._cache = SegmentCache()
        self._closed = False
        # Exact mode's in-memory vectors: (model, dimension) and segment-cache generation they
        # were synced to (see _View._sync_blocks).
        self._blocks: VectorBlocks | None = None
        self._blocks_model: tuple[str, int] | None = None
        self._blocks_gen: int | None = None
        if self.vector_search == "hnsw" and self.embedder != "none":
            self._ensure_hnsw()

    def _configure(self, conn: psycopg.Connection) -> None:
        conn.execute(sql.SQL("SET search_path = {}, public").format(sql.Identifier(self.schema)))
        _register_vector(conn)

    # -- schema -------------------------------------------------------------------------------
    def _init_schema(self, c: psycopg.Connection, analyzer: str | None, embedder: str | None,
                     target: int) -> str:
        with c.transaction():
            c.execute("SELECT pg_advisory_xact_lock(hashtextextended('evidex-migrate', 0))")
            if c.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
                try:
                    with c.transaction():
                        c.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except psycopg.Error as exc:
                    raise StoreError(
                        "evidex needs the pgvector extension (>= 0.8) in this database and could not "
                        f"create it ({str(exc).strip()}); run `CREATE EXTENSION vector` as its owner"
                    ) from None
            ver = c.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            major_minor = tuple(int(x) for x in str(ver[0] if ver else "0.0").split(".")[:2])
            if major_minor < (0, 8):
                raise StoreError(f"evidex needs pgvector >= 0.8 (iterative index scans), found {ver}")
            c.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
            c.execute(sql.SQL("SET LOCAL search_path = {}, public").format(sql.Identifier(self.schema)))
            cur = c.cursor()
            version = current_version(cur)
            if version == 0:
                ours = c.execute(
                    "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").fetchone()
                if ours and ours[0]:
                    raise StoreError(f"schema {self.schema!r} holds tables but no evidex store; "
                                     "choose another with ?schema=NAME")
            if version > SCHEMA_VERSION:
                raise StoreError(f"schema {self.schema!r} has store version {version}; this evidex "
                                 f"supports up to {SCHEMA_VERSION}: upgrade evidex")
            migrate(cur, target)
            if version == 0:
                chosen = analyzer or "exact"
                cur.executemany(
                    "INSERT INTO meta (key, value) VALUES (%s, %s)",
                    [("analyzer", chosen), ("generation", "0"), ("created_at", _now()),
                     ("embedder", self.embedder), ("dimension", str(self.dimension)), ("hnsw", "0")],
                )
                return chosen
            meta = dict(c.execute("SELECT key, value FROM meta").fetchall())  # type: ignore[arg-type]
        stored = meta["analyzer"]
        if analyzer is not None and analyzer != stored:
            raise StoreError(
                f"{self.schema!r} was created with the analyzer {stored!r}; it cannot be searched "
                f"with {analyzer!r} (re-create the store to change analyzers)"
            )
        model = meta.get("embedder", "none")
        if embedder is not None and embedder != model:
            raise StoreError(
                f"{self.schema!r} holds vectors of the embedding model {model!r}, not {embedder!r}; "
                f"open it without choosing a model, or convert it with `evidex reembed --model {embedder}`"
            )
        self.embedder, self.dimension = model, int(meta.get("dimension", "0"))
        return str(stored)

    def _ensure_hnsw(self) -> None:
        """Build the HNSW index for the current model's dimension (once; later writes and
        re-embeds maintain it). Building takes minutes for a million rows."""
        with self._pool.connection() as conn:
            have = conn.execute("SELECT value FROM meta WHERE key = 'hnsw'").fetchone()
            idx = conn.execute("SELECT 1 FROM pg_indexes WHERE schemaname = %s "
                               "AND indexname = 'vectors_hnsw'", (self.schema,)).fetchone()
            if have and have[0] == "1" and idx:
                return
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (self._merge_key(),))
                conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
                conn.execute(_hnsw_ddl(self.dimension))
                conn.execute("UPDATE meta SET value = '1' WHERE key = 'hnsw'")

    def _merge_key(self) -> str:
        return f"evidex-segments:{self.schema}"

    # -- reading ------------------------------------------------------------------------------
    @contextmanager
    def read(self) -> Iterator[_View]:
        with self._lock, self._connection() as conn:
            cur = conn.cursor(binary=True)
            cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            try:
                meta = dict(cur.execute(
                    "SELECT key, value FROM meta WHERE key IN ('generation', 'embedder', 'dimension')"
                ).fetchall())  # type: ignore[arg-type]
                gen = int(meta["generation"])
                self.embedder = meta.get("embedder", "none")
                self.dimension = int(meta.get("dimension", "0"))
                view = _View(self, cur)
                if gen != self._cache.generation:
                    self._cache.refresh(view, gen)
                    view = _View(self, cur)  # arrays may have been reallocated by the refresh
                yield view
            finally:
                if not conn.closed:
                    cur.execute("COMMIT")

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        if self._closed:
            raise StoreError("the store is closed")
        try:
            with self._pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise StoreError(f"no connection to {_redacted(self.url)}: {exc}") from None

    # -- writing ------------------------------------------------------------------------------
    @contextmanager
    def _write(self, exclusive: bool = False) -> Iterator[_Tx]:
        """One write transaction. The shared segments lock lets writers run side by side; merges
        and re-embeds take it exclusively. Counters, the generation and tombstones are written
        last (see the module docstring); a transaction that changed nothing is rolled back."""
        with self._connection() as conn:
            cur = conn.cursor(binary=True)
            cur.execute("BEGIN")
            try:
                lock = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
                cur.execute(f"SELECT {lock}(hashtextextended(%s, 0))", (self._merge_key(),))
                tx = _Tx(cur, self.schema)
                yield tx
                if tx.changed:
                    for sig in sorted(tx.sig_delta):
                        n, total = tx.sig_delta[sig]
                        if n or total:
                            cur.execute("UPDATE signatures SET passages = passages + %s, "
                                        "total_length = total_length + %s WHERE id = %s", (n, total, sig))
                    row = cur.execute("UPDATE meta SET value = (value::bigint + 1)::text "
                                      "WHERE key = 'generation' RETURNING value").fetchone()
                    assert row is not None
                    if tx.dead:
                        with cur.copy("COPY tombstones (gen, pid) FROM STDIN (FORMAT BINARY)") as cp:
                            cp.set_types(["int8", "int4"])
                            gen = int(row[0])
                            for pid in tx.dead:
                                cp.write_row((gen, pid))
                if tx.changed or tx.keep:
                    cur.execute("COMMIT")
                else:
                    cur.execute("ROLLBACK")
            except BaseException:
                if not conn.closed:
                    conn.rollback()
                raise

    def _retrying(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Deadlocks (two writers creating the same signatures in another order) and
        serialization failures roll back whole; the transaction is then simply run again."""
        for attempt in range(_WRITE_RETRIES):
            try:
                return fn(*args, **kwargs)
            except (pgerrors.DeadlockDetected, pgerrors.SerializationFailure):
                if attempt == _WRITE_RETRIES - 1:
                    raise
        raise AssertionError("unreachable")

    def _lock_documents(self, tx: _Tx, keys: Iterable[tuple[str, str]]) -> None:
        for tenant, doc_id in sorted(set(keys)):
            tx.cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                           (f"{self.schema}\x1f{tenant}\x1f{doc_id}",))

    def _signatures(self, tx: _Tx, writes: Sequence[DocumentWrite]) -> dict[str, int]:
        """Signature ids of these writes, created in key order (so concurrent writers creating
        the same new signatures wait for each other instead of deadlocking)."""
        wanted: dict[str, DocumentWrite] = {}
        for w in writes:
            d = w.document
            wanted.setdefault(_sig_key(d.tenant, d.groups, d.visibility, d.language, d.tags), w)
        out: dict[str, int] = {}
        for key in sorted(wanted):
            d = wanted[key].document
            tx.cur.execute(
                "INSERT INTO signatures (key, tenant, groups, visibility, language, tags) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO NOTHING",
                (key, d.tenant, json.dumps(sorted(d.groups)), d.visibility, d.language,
                 json.dumps(sorted(d.tags))))
            row = tx.cur.execute("SELECT id FROM signatures WHERE key = %s", (key,)).fetchone()
            assert row is not None
            out[key] = int(row[0])
        return out

    def _drop_passages(self, tx: _Tx, dkey: int, sig: int) -> None:
        rows = tx.cur.execute("DELETE FROM passages WHERE dkey = %s RETURNING pid, length",
                              (dkey,)).fetchall()
        if not rows:
            return
        pids = [int(r[0]) for r in rows]
        tx.cur.execute("DELETE FROM vectors WHERE pid = ANY(%s)", (pids,))
        tx.dead.extend(pids)
        tx.add(sig, -len(rows), -sum(int(r[1]) for r in rows))

    def apply(self, writes: Sequence[DocumentWrite], *, keep_history: bool = True,
              sources: Sequence[SourceEntry] = ()) -> IngestReport:
        if not writes and not sources:
            return IngestReport()
        report: IngestReport = self._retrying(self._apply, writes, keep_history, sources)
        if report.passages_written:
            self._merge_tiers(merge_budget(report.passages_written))
        return report

    def _apply(self, writes: Sequence[DocumentWrite], keep_history: bool,
               sources: Sequence[SourceEntry] = ()) -> IngestReport:
        added = superseded = unchanged = written = 0
        with self._write() as tx:
            c = tx.cur
            meta = dict(c.execute(
                "SELECT key, value FROM meta WHERE key IN ('embedder', 'dimension')").fetchall())  # type: ignore[arg-type]
            if meta.get("embedder", "none") != self.embedder:
                self.embedder = meta.get("embedder", "none")
                self.dimension = int(meta.get("dimension", "0"))
                raise MissingVectors(f"the store now uses the model {self.embedder!r}")
            self._lock_documents(tx, ((w.document.tenant, w.document.id) for w in writes))
            self._put_sources(c, sources)
            tx.keep = bool(sources)
            existing = {
                (r[0], r[1]): r[2:]
                for r in c.execute(
                    "SELECT tenant, doc_id, dkey, version, content_sha256, meta, split, sig FROM documents "
                    "WHERE (tenant, doc_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
                    ([w.document.tenant for w in writes], [w.document.id for w in writes]),
                ).fetchall()
            }
            changed = []
            for w in writes:
                row = existing.get((w.document.tenant, w.document.id))
                if row and tuple(row[1:5]) == w.index_key():
                    unchanged += 1
                else:
                    changed.append((w, row))
            if not changed:
                return IngestReport(0, 0, unchanged, 0)
            sigs = self._signatures(tx, [w for w, _ in changed])
            n_new = sum(len(w.passages) for w, _ in changed)
            pids = [r[0] for r in c.execute(
                "SELECT nextval('passages_pid_seq') FROM generate_series(1, %s)", (n_new,)).fetchall()]
            pids.sort()
            if pids and pids[-1] >= 2**31 - 1:
                raise StoreError("passage ids are exhausted (2^31); migrate to a new store")
            next_pid = iter(pids)
            seg_rows: list[tuple[int, int, int, int, int, dict[str, int]]] = []
            prow: list[tuple[Any, ...]] = []
            vrows: list[tuple[int, int, np.ndarray | None]] = []
            for w, row in changed:
                d = w.document
                version, sha, meta_json, split = w.index_key()
                sig = sigs[_sig_key(d.tenant, d.groups, d.visibility, d.language, d.tags)]
                if row:
                    dkey = int(row[0])
                    if keep_history:
                        c.execute(
                            "INSERT INTO history (tenant, doc_id, version, content_sha256, meta, split, "
                            "text, superseded_at) SELECT d.tenant, d.doc_id, d.version, d.content_sha256, "
                            "d.meta, d.split, t.text, %s FROM documents d JOIN document_texts t USING (dkey) "
                            "WHERE dkey = %s", (_now(), dkey))
                    self._drop_passages(tx, dkey, int(row[5]))
                    c.execute("UPDATE documents SET version = %s, content_sha256 = %s, meta = %s, "
                              "split = %s, sig = %s, indexed_at = %s WHERE dkey = %s",
                              (version, sha, meta_json, split, sig, _now(), dkey))
                    c.execute("UPDATE document_texts SET text = %s WHERE dkey = %s", (d.text, dkey))
                    superseded += 1
                else:
                    r = c.execute(
                        "INSERT INTO documents (tenant, doc_id, version, content_sha256, meta, split, sig, "
                        "indexed_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING dkey",
                        (d.tenant, d.id, version, sha, meta_json, split, sig, _now())).fetchone()
                    assert r is not None
                    dkey = int(r[0])
                    c.execute("INSERT INTO document_texts (dkey, text) VALUES (%s, %s)", (dkey, d.text))
                    added += 1
                total = 0
                for pw in w.passages:
                    p = pw.passage
                    pid = next(next_pid)
                    prow.append((pid, dkey, p.number, p.start, p.end, pw.length,
                                 json.dumps(list(p.heading_path), ensure_ascii=False), p.anchor, p.page,
                                 json.dumps(list(pw.flags)), p.text))
                    seg_rows.append((pid, sig, pw.length, dkey, p.number, pw.terms))
                    vrows.append((pid, sig, pw.vector))
                    total += pw.length
                tx.add(sig, len(w.passages), total)
                written += len(w.passages)
            tx.changed = True
            if prow:
                with c.copy("COPY passages (pid, dkey, number, start_off, end_off, length, heading_path, "
                            "anchor, page, flags, text) FROM STDIN") as cp:
                    for r in prow:
                        cp.write_row(r)
                self._write_vectors(c, vrows)
                self._write_segment(c, seg_rows)
        return IngestReport(added, superseded, unchanged, written)

    def _write_vectors(self, c: psycopg.Cursor, rows: list[tuple[int, int, np.ndarray | None]]) -> None:
        if self.embedder == "none":
            return
        if any(v is None for _, _, v in rows):
            raise MissingVectors("a changed document arrived without passage vectors")
        with c.copy("COPY vectors (pid, sig, embedding) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(["int4", "int4", "vector"])
            for pid, sig, v in rows:
                a = np.asarray(v, dtype=np.float32).reshape(-1)
                if a.shape[0] != self.dimension:
                    raise StoreError(f"vectors have {a.shape[0]} dimensions; the store's model "
                                     f"{self.embedder!r} has {self.dimension}")
                cp.write_row((pid, sig, a))

    def _write_segment(self, c: psycopg.Cursor,
                       rows: list[tuple[int, int, int, int, int, dict[str, int]]]) -> None:
        cols, postings = segment_from_rows(rows)
        self._insert_segment(c, cols, postings)

    def _insert_segment(self, c: psycopg.Cursor, cols: list[np.ndarray], postings: FlatPostings) -> int:
        n = len(cols[0])
        packed = postings.stored() if n <= PACK_LIMIT else (None, None, None, None)
        row = c.execute(
            "INSERT INTO segments (n, pids, sigs, lengths, dkeys, numbers, terms, term_ends, term_pids, "
            "term_tfs) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (n, *(encode(col, PID) for col in cols), *packed)).fetchone()
        assert row is not None
        seg = int(row[0])
        if n > PACK_LIMIT:
            with c.copy("COPY postings (term, segment, pids, tfs) FROM STDIN (FORMAT BINARY)") as cp:
                cp.set_types(["text", "int4", "bytea", "bytea"])
                for t, p, f in postings.items():
                    cp.write_row((t, seg, encode(p, PID), encode(f, TF)))
        return seg

    def unchanged(self, writes: Sequence[DocumentWrite]) -> set[tuple[str, str]]:
        if not writes:
            return set()
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT tenant, doc_id, version, content_sha256, meta, split FROM documents "
                "WHERE (tenant, doc_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
                ([w.document.tenant for w in writes], [w.document.id for w in writes])).fetchall()
        have = {(r[0], r[1]): tuple(r[2:]) for r in rows}
        return {(w.document.tenant, w.document.id) for w in writes
                if have.get((w.document.tenant, w.document.id)) == w.index_key()}

    def live_passages(self) -> list[tuple[int, str]]:
        with self._connection() as conn:
            return [(int(r[0]), r[1]) for r in conn.execute("SELECT pid, text FROM passages ORDER BY pid")]

    def switch_vectors(self, model: str, dimension: int, vectors: dict[int, np.ndarray]) -> bool:
        """Replace every vector by ``model``'s in one transaction (writers wait on the segments
        lock; readers keep their snapshot's vectors until it commits)."""
        def run() -> bool:
            try:
                with self._write(exclusive=True) as tx:
                    c = tx.cur
                    live = c.execute("SELECT p.pid, d.sig FROM passages p JOIN documents d USING (dkey)"
                                     ).fetchall()
                    if not all(int(r[0]) in vectors for r in live):
                        raise _Retry
                    c.execute("DROP INDEX IF EXISTS vectors_hnsw")
                    c.execute("DELETE FROM vectors")
                    old = self.embedder, self.dimension
                    self.embedder, self.dimension = model, dimension
                    try:
                        self._write_vectors(c, [(int(p), int(s), vectors[int(p)]) for p, s in live])
                    finally:
                        self.embedder, self.dimension = old
                    hnsw = c.execute("SELECT value FROM meta WHERE key = 'hnsw'").fetchone()
                    if hnsw and hnsw[0] == "1":
                        c.execute("SET LOCAL maintenance_work_mem = '1GB'")
                        c.execute(_hnsw_ddl(dimension))
                    c.execute("UPDATE meta SET value = %s WHERE key = 'embedder'", (model,))
                    c.execute("UPDATE meta SET value = %s WHERE key = 'dimension'", (str(dimension),))
                    tx.changed = True
            except _Retry:
                return False
            return True

        done: bool = self._retrying(run)
        if done:
            self.embedder, self.dimension = model, dimension
        return done

    @staticmethod
    def _put_sources(c: psycopg.Cursor, entries: Sequence[SourceEntry]) -> None:
        """Upsert entries; an entry equal to the stored one changes no row. Source entries are
        bookkeeping for sync, not searchable data, so they never bump the generation."""
        if not entries:
            return
        c.executemany(
            "INSERT INTO source_documents (tenant, doc_id, source, item, stamp, content_sha256) "
            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (tenant, doc_id) DO UPDATE SET "
            "source = excluded.source, item = excluded.item, stamp = excluded.stamp, "
            "content_sha256 = excluded.content_sha256 WHERE source_documents.source != excluded.source "
            "OR source_documents.item != excluded.item OR source_documents.stamp != excluded.stamp "
            "OR source_documents.content_sha256 != excluded.content_sha256",
            [(e.tenant, e.doc_id, e.source, e.item, e.stamp, e.content_sha256) for e in entries],
        )

    def source_entries(self, source: str | None = None) -> list[SourceEntry]:
        q = "SELECT source, tenant, doc_id, item, stamp, content_sha256 FROM source_documents"
        with self._pool.connection() as conn:
            rows = (conn.execute(q + " ORDER BY tenant, doc_id") if source is None else  # type: ignore[operator]
                    conn.execute(q + " WHERE source = %s ORDER BY tenant, doc_id", (source,)))
            return [SourceEntry(*r) for r in rows.fetchall()]

    def remove(self, tenant: str, doc_id: str) -> bool:
        def run() -> bool:
            with self._write() as tx:
                self._lock_documents(tx, [(tenant, doc_id)])
                row = tx.cur.execute("SELECT dkey, sig FROM documents WHERE tenant = %s AND doc_id = %s",
                                     (tenant, doc_id)).fetchone()
                if not row:
                    return False
                self._drop_passages(tx, int(row[0]), int(row[1]))
                tx.cur.execute("DELETE FROM documents WHERE dkey = %s", (row[0],))  # texts cascade
                tx.cur.execute("DELETE FROM history WHERE tenant = %s AND doc_id = %s", (tenant, doc_id))
                tx.cur.execute("DELETE FROM source_documents WHERE tenant = %s AND doc_id = %s",
                               (tenant, doc_id))
                tx.changed = True
            return True

        removed: bool = self._retrying(run)
        return removed

    def restore_history(self, entries: Sequence[tuple[str, str, HistoryEntry]]) -> None:
        if not entries:
            return
        with self._write() as tx:
            with tx.cur.copy("COPY history (tenant, doc_id, version, content_sha256, meta, split, text, "
                             "superseded_at) FROM STDIN") as cp:
                for t, d, e in entries:
                    cp.write_row((t, d, e.version, e.content_sha256, e.meta, e.split, e.text,
                                  e.superseded_at))
            tx.changed = True

    # -- merging ------------------------------------------------------------------------------
    def _segment_sizes(self) -> dict[int, int]:
        with self._connection() as conn:
            return {int(r[0]): int(r[1]) for r in conn.execute("SELECT id, n FROM segments ORDER BY id")}

    def _merge_tiers(self, budget: int) -> None:
        """Run the merges the shared policy (``_segments.next_merge``) calls for."""
        while True:
            ids = next_merge(self._segment_sizes(), budget)
            if ids is None:
                return
            if not self._retrying(self._merge, ids):
                return  # another process merged these meanwhile; it also merges what is left

    def settle(self) -> None:
        """Merges run inside the write call here (PostgreSQL's supersede maximum stayed under
        40 ms at 1M passages with them), so there is never one to wait for."""

    def optimize(self) -> None:
        ids = sorted(self._segment_sizes())
        with self._connection() as conn:
            row = conn.execute("SELECT count(*) FROM tombstones").fetchone()
        if len(ids) > 1 or (ids and row and row[0]):
            self._retrying(self._merge, ids)

    def _merge(self, ids: list[int]) -> bool:
        with self._write(exclusive=True) as tx:
            c = tx.cur
            rows = c.execute(
                "SELECT id, pids, sigs, lengths, dkeys, numbers, terms, term_ends, term_pids, term_tfs "
                "FROM segments WHERE id = ANY(%s) ORDER BY id", (ids,)).fetchall()
            if len(rows) != len(ids):
                return False
            cols = [np.concatenate([decode(r[i], PID) for r in rows]) for i in range(1, 6)]
            # Only the tombstones in these segments' id range (indexed): those of passages in
            # large segments that are rarely merged pile up, and every small merge read them all.
            lo, hi = (int(cols[0].min()), int(cols[0].max())) if len(cols[0]) else (0, -1)
            tomb = np.fromiter((r[0] for r in c.execute(
                "SELECT pid FROM tombstones WHERE pid BETWEEN %s AND %s", (lo, hi))), dtype=np.int64)
            dead_mask = np.isin(cols[0], tomb)
            dead = cols[0][dead_mask]
            keep = ~dead_mask
            order = np.argsort(cols[0][keep], kind="stable")
            cols = [col[keep][order] for col in cols]
            parts = [FlatPostings.from_stored(*r[6:]) for r in rows if r[6] is not None]
            large = [r[0] for r in rows if r[6] is None]
            if large:
                by_segment: dict[int, PackedPostings] = {}
                for seg, term, p, f in c.execute("SELECT segment, term, pids, tfs FROM postings "
                                                 "WHERE segment = ANY(%s)", (large,)):
                    by_segment.setdefault(seg, {})[term] = (decode(p, PID), decode(f, TF))
                parts += [FlatPostings.from_dict(v) for v in by_segment.values()]
            postings = merge_postings(parts, dead)
            self._insert_segment(c, cols, postings)
            if large:
                c.execute("DELETE FROM postings WHERE segment = ANY(%s)", (large,))
            c.execute("DELETE FROM segments WHERE id = ANY(%s)", (ids,))
            if len(dead):
                c.execute("DELETE FROM tombstones WHERE pid = ANY(%s)", ([int(p) for p in dead],))
            tx.changed = True
        return True

    # -- inspection ---------------------------------------------------------------------------
    def stats(self) -> dict[str, object]:
        with self._connection() as conn:
            def one(q: str) -> Any:
                row = conn.execute(q).fetchone()  # type: ignore[call-overload]
                return row[0] if row else None

            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())  # type: ignore[arg-type]
            size = one("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                       "JOIN pg_namespace n ON n.oid = c.relnamespace "
                       "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm')")
            return {
                "backend": "postgresql",
                "path": _redacted(self.url),
                "schema": self.schema,
                "analyzer": self.analyzer,
                "schema_version": one("SELECT max(version) FROM schema_version"),
                "documents": one("SELECT count(*) FROM documents"),
                "passages": one("SELECT count(*) FROM passages"),
                "tenants": one("SELECT count(DISTINCT tenant) FROM documents"),
                "history_versions": one("SELECT count(*) FROM history"),
                "segments": one("SELECT count(*) FROM segments"),
                "tombstones": one("SELECT count(*) FROM tombstones"),
                "embedder": meta.get("embedder", "none"),
                "dimension": int(meta.get("dimension", "0")),
                "vector_search": self.vector_search,
                "hnsw_index": meta.get("hnsw") == "1",
                "file_bytes": int(size or 0),
            }

    def integrity(self) -> list[str]:
        with self._connection() as conn:
            return postgres_integrity(conn)

    def iter_documents(self, tenant: str | None = None) -> Iterator[StoredDocument]:
        with self._connection() as conn:
            if tenant is None:
                rows = conn.execute(f"{_DOC_SELECT} ORDER BY tenant, doc_id").fetchall()
            else:
                rows = conn.execute(f"{_DOC_SELECT} WHERE tenant = %s ORDER BY doc_id", (tenant,)).fetchall()
        for r in rows:
            yield StoredDocument.from_row(r)

    def close(self) -> None:
        with self._lock:
            self._pool.close()
            self._closed = True
            self._cache = SegmentCache()  # its arrays are hundreds of MB at 1M passages
            self._blocks = None


def _hnsw_ddl(dimension: int) -> sql.Composed:
    return sql.SQL(
        "CREATE INDEX IF NOT EXISTS vectors_hnsw ON vectors "
        "USING hnsw ((embedding::vector({})) vector_ip_ops)"
    ).format(sql.Literal(int(dimension)))


_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"


def _parse_vector_copy(buf: bytes | bytearray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(pids, float32 vectors) from ``COPY (SELECT pid, embedding ...) TO STDOUT (FORMAT BINARY)``.

    Every tuple has the same size (field count, int4 pid, and pgvector's binary ``vector``: int16
    dimension, int16 unused, ``dim`` big-endian float32), so the whole stream is one numpy record
    array; each fixed field is checked, so a row of another dimension fails loudly."""
    if bytes(buf[:11]) != _COPY_SIGNATURE:
        raise StoreError("unexpected COPY stream from PostgreSQL (no binary signature)")
    ext = int.from_bytes(buf[15:19], "big")
    start = 19 + ext
    end = len(buf) - 2  # trailer: int16 -1
    if end < start or buf[end:] != b"\xff\xff":
        raise StoreError("unexpected COPY stream from PostgreSQL (no trailer)")
    row = np.dtype([("nf", ">i2"), ("l1", ">i4"), ("pid", ">i4"), ("l2", ">i4"), ("dim", ">i2"),
                    ("unused", ">i2"), ("vec", ">f4", (dim,))])
    if (end - start) % row.itemsize:
        raise StoreError(f"stored vectors do not all have the store's {dim} dimensions")
    rec = np.frombuffer(buf, dtype=row, count=(end - start) // row.itemsize, offset=start)
    if len(rec) and not ((rec["nf"] == 2).all() and (rec["l1"] == 4).all()
                         and (rec["l2"] == 4 + 4 * dim).all() and (rec["dim"] == dim).all()):
        raise StoreError(f"stored vectors do not all have the store's {dim} dimensions")
    return rec["pid"].astype(np.int64), rec["vec"].astype(np.float32)
