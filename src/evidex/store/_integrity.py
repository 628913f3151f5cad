"""The database engines' own consistency checks of a store (``Store.integrity``, run through each
backend's dialect), one problem a line; evidex's checks of the stored content are
``evidex.check``'s."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the postgres extra is needed only for PostgreSQL stores
    import psycopg

__all__ = ["postgres_integrity", "sqlite_integrity"]


def sqlite_integrity(c: sqlite3.Connection) -> list[str]:
    """``PRAGMA integrity_check`` (pages, b-trees, indexes against their tables, NOT NULL and
    UNIQUE) and ``PRAGMA foreign_key_check``."""
    try:
        found = [r[0] for r in c.execute("PRAGMA integrity_check") if r[0] != "ok"]
        found += [f"{table} row {rowid} refers to a missing {parent} row"
                  for table, rowid, parent, _ in c.execute("PRAGMA foreign_key_check")]
    except sqlite3.DatabaseError as exc:
        found = [f"the file cannot be checked: {exc}"]
    return found


_IN_SCHEMA = ("FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n "
              "ON n.oid = c.relnamespace WHERE n.nspname = current_schema()")


def postgres_integrity(conn: psycopg.Connection) -> list[str]:
    """What PostgreSQL's catalog says is wrong with the store's schema: indexes left invalid or
    unready (a failed build), constraints not validated, and, where the ``amcheck`` extension is
    installed, each b-tree's structure (``bt_index_check``)."""
    import psycopg

    found = [f"index {name} is not valid" for (name,) in conn.execute(
        f"SELECT c.relname {_IN_SCHEMA} AND NOT (i.indisvalid AND i.indisready AND i.indislive) "
        "ORDER BY 1").fetchall()]
    found += [f"constraint {name} of {table} is not validated" for name, table in conn.execute(
        "SELECT con.conname, con.conrelid::regclass::text FROM pg_constraint con JOIN "
        "pg_namespace n ON n.oid = con.connamespace WHERE n.nspname = current_schema() "
        "AND NOT con.convalidated ORDER BY 1").fetchall()]
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'amcheck'").fetchone():
        btrees = conn.execute(f"SELECT c.relname, c.oid {_IN_SCHEMA} AND i.indisvalid AND c.relam = "
                              "(SELECT oid FROM pg_am WHERE amname = 'btree') ORDER BY 1").fetchall()
        for name, oid in btrees:
            try:
                with conn.transaction():
                    conn.execute("SELECT bt_index_check(%s)", (oid,))
            except psycopg.Error as exc:
                found.append(f"index {name}: {str(exc).splitlines()[0]}")
    conn.rollback()
    return found
