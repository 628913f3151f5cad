"""Stores in the layouts of earlier evidex versions, for the upgrade tests.

The DDL below is copied verbatim from the last commit before named migrations (da5c528): SQLite's
schema 5 and PostgreSQL's schema versions 1 to 3. ``sqlite_v5`` and ``postgres_legacy`` create
such a store and fill it with the rows of a store written by the current code (the two layouts
hold the same data), so that opening the result exercises exactly what an existing store meets.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
from psycopg import sql

from backends import conninfo_and_schema

SQLITE_V5 = """
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

POSTGRES_V1 = """
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
POSTGRES_V2 = """
CREATE INDEX vectors_sig ON vectors (sig);
CREATE INDEX history_doc ON history (tenant, doc_id);
"""
POSTGRES_V3 = """
CREATE TABLE source_documents (
    tenant text NOT NULL, doc_id text NOT NULL, source text NOT NULL, item text NOT NULL,
    stamp text NOT NULL, content_sha256 text NOT NULL, PRIMARY KEY (tenant, doc_id));
CREATE INDEX source_documents_source ON source_documents (source);
"""


# -- copying a current store into an old layout -----------------------------------------------------
#: table -> (old column list, the current columns they are read from)
_SHARED = {
    "meta": ("key, value", "key, value"),
    "signatures": ("id, key, tenant, groups, visibility, language, tags, passages, total_length",) * 2,
    "documents": ("dkey, tenant, doc_id, version, content_sha256, meta, split, sig, indexed_at",) * 2,
    "document_texts": ("dkey, text",) * 2,
    "history": ("id, tenant, doc_id, version, content_sha256, meta, split, text, superseded_at",) * 2,
    "segments": ("id, n, pids, sigs, lengths, dkeys, numbers, terms, term_ends, term_pids, term_tfs",) * 2,
    "postings": ("term, segment, pids, tfs",) * 2,
    "source_documents": ("tenant, doc_id, source, item, stamp, content_sha256",) * 2,
}
_PASSAGE_COLUMNS = "pid, dkey, number, start_off, end_off, length, heading_path, anchor, page, flags, text"


def sqlite_v5(current: Path, old: Path) -> None:
    """A schema-5 SQLite store at ``old`` holding the rows of the current store ``current``."""
    with sqlite3.connect(old) as c:
        c.executescript(SQLITE_V5)
        c.execute("ATTACH ? AS cur", (str(current),))
        old_passages = _PASSAGE_COLUMNS.replace("start_off, end_off", "start, end")
        tables = {**_SHARED, "passages": (old_passages, _PASSAGE_COLUMNS),
                  "segment_vectors": ("segment, model, part, vecs",) * 2}
        for table, (old_cols, cur_cols) in tables.items():
            c.execute(f"INSERT INTO {table} ({old_cols}) SELECT {cur_cols} FROM cur.{table}")
        c.execute("INSERT INTO tombstones (pid) SELECT pid FROM cur.tombstones ORDER BY gen, pid")
        c.execute("DELETE FROM sqlite_sequence WHERE name != 'tombstones'")
        c.execute("INSERT INTO sqlite_sequence SELECT * FROM cur.sqlite_sequence WHERE name != 'tombstones'")
        c.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    c.close()


def postgres_legacy(current_url: str, old_url: str, version: int) -> None:
    """A PostgreSQL store of schema ``version`` (1 to 3) at ``old_url`` holding the rows of the
    current store at ``current_url`` (both in one database)."""
    conninfo, cur_schema = conninfo_and_schema(current_url)
    _, old_schema = conninfo_and_schema(old_url)
    tables = {**_SHARED, "passages": (_PASSAGE_COLUMNS,) * 2,
              "tombstones": ("gen, pid",) * 2, "vectors": ("pid, sig, embedding",) * 2}
    if version < 3:
        del tables["source_documents"]
    with psycopg.connect(conninfo, autocommit=True) as c, c.transaction():
        c.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(old_schema)))
        c.execute(sql.SQL("SET LOCAL search_path = {}, public").format(sql.Identifier(old_schema)))
        c.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, "
                  "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
        for v, ddl in enumerate((POSTGRES_V1, POSTGRES_V2, POSTGRES_V3)[:version], start=1):
            for stmt in ddl.split(";"):
                if stmt.strip():
                    c.execute(stmt)  # type: ignore[call-overload]
            c.execute("INSERT INTO schema_version (version) VALUES (%s)", (v,))
        for table, (old_cols, cur_cols) in tables.items():
            query = "INSERT INTO {} (" + old_cols + ") SELECT " + cur_cols + " FROM {}.{}"
            c.execute(sql.SQL(query).format(  # type: ignore[arg-type]
                sql.Identifier(table), sql.Identifier(cur_schema), sql.Identifier(table)))
        c.execute("DELETE FROM meta WHERE key = 'schema_version'")
        for seq in ("signatures_id_seq", "documents_dkey_seq", "passages_pid_seq", "history_id_seq",
                    "segments_id_seq"):
            last = c.execute(sql.SQL("SELECT last_value, is_called FROM {}.{}").format(
                sql.Identifier(cur_schema), sql.Identifier(seq))).fetchone()
            assert last is not None, seq
            c.execute("SELECT setval(%s, %s, %s)", (seq, last[0], last[1]))
