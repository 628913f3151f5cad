"""The server backend: PostgreSQL (>= 14) with pgvector (>= 0.8).

The algorithm is the core's (``_core``), so both backends rank bit for bit alike; this module
holds PostgreSQL's dialect and its connection handling, and ``_pgvector`` its vector storage.
What differs from SQLite is concurrency:

* Reads run in one ``REPEATABLE READ READ ONLY`` transaction: the generation, the cache refresh,
  postings, rows and the vector search all come from one snapshot, so a reader never sees a
  torn version, whatever the writers do.
* Writers run concurrently. Each takes a transaction-scoped advisory lock per (tenant, document)
  it touches (in sorted order), plus a shared "segments" advisory lock that merges and re-embeds
  take exclusively (a merge must not race a tombstone for a passage it rewrites). Signature
  counters are updated at the end in id order and the generation row last, which orders commits
  by generation (see ``_core``). Deadlocks roll a write back whole; it is run again.
* Merges run inside the write call that asks for them, under the exclusive lock.

Location: ``postgresql://user:pass@host:port/db?schema=evidex&vector_search=exact``; ``schema``
(default ``evidex``) and ``vector_search`` are evidex's own parameters, everything else goes to
libpq. The schema is created if missing; the ``vector`` extension too when the role may.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import psycopg
from psycopg import errors as pgerrors
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from ..model import ServerUnavailable, StoreError
from ._core import SQLStore
from ._integrity import postgres_integrity
from ._location import redacted, scrubbed, split_url
from ._merge_runner import InlineMerges
from ._migrations import SCHEMA_VERSION
from ._pgvector import HNSW_EF_SEARCH, RowVectors, hnsw_ddl, register_vector
from ._schema import column_kinds

__all__ = ["PostgresStore", "lineage_of", "server_name"]


def server_name(conninfo: str) -> str:
    """``host:port/database`` of a libpq connection string (a Unix socket's folder as host)."""
    d = conninfo_to_dict(conninfo)
    return f"{d.get('host') or 'localhost'}:{d.get('port') or 5432}/{d.get('dbname') or d.get('user') or ''}"


#: SQLSTATEs of a server that shut down or cannot take connections now.
_SHUTDOWN = ("57P01", "57P02", "57P03")


def _gone(exc: psycopg.OperationalError) -> bool:
    """Whether ``exc`` says the server went away (a connection class or shutdown state, or none)."""
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in _SHUTDOWN


def lineage_of(url: str) -> str:
    """What the generations of the store at ``url`` count: its server, database and schema."""
    conninfo, schema, _ = split_url(url)
    return f"postgresql://{server_name(conninfo)}?schema={schema}"


@lru_cache(maxsize=512)
def _pg_sql(query: str) -> str:
    """The core's ``?`` placeholders as psycopg's (core SQL never contains ``%``)."""
    return query.replace("?", "%s")


class _Cursor:
    """A psycopg cursor that takes ``?`` placeholders; ``raw`` is the cursor itself."""

    __slots__ = ("raw",)

    def __init__(self, raw: psycopg.Cursor) -> None:
        self.raw = raw

    def execute(self, query: str, params: Sequence[Any] | None = None) -> psycopg.Cursor:
        return self.raw.execute(_pg_sql(query), params)

    def executemany(self, query: str, rows: Iterable[Sequence[Any]]) -> psycopg.Cursor:
        self.raw.executemany(_pg_sql(query), rows)
        return self.raw


class PostgresDialect:
    name = "postgresql"
    retry_errors = (pgerrors.DeadlockDetected, pgerrors.SerializationFailure)
    pid_list = "string_agg(pid::text, ',')"

    def __init__(self, schema: str) -> None:
        self.schema = schema

    def where_in(self, column: str, keys: Sequence[int]) -> Iterator[tuple[str, Sequence[Any]]]:
        if len(keys):
            yield f"{column} = ANY(?)", ([int(k) for k in keys],)

    def by_document(self, c: Any, select: str, keys: Sequence[tuple[str, str]]) -> list[Any]:
        if not keys:
            return []
        return c.execute(f"{select} WHERE (tenant, doc_id) IN (SELECT * FROM unnest(?::text[], ?::text[]))",
                         ([t for t, _ in keys], [d for _, d in keys])).fetchall()

    def insert_many(self, c: Any, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        with c.raw.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(column_kinds(table, tuple(columns)))
            for r in rows:
                cp.write_row(r)

    def insert_id(self, c: Any, insert: str, params: Sequence[Any], key: str) -> int:
        return int(c.execute(f"{insert} RETURNING {key}", params).fetchone()[0])

    def delete_returning(self, c: Any, table: str, where: str, params: Sequence[Any],
                         columns: str) -> list[Any]:
        return c.execute(f"DELETE FROM {table} WHERE {where} RETURNING {columns}", params).fetchall()

    def bump_generation(self, c: Any) -> int:
        return int(c.execute("UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'generation' "
                             "RETURNING value").fetchone()[0])

    def next_pids(self, c: Any, n: int) -> list[int]:
        if not n:
            return []
        pids = sorted(r[0] for r in c.execute(
            "SELECT nextval('passages_pid_seq') FROM generate_series(1, ?)", (n,)).fetchall())
        if pids[-1] >= 2**31 - 1:
            raise StoreError("passage ids are exhausted (2^31); migrate to a new store")
        return pids

    def lock_documents(self, c: Any, keys: Iterable[tuple[str, str]]) -> None:
        for tenant, doc_id in sorted(set(keys)):
            c.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))",
                      (f"{self.schema}\x1f{tenant}\x1f{doc_id}",))

    def objects(self, c: Any) -> set[str]:
        return {r[0] for r in c.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()}

    def legacy_version(self, c: Any, objects: set[str]) -> int | None:
        if "schema_version" not in objects:
            return None
        row = c.execute("SELECT max(version) FROM schema_version").fetchone()
        return int(row[0] or 0) if row else 0

    def integrity(self, c: Any) -> list[str]:
        return postgres_integrity(c.raw.connection)


class PostgresStore(SQLStore):
    """One schema of a PostgreSQL database; safe for many reader and writer processes.

    ``read_only``: a hot standby's copy of a store (a streaming replica, see ``_replicas``):
    opened without creating or migrating anything (the primary does that and the standby
    replays it), refusing every write; ``lineage`` is then its primary's, so generations
    compare across the two. ``role`` names the server in what reads report ("primary",
    "replica"). ``connect_timeout`` also bounds the wait for a pooled connection."""

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
        read_only: bool = False,
        lineage: str | None = None,
        role: str = "",
    ) -> None:
        super().__init__(embedder, dimension, create_embedder)
        self.url = url
        self.conninfo, self.schema, self.vector_search = split_url(url)
        self.read_only = read_only
        self._where = repr(self.schema)
        try:
            name = server_name(self.conninfo)
        except psycopg.Error as exc:  # libpq could not parse it: one line, not a traceback
            raise StoreError(f"{redacted(url)} is not a PostgreSQL URL libpq accepts: "
                             f"{scrubbed(str(exc).strip(), url)}") from None
        self.label = f"{role} {name}" if role else name
        self.lineage = lineage or lineage_of(url)
        self.dialect = PostgresDialect(self.schema)
        self._vectors = RowVectors(self, lambda: self._cache)
        self._merges = InlineMerges(lambda budget: self._merge_due(None, budget))
        #: Settable per store: higher is slower and finds more true neighbours.
        self.hnsw_ef_search = HNSW_EF_SEARCH
        seconds = max(1, round(connect_timeout))  # libpq takes whole seconds
        try:
            with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=seconds) as c:
                meta = self._replica_meta(c) if read_only else self._init_schema(c, analyzer)
        except psycopg.OperationalError as exc:
            raise ServerUnavailable(f"cannot connect to {redacted(url)}: "
                                    f"{scrubbed(str(exc).strip(), url)}") from None
        except psycopg.ProgrammingError as exc:  # an option libpq does not know, a bad value
            raise StoreError(f"{redacted(url)} is not a PostgreSQL URL libpq accepts: "
                             f"{scrubbed(str(exc).strip(), url)}") from None
        self.analyzer = self._adopt(meta, analyzer, embedder)
        self._pool_args = (pool_size, seconds, connect_timeout)
        self._pool = self._new_pool()
        if self.vector_search == "hnsw" and self.embedder != "none" and not read_only:
            self._ensure_hnsw()

    def _replica_meta(self, c: psycopg.Connection) -> dict[str, str]:
        """The meta of a standby's copy of the store, which must be at this code's schema (the
        primary migrates; its standbys replay the migration)."""
        c.execute(sql.SQL("SET search_path = {}, public").format(sql.Identifier(self.schema)))
        try:
            meta = dict(c.execute("SELECT key, value FROM meta").fetchall())
        except psycopg.errors.UndefinedTable:
            raise StoreError(f"{redacted(self.url)} holds no evidex store in schema {self.schema!r} "
                             "(a replica holds what its primary holds: open the primary first)") from None
        if int(meta.get("schema_version", "0")) != SCHEMA_VERSION:
            raise StoreError(f"the store on {redacted(self.url)} has schema version "
                             f"{meta.get('schema_version')}, this evidex {SCHEMA_VERSION}: open the "
                             "primary with this evidex first (it migrates; replicas replay it)")
        return meta

    def _new_pool(self) -> ConnectionPool:
        size, seconds, timeout = self._pool_args
        # A replica's pooled connections are checked as they are handed out (one empty round
        # trip), so a read after a network blip gets a working connection, not a dead one.
        return ConnectionPool(
            self.conninfo, min_size=1, max_size=size, kwargs={"autocommit": True, "connect_timeout": seconds},
            check=ConnectionPool.check_connection if self.read_only else None,
            configure=self._configure, timeout=timeout, open=True, name=f"evidex-{self.schema}")

    def reconnect(self) -> None:
        """Replace the pool by a fresh one (the caches stay): after the server was down, the
        old pool may still be waiting out its reconnection back-off, while the server answers."""
        old, self._pool = self._pool, self._new_pool()
        # Closed on a thread of its own, with the pool's own wait: a worker still trying the
        # old connections ends within it, and neither this caller waits nor psycopg warns on
        # stderr that it "couldn't stop thread ... within 0 seconds".
        threading.Thread(target=old.close, name=f"close-{old.name}", daemon=True).start()

    def _configure(self, conn: psycopg.Connection) -> None:
        conn.execute(sql.SQL("SET search_path = {}, public").format(sql.Identifier(self.schema)))
        register_vector(conn)

    def _init_schema(self, c: psycopg.Connection, analyzer: str | None) -> dict[str, str]:
        """Under an advisory lock, so two processes opening a fresh database never both create
        or migrate it."""
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
            return self._open_schema(_Cursor(c.cursor()), analyzer,
                                     f"schema {self.schema!r} holds tables but no evidex store; "
                                     "choose another with ?schema=NAME")

    def _ensure_hnsw(self) -> None:
        """Build the HNSW index for the current model's dimension (once; later writes and
        re-embeds maintain it). Building takes minutes for a million rows."""
        with self._pooled() as conn:
            have = conn.execute("SELECT value FROM meta WHERE key = 'hnsw'").fetchone()
            idx = conn.execute("SELECT 1 FROM pg_indexes WHERE schemaname = %s "
                               "AND indexname = 'vectors_hnsw'", (self.schema,)).fetchone()
            if have and have[0] == "1" and idx:
                return
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (self._segments_key,))
                conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
                conn.execute(hnsw_ddl(self.dimension))
                conn.execute("UPDATE meta SET value = '1' WHERE key = 'hnsw'")

    @property
    def _segments_key(self) -> str:
        return f"evidex-segments:{self.schema}"

    # -- connections and transactions -----------------------------------------------------------
    @contextmanager
    def _pooled(self) -> Iterator[psycopg.Connection]:
        if self._closed:
            raise StoreError("the store is closed")
        try:
            with self._pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise ServerUnavailable(f"no connection to {redacted(self.url)}: "
                                    f"{scrubbed(str(exc), self.url)}") from None
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            # The server went away under a pooled connection (shut down, restarted, network):
            # the same ServerUnavailable as a failed connect, so callers see one kind of outage
            # (a query that was wrong stays the driver's error).
            if isinstance(exc, psycopg.OperationalError) and not _gone(exc):
                raise
            raise ServerUnavailable(f"the connection to {redacted(self.url)} was lost: "
                                    f"{scrubbed(str(exc).strip(), self.url)}") from exc

    @contextmanager
    def _connection(self) -> Iterator[_Cursor]:
        with self._pooled() as conn:
            yield _Cursor(conn.cursor())

    @contextmanager
    def _snapshot(self) -> Iterator[_Cursor]:
        with self._lock, self._pooled() as conn:
            cur = conn.cursor(binary=True)
            cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            try:
                yield _Cursor(cur)
            finally:
                if not conn.closed:
                    cur.execute("COMMIT")

    @contextmanager
    def _transaction(self, exclusive: bool, conn: Any) -> Iterator[_Cursor]:
        """Writers share the segments lock; merges and re-embeds take it exclusively."""
        if self.read_only:
            raise StoreError(f"{self.label} is a read-only replica: write to its primary")
        with self._pooled() as pg:
            cur = pg.cursor(binary=True)
            cur.execute("BEGIN")
            try:
                lock = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
                cur.execute(f"SELECT {lock}(hashtextextended(%s, 0))", (self._segments_key,))
                yield _Cursor(cur)
            except BaseException:
                if not pg.closed:
                    pg.rollback()
                raise

    def _merge(self, conn: Any, ids: list[int]) -> None:
        def run() -> None:
            with self._write(exclusive=True) as tx:
                self._fold(tx, ids)

        self._retrying(run)

    # -- inspection -----------------------------------------------------------------------------
    def _stats_location(self) -> dict[str, object]:
        return {"backend": "postgresql", "path": redacted(self.url), "schema": self.schema}

    def _stats_extra(self, c: Any, meta: dict[str, str]) -> dict[str, object]:
        size = c.execute("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                         "JOIN pg_namespace n ON n.oid = c.relnamespace "
                         "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm')").fetchone()[0]
        return {"vector_search": self.vector_search, "hnsw_index": meta.get("hnsw") == "1",
                "file_bytes": int(size or 0)}

    def _close_connections(self) -> None:
        self._pool.close()
