"""The store's tables, written once and rendered as DDL for each backend.

Layout: documents and passages as ordinary rows, superseded versions in ``history``, and the
keyword index as immutable segments: one row of per-passage arrays per segment plus, for a large
segment, one row of (passage ids, term frequencies) blobs per (term, segment). ``tombstones``
lists the passages that died since their segment was written, keyed by the generation of the
write that killed them (see ``_core``). Passage vectors are the one part stored differently: as
blobs per segment in SQLite (``segment_vectors``), as pgvector rows in PostgreSQL (``vectors``).

Column kinds: ``id`` (an auto-increment integer key), ``bigid`` (the same, 64-bit in PostgreSQL),
``int``, ``bigint``, ``text``, ``blob``, ``bool`` and ``vector`` (pgvector, without a fixed dimension, so a
re-embed with another model can replace every row in one transaction).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["TABLES", "Column", "Index", "Table", "column_kinds", "columns", "create_statements",
           "schema_statements", "table"]


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: str
    null: bool = False
    default: str | None = None
    unique: bool = False
    references: str | None = None  # "table(column)"


@dataclass(frozen=True, slots=True)
class Index:
    name: str
    columns: tuple[str, ...]
    unique: bool = False


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    #: The primary key when it is not a single ``id``/``bigid`` column.
    key: tuple[str, ...] = ()
    #: Its name when SQLite keeps ``key`` in a unique index beside a rowid (``large_rows``).
    key_index: str = ""
    unique: tuple[tuple[str, ...], ...] = ()
    indexes: tuple[Index, ...] = ()
    dialects: tuple[str, ...] = ("sqlite", "postgresql")
    #: Rows of up to hundreds of megabytes. SQLite stores such a table with a rowid and its key
    #: in a separate unique index: in a WITHOUT ROWID table (or one whose key is the row) the
    #: key b-tree's interior cells are whole rows, and comparing keys reads a cell's entire
    #: overflowing payload, so every lookup read megabytes of neighbouring blobs.
    large_rows: bool = False
    #: SQLite only: small rows looked up by their composite key.
    without_rowid: bool = False


def _c(name: str, kind: str, **kw: object) -> Column:
    return Column(name, kind, **kw)  # type: ignore[arg-type]


TABLES: tuple[Table, ...] = (
    Table("meta", (_c("key", "text"), _c("value", "text")), key=("key",)),
    Table("migrations", (_c("name", "text"), _c("applied_at", "text")), key=("name",)),
    Table("signatures", (
        _c("id", "id"), _c("key", "text", unique=True), _c("tenant", "text"), _c("groups", "text"),
        _c("visibility", "text"), _c("language", "text", null=True), _c("tags", "text"),
        _c("passages", "bigint", default="0"), _c("total_length", "bigint", default="0"))),
    Table("documents", (
        _c("dkey", "id"), _c("tenant", "text"), _c("doc_id", "text"), _c("version", "text"),
        _c("content_sha256", "text"), _c("meta", "text"), _c("split", "text"),
        _c("sig", "int", references="signatures(id)"), _c("indexed_at", "text")),
        unique=(("tenant", "doc_id"),)),
    Table("document_texts", (_c("dkey", "int", references="documents(dkey)"), _c("text", "text")),
          key=("dkey",)),
    Table("passages", (
        _c("pid", "id"), _c("dkey", "int", references="documents(dkey)"), _c("number", "int"),
        _c("start_off", "int"), _c("end_off", "int"), _c("length", "int"), _c("heading_path", "text"),
        _c("anchor", "text", null=True), _c("page", "int", null=True),
        _c("flags", "text", default="'[]'"), _c("text", "text")),
        unique=(("dkey", "number"),)),
    Table("history", (
        _c("id", "bigid"), _c("tenant", "text"), _c("doc_id", "text"), _c("version", "text"),
        _c("content_sha256", "text"), _c("meta", "text"), _c("split", "text"), _c("text", "text"),
        _c("superseded_at", "text")),
        indexes=(Index("history_doc", ("tenant", "doc_id")),)),
    # A small segment's postings are packed into its row (terms, term_ends, term_pids,
    # term_tfs); a large one's are rows of ``postings`` and these four are NULL.
    Table("segments", (
        _c("id", "id"), _c("n", "int"), _c("pids", "blob"), _c("sigs", "blob"), _c("lengths", "blob"),
        _c("dkeys", "blob"), _c("numbers", "blob"), _c("terms", "text", null=True),
        _c("term_ends", "blob", null=True), _c("term_pids", "blob", null=True),
        _c("term_tfs", "blob", null=True))),
    Table("postings", (_c("term", "text"), _c("segment", "int"), _c("pids", "blob"), _c("tfs", "blob")),
          key=("term", "segment"), key_index="postings_term", large_rows=True,
          indexes=(Index("postings_segment", ("segment",)),)),
    Table("tombstones", (_c("gen", "bigint"), _c("pid", "int")),
          indexes=(Index("tombstones_gen", ("gen",)), Index("tombstones_pid", ("pid",)))),
    Table("source_documents", (
        _c("tenant", "text"), _c("doc_id", "text"), _c("source", "text"), _c("item", "text"),
        _c("stamp", "text"), _c("content_sha256", "text")),
        key=("tenant", "doc_id"), without_rowid=True,
        indexes=(Index("source_documents_source", ("source",)),)),
    # SQLite refuses blobs over 1e9 bytes, which one segment of 1M x 384 float32 exceeds, so a
    # segment's vectors are stored in parts of consecutive rows.
    Table("segment_vectors", (
        _c("segment", "int"), _c("model", "text"), _c("part", "int"), _c("vecs", "blob")),
        key=("segment", "model", "part"), key_index="segment_vectors_key", large_rows=True,
        dialects=("sqlite",)),
    Table("vectors", (_c("pid", "int"), _c("sig", "int"), _c("embedding", "vector")), key=("pid",),
          indexes=(Index("vectors_sig", ("sig",)),), dialects=("postgresql",)),
    # One row per sync or drift run of a source (``_runs``); never read by search.
    Table("runs", (
        _c("id", "bigid"), _c("kind", "text"), _c("source", "text"), _c("tenant", "text", null=True),
        _c("scheduled_for", "text", null=True), _c("started_at", "text"), _c("ended_at", "text"),
        _c("ok", "bool"), _c("counts", "text"), _c("problems", "text"))),
    # One row per disagreement found between passages of two documents (``_conflicts``); the
    # unique ``key`` makes detecting it again a no-op. Never read by search.
    Table("conflicts", (
        _c("id", "bigid"), _c("tenant", "text"), _c("key", "text", unique=True), _c("data", "text"),
        _c("detected_at", "text"), _c("dismissed_at", "text", null=True),
        _c("dismissed_by", "text", null=True))),
    # One row per scheduled run a scheduler took on (``_runs.claim``): the unique ``key`` (kind,
    # source, due minute) lets one of several schedulers on a store run each due job.
    Table("run_claims", (
        _c("id", "bigid"), _c("key", "text", unique=True), _c("holder", "text"),
        _c("claimed_at", "text"))),
    # One row per tenant marked as moving or moved to another server (``_tenants``); read by
    # every write of the tenant and by each reader's cache refresh.
    Table("tenant_moves", (
        _c("tenant", "text"), _c("state", "text"), _c("location", "text"), _c("replicas", "text"),
        _c("at", "text")), key=("tenant",)),
    # What the service records for the people who run it (``_feedback``): each answer by its
    # trace id (no passage text), the feedback on it, the handoffs to a person. Never read by
    # search.
    Table("answer_records", (
        _c("id", "bigid"), _c("tenant", "text"), _c("trace_id", "text"), _c("caller", "text"),
        _c("actor", "text"), _c("question", "text"), _c("status", "text"),
        _c("reason", "text", null=True), _c("cited", "text"), _c("related", "text"),
        _c("asked_at", "text")),
        unique=(("tenant", "trace_id"),), indexes=(Index("answer_records_asked", ("tenant", "asked_at")),)),
    Table("feedback", (
        _c("id", "bigid"), _c("tenant", "text"), _c("trace_id", "text"), _c("caller", "text"),
        _c("rating", "text"), _c("note", "text", null=True), _c("given_at", "text")),
        unique=(("tenant", "trace_id"),), indexes=(Index("feedback_given", ("tenant", "given_at")),)),
    Table("handoff_records", (
        _c("id", "bigid"), _c("tenant", "text"), _c("reference", "text"), _c("caller", "text"),
        _c("question", "text"), _c("trace_ids", "text"), _c("delivered", "bool"), _c("sent_at", "text")),
        indexes=(Index("handoff_records_sent", ("tenant", "sent_at")),)),
    # Who was told about a source's findings, and each recorded evaluation run (``_reports``).
    # Never read by search.
    Table("owner_notices", (
        _c("id", "bigid"), _c("tenant", "text"), _c("source", "text"), _c("owner", "text"),
        _c("route", "text"), _c("sent_at", "text"), _c("delivered", "bool"), _c("error", "text", null=True),
        _c("findings", "text")),
        indexes=(Index("owner_notices_sent", ("tenant", "sent_at")),)),
    Table("eval_reports", (
        _c("id", "bigid"), _c("tenant", "text"), _c("name", "text"), _c("started_at", "text"),
        _c("ended_at", "text"), _c("passed", "bool"), _c("summary", "text")),
        indexes=(Index("eval_reports_ended", ("tenant", "ended_at")),)),
)

_TYPES = {
    "sqlite": {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "bigid": "INTEGER PRIMARY KEY AUTOINCREMENT",
               "int": "INTEGER", "bigint": "INTEGER", "text": "TEXT", "blob": "BLOB", "bool": "BOOLEAN"},
    "postgresql": {"id": "SERIAL PRIMARY KEY", "bigid": "BIGSERIAL PRIMARY KEY", "int": "INTEGER",
                   "bigint": "BIGINT", "text": "TEXT", "blob": "BYTEA", "vector": "vector",
                   "bool": "BOOLEAN"},
}

#: PostgreSQL's binary COPY type of each column kind.
_COPY_TYPES = {"id": "int4", "bigid": "int8", "int": "int4", "bigint": "int8", "text": "text",
               "blob": "bytea", "vector": "vector", "bool": "bool"}


def table(name: str) -> Table:
    for t in TABLES:
        if t.name == name:
            return t
    raise KeyError(name)


def columns(name: str) -> tuple[str, ...]:
    """The column names of table ``name``, in order."""
    return tuple(c.name for c in table(name).columns)


def column_kinds(name: str, names: tuple[str, ...]) -> list[str]:
    """PostgreSQL binary COPY types of these columns of table ``name``."""
    kinds = {c.name: c.kind for c in table(name).columns}
    return [_COPY_TYPES[kinds[c]] for c in names]


def _column(c: Column, dialect: str, inline_key: bool) -> str:
    out = f"{c.name} {_TYPES[dialect][c.kind]}"
    if inline_key:
        out += " PRIMARY KEY"
    elif c.kind not in ("id", "bigid") and not c.null:
        out += " NOT NULL"
    if c.unique:
        out += " UNIQUE"
    if c.default is not None:
        out += f" DEFAULT {c.default}"
    if c.references:
        out += f" REFERENCES {c.references}"
    return out


def create_statements(name: str, dialect: str) -> Iterator[str]:
    """The statements that create table ``name`` and its indexes in ``dialect``."""
    t = table(name)
    rowid_key = dialect == "sqlite" and t.large_rows
    inline = t.key[0] if len(t.key) == 1 and not rowid_key else None
    parts = ["id INTEGER PRIMARY KEY"] if rowid_key else []
    parts += [_column(c, dialect, c.name == inline) for c in t.columns]
    if len(t.key) > 1 and not rowid_key:
        parts.append(f"PRIMARY KEY ({', '.join(t.key)})")
    parts += [f"UNIQUE ({', '.join(u)})" for u in t.unique]
    tail = " WITHOUT ROWID" if dialect == "sqlite" and t.without_rowid else ""
    yield f"CREATE TABLE {t.name} ({', '.join(parts)}){tail}"
    indexes = ((Index(t.key_index, t.key, unique=True),) if rowid_key else ()) + t.indexes
    for ix in indexes:
        unique = "UNIQUE " if ix.unique else ""
        yield f"CREATE {unique}INDEX {ix.name} ON {t.name} ({', '.join(ix.columns)})"


def schema_statements(dialect: str) -> Iterator[str]:
    """Every statement that creates an empty store in ``dialect``."""
    for t in TABLES:
        if dialect in t.dialects:
            yield from create_statements(t.name, dialect)
