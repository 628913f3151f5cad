"""PostgreSQL schema of the evidex store and its migrations.

The layout mirrors the SQLite backend's (see ``_sqlite._SCHEMA``) so both feed the same in-memory
segment cache and BM25 core: documents and passages as rows, superseded versions in ``history``,
the keyword index as immutable segments whose per-passage arrays and postings are ``bytea``
arrays. Differences, and why:

* ``tombstones`` are keyed by the generation of the transaction that wrote them, not by a
  sequence: concurrent writers draw sequence values in start order but commit in another order,
  so "everything after the last sequence number I saw" could skip a late-committing row. The
  generation is bumped last in every write, under the generation row's lock, so generations
  commit in order and a snapshot always holds a prefix of them.
* vectors live in their own table (``vectors``: pid, signature, pgvector ``vector``) rather than
  a blob per segment: exact mode loads them into memory by pid, hnsw mode searches them with an
  index in SQL, and supersedes delete rows in place. The column has no fixed dimension so a
  re-embed with another model can replace every row in one transaction; the optional HNSW index
  is an expression index on ``embedding::vector(d)`` for the current model's dimension.

Migrations are functions keyed by the version they produce, applied in order, each in its own
transaction under an advisory lock so two processes opening a fresh database never both migrate.
``schema_version`` records each applied version.
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from ._conflicts import CONFLICTS_DDL

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "current_version", "migrate"]

_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE signatures (
    id SERIAL PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    groups TEXT NOT NULL,
    visibility TEXT NOT NULL,
    language TEXT,
    tags TEXT NOT NULL,
    passages BIGINT NOT NULL DEFAULT 0,
    total_length BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE documents (
    dkey SERIAL PRIMARY KEY,
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
    dkey INTEGER PRIMARY KEY REFERENCES documents(dkey) ON DELETE CASCADE,
    text TEXT NOT NULL
);
CREATE TABLE passages (
    pid INTEGER PRIMARY KEY,
    dkey INTEGER NOT NULL REFERENCES documents(dkey),
    number INTEGER NOT NULL,
    start_off INTEGER NOT NULL,
    end_off INTEGER NOT NULL,
    length INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    anchor TEXT,
    page INTEGER,
    flags TEXT NOT NULL DEFAULT '[]',
    text TEXT NOT NULL,
    UNIQUE (dkey, number)
);
CREATE SEQUENCE passages_pid_seq AS INTEGER;
CREATE TABLE history (
    id BIGSERIAL PRIMARY KEY,
    tenant TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    version TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    meta TEXT NOT NULL,
    split TEXT NOT NULL,
    text TEXT NOT NULL,
    superseded_at TEXT NOT NULL
);
CREATE TABLE segments (
    id SERIAL PRIMARY KEY,
    n INTEGER NOT NULL,
    pids BYTEA NOT NULL,
    sigs BYTEA NOT NULL,
    lengths BYTEA NOT NULL,
    dkeys BYTEA NOT NULL,
    numbers BYTEA NOT NULL,
    terms TEXT,
    term_ends BYTEA,
    term_pids BYTEA,
    term_tfs BYTEA
);
CREATE TABLE postings (
    term TEXT NOT NULL,
    segment INTEGER NOT NULL,
    pids BYTEA NOT NULL,
    tfs BYTEA NOT NULL,
    PRIMARY KEY (term, segment)
);
CREATE INDEX postings_segment ON postings (segment);
CREATE TABLE tombstones (gen BIGINT NOT NULL, pid INTEGER NOT NULL);
CREATE INDEX tombstones_gen ON tombstones (gen);
CREATE INDEX tombstones_pid ON tombstones (pid);
CREATE TABLE vectors (
    pid INTEGER PRIMARY KEY,
    sig INTEGER NOT NULL,
    embedding vector NOT NULL
);
"""

# Version 2: indexes that the first layout lacked. Exact filtered vector search reads the rows
# of the allowed signatures (a bitmap scan on (sig) instead of the whole table when an actor
# sees a small part of it), and resolve / remove look history up by document.
_V2 = """
CREATE INDEX vectors_sig ON vectors (sig);
CREATE INDEX history_doc ON history (tenant, doc_id);
"""


def _run(sql: str) -> Callable[[psycopg.Cursor], None]:
    def step(cur: psycopg.Cursor) -> None:
        for stmt in sql.split(";"):
            if stmt.strip():
                cur.execute(stmt)  # type: ignore[call-overload]

    return step


#: version -> the step that brings a database from version - 1 to it.
# Version 3: which configured source wrote each document, and the stamp that lets a re-sync skip
# an unchanged item (written in the same transaction as the document, see Store.apply).
_V3 = """
CREATE TABLE source_documents (
    tenant text NOT NULL, doc_id text NOT NULL, source text NOT NULL, item text NOT NULL,
    stamp text NOT NULL, content_sha256 text NOT NULL, PRIMARY KEY (tenant, doc_id));
CREATE INDEX source_documents_source ON source_documents (source);
"""

# Version 4: conflicts between passages of different documents (see _conflicts).
MIGRATIONS: dict[int, Callable[[psycopg.Cursor], None]] = {
    1: _run(_V1), 2: _run(_V2), 3: _run(_V3), 4: _run(CONFLICTS_DDL["postgresql"])}
SCHEMA_VERSION = max(MIGRATIONS)


def current_version(cur: psycopg.Cursor) -> int:
    """The store's schema version in the connection's schema; 0 when it holds no store."""
    exists = cur.execute(
        "SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'schema_version'"
    ).fetchone()
    if not exists:
        return 0
    row = cur.execute("SELECT max(version) FROM schema_version").fetchone()
    return int(row[0] or 0) if row else 0


def migrate(cur: psycopg.Cursor, target: int = SCHEMA_VERSION) -> list[int]:
    """Apply the missing migrations up to ``target`` inside the caller's transaction (which must
    hold the migration lock); returns the versions applied."""
    version = current_version(cur)
    if version == 0:
        cur.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, "
                    "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
    applied = []
    for v in range(version + 1, target + 1):
        MIGRATIONS[v](cur)
        cur.execute("INSERT INTO schema_version (version) VALUES (%s)", (v,))
        applied.append(v)
    return applied
