"""Rebuild the keyword index with another analyzer, switching to it in one transaction.

A live passage never changes (readers cache rows and arrays by passage id), so a reindex does
what a supersede does for every passage at once: each live passage dies (tombstoned, counters
down) and comes back under a new id with the new analyzer's terms and length, its text, place
and vector unchanged, in one exclusive write transaction that also records the analyzer. Readers
keep the old index until it commits; a writer that analysed with the old analyzer is refused
(``SQLStore._check_model``). Documents, versions and history are untouched.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model import StoreError
from ..query import analyzer_for
from . import _merging
from ._contract import MissingVectors
from ._dialect import Retry
from ._schema import columns
from ._segments import segment_from_rows

if TYPE_CHECKING:
    from ._core import SQLStore

__all__ = ["passages_to_reindex", "reindex", "switch_analyzer"]


def reindex(store: SQLStore, analyzer: str) -> int:
    """Analyse every live passage with ``analyzer`` (each in its document's language under
    ``auto``) and switch to the new postings; the number of passages analysed. Passages written
    meanwhile are read and analysed again (a few times, then it gives up)."""
    for _ in range(5):
        rows = passages_to_reindex(store)
        terms = {pid: dict(Counter(analyzer_for(analyzer, language).terms(text)))
                 for pid, language, text in rows}
        vectors: dict[int, np.ndarray] = {}
        if store.embedder != "none":
            with store.read() as view:
                vectors = view.passage_vectors(terms)
        if switch_analyzer(store, analyzer, terms, vectors):
            return len(terms)
    raise StoreError("the store kept changing during reindex; try again when writes pause")


def passages_to_reindex(store: SQLStore) -> list[tuple[int, str | None, str]]:
    """(passage id, its document's language, text) of every live passage, by id."""
    with store._connection() as c:
        return [(int(r[0]), r[1], r[2]) for r in c.execute(
            "SELECT p.pid, s.language, p.text FROM passages p JOIN documents d ON d.dkey = p.dkey "
            "JOIN signatures s ON s.id = d.sig ORDER BY p.pid")]


def switch_analyzer(store: SQLStore, analyzer: str, terms: Mapping[int, Mapping[str, int]],
                    vectors: Mapping[int, np.ndarray]) -> bool:
    """Replace every live passage's postings by ``terms`` (per passage id, term -> frequency)
    and record ``analyzer``, atomically. ``terms`` (and ``vectors``, unless the store keeps
    none) must cover every live passage; returns False, changing nothing, when passages were
    written or the model changed meanwhile, so the caller reads them again and retries."""
    names = columns("passages")

    def run() -> bool:
        try:
            with store._write(exclusive=True) as tx:
                c = tx.cur
                store._check_model(c)
                rows = c.execute(f"SELECT {', '.join('p.' + n for n in names)}, d.sig FROM passages p "
                                 "JOIN documents d ON d.dkey = p.dkey ORDER BY p.pid").fetchall()
                if len(rows) != len(terms) or not all(int(r[0]) in terms for r in rows):
                    raise Retry
                if store.embedder != "none" and not all(int(r[0]) in vectors for r in rows):
                    raise Retry
                _rewrite(store, tx, rows, terms, vectors)
                c.execute("UPDATE meta SET value = ? WHERE key = 'analyzer'", (analyzer,))
                tx.changed = True
        except (Retry, MissingVectors):
            return False
        return True

    done: bool = store._retrying(run)
    if done:
        store.analyzer = analyzer
        if terms:
            store._merges.request(_merging.merge_budget(len(terms), store._merge_policy))
    return done


def _rewrite(store: SQLStore, tx: Any, rows: list[Any], terms: Mapping[int, Mapping[str, int]],
             vectors: Mapping[int, np.ndarray]) -> None:
    """Every passage of ``rows`` (passage columns, then the document's signature) dies and is
    written again under a new id with its new terms, in one new segment."""
    c = tx.cur
    for dkey, sig in sorted({(int(r[1]), int(r[-1])) for r in rows}):
        store._drop_passages(tx, dkey, sig)
    if not rows:
        return
    new_pids = store.dialect.next_pids(c, len(rows))
    length_at = columns("passages").index("length")
    prows, seg_rows, vecs = [], [], []
    for r, pid in zip(rows, new_pids, strict=True):
        t = dict(terms[int(r[0])])
        length = sum(t.values())
        row = list(r[:-1])
        row[0], row[length_at] = pid, length
        prows.append(row)
        seg_rows.append((pid, int(r[-1]), length, int(r[1]), int(r[2]), t))
        vecs.append(vectors.get(int(r[0])))
        tx.add(int(r[-1]), 1, length)
    store.dialect.insert_many(c, "passages", columns("passages"), prows)
    cols, postings = segment_from_rows(seg_rows)
    store._insert_segment(c, cols, postings, store._stack(vecs), store.embedder)
