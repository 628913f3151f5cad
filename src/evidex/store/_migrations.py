"""Schema migrations of both backends: registered, named functions applied in order.

A new store is created from the schema description (``_schema``) and records every migration
as applied. Opening an existing store applies the migrations it lacks, in registration order,
inside the caller's transaction (which holds the backend's migration lock), and records each
by name in ``migrations``. A store that records a name this code does not know was upgraded
by a newer evidex, and is refused. ``meta.schema_version`` holds the number of migrations
applied: what ``stats`` reports, and what evidex releases that still numbered their schemas
read to refuse a store they cannot use.

Stores written before the migrations had names carry a number instead (SQLite: the meta key
``schema_version``; PostgreSQL: the ``schema_version`` table); ``legacy`` tells, per backend,
the numbered version that already included a migration.

A migration that builds a table from the description must stay the last to change that table:
a later change would otherwise reach old stores too early. Migrations must not rely on a
later migration's tables or columns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from ..model import StoreError
from ._schema import create_statements, schema_statements

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "Migrations", "upgrade"]

DIALECTS = ("sqlite", "postgresql")


class SchemaCursor(Protocol):
    def execute(self, query: str, params: Any = ...) -> Any: ...


class SchemaDialect(Protocol):
    """What migrating needs to know of a backend (see ``_core.Dialect``)."""

    name: str

    def objects(self, c: SchemaCursor) -> set[str]: ...

    def legacy_version(self, c: SchemaCursor, objects: set[str]) -> int | None: ...


#: A migration: it gets a cursor inside the upgrade's transaction and the backend's name.
Step = Callable[[SchemaCursor, str], None]


@dataclass(frozen=True, slots=True)
class Migration:
    name: str
    run: Step
    dialects: tuple[str, ...]
    legacy: Mapping[str, int] = field(default_factory=dict)


class Migrations:
    """An ordered registry: ``@migrations("name", dialects=..., legacy=...)`` adds a function."""

    def __init__(self) -> None:
        self._all: list[Migration] = []

    def __call__(self, name: str, *, dialects: Iterable[str] = DIALECTS,
                 legacy: Mapping[str, int] | None = None
                 ) -> Callable[[Step], Step]:
        def register(fn: Step) -> Step:
            if any(m.name == name for m in self._all):
                raise ValueError(f"migration {name!r} is registered twice")
            self._all.append(Migration(name, fn, tuple(dialects), dict(legacy or {})))
            return fn

        return register

    @property
    def names(self) -> list[str]:
        return [m.name for m in self._all]

    def legacy_applied(self, dialect: str, version: int) -> list[str]:
        """Names a store numbered ``version`` had: those its version included, and those that
        do not concern its backend."""
        return [m.name for m in self._all
                if dialect not in m.dialects or m.legacy.get(dialect, version + 1) <= version]

    def legacy_latest(self, dialect: str) -> int:
        return max((m.legacy.get(dialect, 1) for m in self._all), default=1)

    def pending(self, applied: set[str], dialect: str) -> list[Migration]:
        return [m for m in self._all if m.name not in applied and dialect in m.dialects]


MIGRATIONS = Migrations()
migration = MIGRATIONS


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def upgrade(c: SchemaCursor, dialect: SchemaDialect, where: str, foreign: str) -> bool:
    """Bring the store at the cursor's location to the current schema, or create it when the
    location is empty; True when it was created. ``where`` names the store in messages;
    ``foreign`` is the message for a location that holds something else."""
    objects = dialect.objects(c)
    if not objects:
        for stmt in schema_statements(dialect.name):
            c.execute(stmt)
        _record(c, MIGRATIONS.names)
        return True
    if "migrations" in objects:
        applied = {r[0] for r in c.execute("SELECT name FROM migrations").fetchall()}
    else:
        version = dialect.legacy_version(c, objects)
        if version is None:
            raise StoreError(foreign)
        latest = MIGRATIONS.legacy_latest(dialect.name)
        if version > latest:
            raise StoreError(f"{where} has schema version {version}; this evidex supports up to "
                             f"{latest}: upgrade evidex")
        for stmt in create_statements("migrations", dialect.name):
            c.execute(stmt)
        applied = set(MIGRATIONS.legacy_applied(dialect.name, version))
        _record(c, sorted(applied))
    unknown = sorted(applied - set(MIGRATIONS.names))
    if unknown:
        raise StoreError(f"{where} was upgraded by a newer evidex (migration {unknown[0]!r}): "
                         "upgrade evidex")
    for m in MIGRATIONS.pending(applied, dialect.name):
        m.run(c, dialect.name)
        _record(c, [m.name])
    done = len(MIGRATIONS.names)
    c.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(done),))
    if "schema_version" not in {r[0] for r in c.execute("SELECT key FROM meta").fetchall()}:
        c.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(done),))
    return False


def _record(c: SchemaCursor, names: Iterable[str]) -> None:
    stamp = _now()
    for name in names:
        c.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (name, stamp))


def _run(c: SchemaCursor, statements: str) -> None:
    for stmt in statements.split(";"):
        if stmt.strip():
            c.execute(stmt)


# -- the migrations, oldest first ----------------------------------------------------------------

@migration("source_documents", legacy={"sqlite": 2, "postgresql": 3})
def _source_documents(c: SchemaCursor, dialect: str) -> None:
    """Which configured source wrote each document, and the stamp that lets a re-sync skip an
    unchanged item (written in the same transaction as the document)."""
    for stmt in create_statements("source_documents", dialect):
        c.execute(stmt)


@migration("segment_vectors_in_parts", dialects=("sqlite",), legacy={"sqlite": 3})
def _segment_vectors_in_parts(c: SchemaCursor, dialect: str) -> None:
    """One segment's vectors can exceed SQLite's largest blob (1e9 bytes): store them in parts."""
    _run(c, """
        ALTER TABLE segment_vectors RENAME TO segment_vectors_v2;
        CREATE TABLE segment_vectors (segment INTEGER NOT NULL, model TEXT NOT NULL,
            part INTEGER NOT NULL, vecs BLOB NOT NULL, PRIMARY KEY (segment, model, part)) WITHOUT ROWID;
        INSERT INTO segment_vectors (segment, model, part, vecs)
            SELECT segment, model, 0, vecs FROM segment_vectors_v2;
        DROP TABLE segment_vectors_v2""")


@migration("blob_tables_keyed_beside_rows", dialects=("sqlite",), legacy={"sqlite": 4})
def _blob_tables_keyed_beside_rows(c: SchemaCursor, dialect: str) -> None:
    """Rebuild the tables of large rows with their key in an index (``Table.large_rows``)."""
    for table, key, rest in (("postings", "term, segment", "pids, tfs"),
                             ("segment_vectors", "segment, model, part", "vecs")):
        for (index,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
                                  "AND sql IS NOT NULL", (table,)).fetchall():
            c.execute(f"DROP INDEX {index}")
        c.execute(f"ALTER TABLE {table} RENAME TO {table}_v3")
        for stmt in create_statements(table, "sqlite"):
            c.execute(stmt)
        c.execute(f"INSERT INTO {table} ({key}, {rest}) SELECT {key}, {rest} FROM {table}_v3 ORDER BY {key}")
        c.execute(f"DROP TABLE {table}_v3")


@migration("tombstones_by_passage", dialects=("sqlite",), legacy={"sqlite": 5})
def _tombstones_by_passage(c: SchemaCursor, dialect: str) -> None:
    """A merge deletes the tombstones of the passages it drops; without an index each delete
    scanned the table. (PostgreSQL stores had the index from the start.)"""
    c.execute("CREATE INDEX IF NOT EXISTS tombstones_pid ON tombstones (pid)")


@migration("vector_and_history_indexes", dialects=("postgresql",), legacy={"postgresql": 2})
def _vector_and_history_indexes(c: SchemaCursor, dialect: str) -> None:
    """Exact filtered vector search in SQL reads the rows of the allowed signatures (a bitmap
    scan on ``sig``); resolving and removing look history up by document."""
    _run(c, "CREATE INDEX vectors_sig ON vectors (sig); CREATE INDEX history_doc ON history (tenant, doc_id)")


@migration("tombstones_by_generation", dialects=("sqlite",))
def _tombstones_by_generation(c: SchemaCursor, dialect: str) -> None:
    """Tombstones carry the generation of the write that made them, as in PostgreSQL, instead
    of a sequence number. Every existing tombstone gets the current generation: readers load
    all tombstones on their first refresh anyway."""
    _run(c, """
        DROP INDEX IF EXISTS tombstones_pid;
        ALTER TABLE tombstones RENAME TO tombstones_v5""")
    for stmt in create_statements("tombstones", "sqlite"):
        c.execute(stmt)
    _run(c, """
        INSERT INTO tombstones (gen, pid) SELECT (SELECT CAST(value AS INTEGER) FROM meta
            WHERE key = 'generation'), pid FROM tombstones_v5 ORDER BY seq;
        DROP TABLE tombstones_v5""")


@migration("passage_offsets_named_alike", dialects=("sqlite",))
def _passage_offsets_named_alike(c: SchemaCursor, dialect: str) -> None:
    """The passage offsets are ``start_off`` and ``end_off`` in both backends (``end`` is a
    reserved word in PostgreSQL)."""
    _run(c, """
        ALTER TABLE passages RENAME COLUMN "start" TO start_off;
        ALTER TABLE passages RENAME COLUMN "end" TO end_off""")


@migration("named_migrations", dialects=("postgresql",))
def _named_migrations(c: SchemaCursor, dialect: str) -> None:
    """Migrations are recorded by name in ``migrations``; the numbered record goes."""
    c.execute("DROP TABLE IF EXISTS schema_version")


@migration("run_log")
def _run_log(c: SchemaCursor, dialect: str) -> None:
    """A row per sync or drift run (``_runs``). Stores written by the evidex that created this
    table on first use may hold it already, in the same layout."""
    for stmt in create_statements("runs", dialect):
        c.execute(stmt.replace("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ", 1))


@migration("conflicts")
def _conflicts(c: SchemaCursor, dialect: str) -> None:
    """Disagreements between passages found at ingestion (``_conflicts``)."""
    for stmt in create_statements("conflicts", dialect):
        c.execute(stmt)


@migration("run_claims")
def _run_claims(c: SchemaCursor, dialect: str) -> None:
    """Which scheduler took on which due run (``_runs.claim``)."""
    for stmt in create_statements("run_claims", dialect):
        c.execute(stmt)


@migration("tenant_moves")
def _tenant_moves(c: SchemaCursor, dialect: str) -> None:
    """Tenants marked as moving or moved to another server (``_tenants``)."""
    for stmt in create_statements("tenant_moves", dialect):
        c.execute(stmt)


@migration("operator_records")
def _operator_records(c: SchemaCursor, dialect: str) -> None:
    """Answers by trace id, the feedback on them and the handoffs sent (``_feedback``)."""
    for table in ("answer_records", "feedback", "handoff_records"):
        for stmt in create_statements(table, dialect):
            c.execute(stmt)


@migration("operator_reports")
def _operator_reports(c: SchemaCursor, dialect: str) -> None:
    """Who was told about a source's findings, and recorded evaluation runs (``_reports``)."""
    for table in ("owner_notices", "eval_reports"):
        for stmt in create_statements(table, dialect):
            c.execute(stmt)


#: The number of migrations a current store has applied (``meta.schema_version``).
SCHEMA_VERSION = len(MIGRATIONS.names)
