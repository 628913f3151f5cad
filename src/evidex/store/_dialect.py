"""What an SQL backend supplies to the store core (``_core``), and the pieces both share.

A ``Dialect`` holds the SQL that differs between backends; a ``VectorStorage`` holds where
passage vectors live and how they are searched. SQL written by the core uses ``?`` placeholders;
a backend whose driver takes another style converts them in its cursors.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np

__all__ = ["Dialect", "Retry", "Tx", "VectorStorage", "now", "sig_key"]


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def sig_key(tenant: str, groups: Iterable[str], visibility: str, language: str | None,
            tags: Iterable[str]) -> str:
    return json.dumps([tenant, sorted(groups), visibility, language, sorted(tags)], ensure_ascii=False)


class Retry(Exception):
    """Internal: the transaction saw a state its input did not cover."""


class Dialect(Protocol):
    """What differs in the SQL of a backend. Cursors take ``?`` placeholders."""

    name: str
    #: Errors after which a write transaction is simply run again (deadlocks between writers).
    retry_errors: tuple[type[BaseException], ...]
    #: An aggregate expression joining ``pid`` into one comma-separated string.
    pid_list: str

    def where_in(self, column: str, keys: Sequence[int]) -> Iterator[tuple[str, Sequence[Any]]]:
        """(condition, parameters) pairs that together select ``column`` in ``keys`` (none for
        no keys)."""
        ...

    def by_document(self, c: Any, select: str, keys: Sequence[tuple[str, str]]) -> list[Any]:
        """The rows of ``select`` (a SELECT without WHERE from ``documents`` or another table with
        tenant and doc_id columns) whose (tenant, doc_id) is one of ``keys``."""
        ...

    def insert_many(self, c: Any, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        ...

    def insert_id(self, c: Any, insert: str, params: Sequence[Any], key: str) -> int:
        """Run an INSERT of one row; the generated ``key`` of the row."""
        ...

    def delete_returning(self, c: Any, table: str, where: str, params: Sequence[Any],
                         columns: str) -> list[Any]:
        """Delete the rows ``where`` selects; their ``columns``."""
        ...

    def bump_generation(self, c: Any) -> int:
        """Add one to the generation; the new value. From this statement to the commit the
        generation row is locked: that is what orders concurrent commits."""
        ...

    def next_pids(self, c: Any, n: int) -> list[int]:
        """``n`` unused passage ids, ascending, larger than every id used before."""
        ...

    def lock_documents(self, c: Any, keys: Iterable[tuple[str, str]]) -> None:
        """Serialise concurrent writers of the same documents (until the transaction ends)."""
        ...

    def objects(self, c: Any) -> set[str]:
        """Names of the tables (and other objects) at the store's location."""
        ...

    def legacy_version(self, c: Any, objects: set[str]) -> int | None:
        """The numbered schema version of a store from before named migrations; None when the
        location holds no such store."""
        ...

    def integrity(self, c: Any) -> list[str]:
        """The engine's own consistency checks of the store's tables and indexes (on a cursor
        from ``SQLStore._connection``), one problem a line."""
        ...


class VectorStorage(Protocol):
    """Where a backend keeps passage vectors, and how it searches them."""

    def meta_rows(self) -> list[tuple[str, str]]: ...

    def cache_model(self) -> tuple[str, int]:
        """(model, dimension) the segment cache keeps vectors of ("none" for none)."""
        ...

    def segment(self, c: Any, ids: Sequence[int], model: str, dimension: int) -> np.ndarray | None:
        """The vectors of segments ``ids`` (rows in their passage order, segments in the order
        given), or None when vectors are not kept per segment."""
        ...

    def write(self, c: Any, segment: int, pids: np.ndarray, sigs: np.ndarray, vectors: np.ndarray,
              model: str) -> None: ...

    def drop(self, c: Any, pids: list[int]) -> None:
        """The passages ``pids`` died."""
        ...

    def drop_segments(self, c: Any, ids: Sequence[int]) -> None:
        """Segments ``ids`` were merged away."""
        ...

    def switch(self, c: Any, model: str, dimension: int, vectors: dict[int, np.ndarray]) -> None:
        """Replace every stored vector by ``model``'s (``vectors`` covers every live passage)."""
        ...

    # The reads below run in a read view's snapshot: ``c`` is its cursor.
    def search(self, c: Any, sigs: Iterable[int], query: np.ndarray,
               k: int) -> tuple[np.ndarray, np.ndarray]: ...

    def sums(self, c: Any, sigs: Iterable[int]) -> dict[int, tuple[np.ndarray, int]]:
        """Per signature with live rows: (sum of its vectors, how many) (``ReadView.vector_sums``)."""
        ...

    def get(self, c: Any, pids: Iterable[int]) -> dict[int, np.ndarray]: ...

    def matrix(self, c: Any, pids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``get`` as (the ids with a vector, in the given order; their vectors stacked)."""
        ...

    def close(self) -> None: ...


@dataclass
class Tx:
    """One write transaction and what it accumulates for its last step (``SQLStore._finish``)."""

    cur: Any
    changed: bool = False
    dead: list[int] = field(default_factory=list)
    sig_delta: dict[int, list[int]] = field(default_factory=dict)
    #: The segment a write of documents adds (``SegmentArrays``), for the readers' cache; with
    #: it, ``_finish`` records the new generation and the signature rows as committed.
    segment: Any = None
    generation: int | None = None
    signatures: list[Any] | None = None
    #: The tenants whose data the write changes: ``_finish`` records the new generation as
    #: each one's (``tenant_generation``); a write of no tenant's data (a merge) records none.
    tenants: set[str] = field(default_factory=set)

    def add(self, sig: int, passages: int, length: int) -> None:
        d = self.sig_delta.setdefault(sig, [0, 0])
        d[0] += passages
        d[1] += length
        self.changed = True
