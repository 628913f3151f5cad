"""The read view of an SQL store: everything read through one view comes from one snapshot.

It answers the ranking core from the store's ``SegmentCache`` (per-passage arrays, postings) and
reads rows through the snapshot's cursor; it is also the ``SegmentSource`` the cache refreshes
itself from. Vector searches go to the backend's ``VectorStorage``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ._contract import HistoryEntry, Signature, StoredDocument, StoredPassage
from ._dialect import Dialect, VectorStorage
from ._segments import PID, TF, FlatPostings, SegmentArrays, SegmentCache, decode
from ._tenants import Mark, marks
from ._tenants import generation as tenant_generation

__all__ = ["DOC_SELECT", "PASSAGE_SELECT", "SQLView", "read_signatures"]

#: The column orders ``StoredDocument.from_row`` and ``StoredPassage.from_row`` read.
DOC_SELECT = "SELECT dkey, tenant, doc_id, version, content_sha256, meta, split, indexed_at FROM documents"
PASSAGE_SELECT = ("SELECT pid, dkey, number, start_off, end_off, text, heading_path, anchor, page, flags "
                  "FROM passages")


@functools.lru_cache(maxsize=4096)
def _string_set(text: str) -> frozenset[str]:
    """A signature's groups or tags from their JSON: every refresh reads every signature row,
    and most rows repeat a few group and tag lists."""
    return frozenset(json.loads(text))


def read_signatures(cur: Any) -> list[Signature]:
    """The signatures with live passages, as ``cur`` sees them."""
    return [
        Signature(r[0], r[1], _string_set(r[2]), r[3], r[4], _string_set(r[5]), int(r[6]), int(r[7]))
        for r in cur.execute("SELECT id, tenant, groups, visibility, language, tags, passages, "
                             "total_length FROM signatures WHERE passages > 0")
    ]


class SQLView:
    """ReadView over one read transaction of an ``SQLStore``: its segment cache, its vector
    storage and its dialect, and the transaction's cursor."""

    def __init__(self, cache: SegmentCache, vectors: VectorStorage, dialect: Dialect, cur: Any) -> None:
        self._cache, self._vectors, self._dialect = cache, vectors, dialect
        self._c = cur
        self.sig, self.length, self.dkey, self.number = cache.columns()
        self.generation = cache.generation
        self.deaths_mark = cache.deaths_mark()

    # -- SegmentSource --------------------------------------------------------------------------
    def segment_ids(self) -> list[int]:
        return [r[0] for r in self._c.execute("SELECT id FROM segments")]

    def segment_arrays(self, ids: Sequence[int]) -> Iterator[SegmentArrays]:
        model, dimension = self.vector_model()
        for sid in ids:
            row = self._c.execute(
                "SELECT pids, sigs, lengths, dkeys, numbers, terms, term_ends, term_pids, term_tfs "
                "FROM segments WHERE id = ?", (sid,)).fetchone()
            packed = FlatPostings.from_stored(*row[5:]) if row[5] is not None else None
            vectors = self._vectors.segment(self._c, [sid], model, dimension) if model != "none" else None
            yield SegmentArrays(sid, *(decode(b, PID) for b in row[:5]), packed=packed, vectors=vectors)

    def tombstones_after(self, gen: int) -> tuple[np.ndarray, int]:
        rows = self._c.execute("SELECT gen, pid FROM tombstones WHERE gen > ?", (gen,)).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), gen
        return np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)), max(r[0] for r in rows)

    def all_signatures(self) -> list[Signature]:
        return read_signatures(self._c)

    def vector_model(self) -> tuple[str, int]:
        return self._vectors.cache_model()

    def fetch_postings(self, term: str) -> list[tuple[np.ndarray, np.ndarray]]:
        return [(decode(p, PID), decode(t, TF)) for p, t in self._c.execute(
            "SELECT pids, tfs FROM postings WHERE term = ? ORDER BY segment", (term,))]

    def tenant_moves(self) -> dict[str, Mark]:
        return marks(self._c, None)

    # -- ReadView -------------------------------------------------------------------------------
    def signatures(self, tenant: str) -> Sequence[Signature]:
        return self._cache.by_tenant.get(tenant, ())

    def moved(self, tenant: str) -> Mark | None:
        return self._cache.moves.get(tenant)

    def tenant_generation(self, tenant: str) -> int | None:
        return tenant_generation(self._c, tenant)

    def postings(self, term: str) -> Sequence[tuple[np.ndarray, np.ndarray]]:
        return self._cache.postings(self, term)

    def frequency(self, term: str) -> int:
        return self._cache.frequency(self, term)

    def deaths_since(self, mark: tuple[object, int]) -> np.ndarray | None:
        return self._cache.deaths_since(mark)

    def doc_ids(self, dkeys: Iterable[int]) -> dict[int, str]:
        known = self._cache.doc_ids
        missing = [int(k) for k in set(dkeys) if k not in known]
        known.update(self._rows("SELECT dkey, doc_id FROM documents WHERE", "dkey", missing))
        return known

    def documents(self, dkeys: Iterable[int]) -> dict[int, StoredDocument]:
        return self._cache.documents(dkeys, self._document_rows)

    def passages(self, pids: Iterable[int]) -> dict[int, StoredPassage]:
        return self._cache.passages(pids, self._passage_rows)

    def cited(self, pids: Sequence[int]) -> list[tuple[Any, ...]]:
        return self._cache.cited(pids, self._passage_rows, self._document_rows)

    def _passage_rows(self, pids: list[int]) -> Iterator[tuple[Any, ...]]:
        return self._rows(f"{PASSAGE_SELECT} WHERE", "pid", pids)

    def _document_rows(self, dkeys: list[int]) -> Iterator[tuple[Any, ...]]:
        return self._rows(f"{DOC_SELECT} WHERE", "dkey", dkeys)

    def _rows(self, select: str, column: str, keys: list[int]) -> Iterator[tuple[Any, ...]]:
        """The rows of ``select`` (ending in WHERE) with ``column`` in ``keys``."""
        for cond, params in self._dialect.where_in(column, keys):
            yield from self._c.execute(f"{select} {cond}", params)

    def document(self, tenant: str, doc_id: str) -> StoredDocument | None:
        r = self._c.execute(f"{DOC_SELECT} WHERE tenant = ? AND doc_id = ?", (tenant, doc_id)).fetchone()
        return StoredDocument.from_row(r) if r else None

    def tenant_documents(self, tenant: str) -> list[StoredDocument]:
        return [StoredDocument.from_row(r) for r in self._c.execute(
            f"{DOC_SELECT} WHERE tenant = ? ORDER BY doc_id", (tenant,)).fetchall()]

    def document_text(self, dkey: int) -> str:
        r = self._c.execute("SELECT text FROM document_texts WHERE dkey = ?", (dkey,)).fetchone()
        return r[0] if r else ""

    def passage(self, dkey: int, number: int) -> StoredPassage | None:
        r = self._c.execute(f"{PASSAGE_SELECT} WHERE dkey = ? AND number = ?", (dkey, number)).fetchone()
        return StoredPassage.from_row(r) if r else None

    def document_passages(self, dkey: int) -> list[StoredPassage]:
        rows = self._c.execute(f"{PASSAGE_SELECT} WHERE dkey = ? ORDER BY number", (dkey,)).fetchall()
        return [StoredPassage.from_row(r) for r in rows]

    def passages_of(self, dkeys: Sequence[int]) -> dict[int, list[StoredPassage]]:
        out: dict[int, list[StoredPassage]] = {int(k): [] for k in dkeys}
        for r in sorted(self._rows(f"{PASSAGE_SELECT} WHERE", "dkey", list(out)), key=lambda r: (r[1], r[2])):
            out[int(r[1])].append(StoredPassage.from_row(r))
        return out

    def texts_of(self, dkeys: Sequence[int]) -> dict[int, str]:
        return {int(r[0]): r[1] for r in self._rows("SELECT dkey, text FROM document_texts WHERE", "dkey",
                                                      [int(k) for k in dkeys])}

    def histories_of(self, tenant: str, doc_ids: Sequence[str]) -> dict[str, list[HistoryEntry]]:
        out: dict[str, list[HistoryEntry]] = {d: [] for d in doc_ids}
        rows = self._dialect.by_document(
            self._c, "SELECT id, doc_id, version, content_sha256, text, split, superseded_at, meta "
            "FROM history",
            [(tenant, d) for d in doc_ids])
        for r in sorted(rows, key=lambda r: -int(r[0])):
            out[r[1]].append(HistoryEntry(*r[2:]))
        return out

    def passage_vectors(self, pids: Iterable[int]) -> dict[int, np.ndarray]:
        """Stored vectors of live passages (empty for a keyword-only store)."""
        return self._vectors.get(self._c, pids)

    def passage_matrix(self, pids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._vectors.matrix(self._c, np.asarray(pids, dtype=np.int64))

    def vector_search(self, sigs: Iterable[int], query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self._vectors.search(self._c, sigs, query, k)

    def vector_sums(self, sigs: Iterable[int]) -> dict[int, tuple[np.ndarray, int]]:
        return self._vectors.sums(self._c, sigs)

    def history(self, tenant: str, doc_id: str) -> list[HistoryEntry]:
        return [HistoryEntry(*r) for r in self._c.execute(
            "SELECT version, content_sha256, text, split, superseded_at, meta FROM history "
            "WHERE tenant = ? AND doc_id = ? ORDER BY id DESC", (tenant, doc_id))]
