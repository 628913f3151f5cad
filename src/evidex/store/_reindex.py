"""Rebuilding the keyword index with another analyzer: what the new index holds, as pure
functions over passage rows (``SQLStore.reindex`` reads the rows and writes the result).

A live passage never changes (readers cache rows and arrays by passage id), so a reindex does
what a supersede does for every passage at once: each live passage dies (tombstoned, counters
down) and comes back under a new id with the new analyzer's terms and length, its text, place
and vector unchanged, in one exclusive write transaction that also records the analyzer. Readers
keep the old index until it commits; a writer that analysed with the old analyzer is refused
(``SQLStore._check_model``). Documents, versions and history are untouched.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..query import analyzer_for
from ._schema import columns

__all__ = ["LIVE_PASSAGES", "REWRITE_ROWS", "covered", "documents_of", "new_terms", "rewritten"]

#: (passage id, its document's language, text) of every live passage, by id.
LIVE_PASSAGES = ("SELECT p.pid, s.language, p.text FROM passages p JOIN documents d ON d.dkey = p.dkey "
                 "JOIN signatures s ON s.id = d.sig ORDER BY p.pid")
#: Every live passage's columns, then its document's signature, by id: the rows a reindex
#: rewrites (read inside its transaction).
REWRITE_ROWS = (f"SELECT {', '.join('p.' + n for n in columns('passages'))}, d.sig FROM passages p "
                "JOIN documents d ON d.dkey = p.dkey ORDER BY p.pid")

Terms = Mapping[int, Mapping[str, int]]
#: A passage as ``segment_from_rows`` takes it: (id, signature, length, document key, number, terms).
SegmentRow = tuple[int, int, int, int, int, dict[str, int]]


def new_terms(live: Sequence[tuple[Any, ...]], analyzer: str) -> dict[int, dict[str, int]]:
    """Term frequencies of each passage of ``LIVE_PASSAGES`` rows under ``analyzer`` (each in
    its document's language under ``auto``), by passage id."""
    return {int(pid): dict(Counter(analyzer_for(analyzer, language).terms(text)))
            for pid, language, text in live}


def covered(rows: Sequence[tuple[Any, ...]], terms: Terms, vectors: Mapping[int, np.ndarray] | None) -> bool:
    """Whether ``terms`` (and ``vectors``, unless the store keeps none: None) cover exactly the
    live passages of ``REWRITE_ROWS`` rows; if not, passages were written meanwhile."""
    if len(rows) != len(terms) or not all(int(r[0]) in terms for r in rows):
        return False
    return vectors is None or all(int(r[0]) in vectors for r in rows)


def documents_of(rows: Sequence[tuple[Any, ...]]) -> list[tuple[int, int]]:
    """(document key, signature) of the documents whose passages ``rows`` holds, sorted."""
    return sorted({(int(r[1]), int(r[-1])) for r in rows})


def rewritten(rows: Sequence[tuple[Any, ...]], terms: Terms, vectors: Mapping[int, np.ndarray],
              new_pids: Sequence[int]) -> tuple[list[list[Any]], list[SegmentRow], list[np.ndarray | None]]:
    """Each passage of ``rows`` under its new id with its new terms: (passage rows, segment
    rows as ``segment_from_rows`` takes them, vectors), in the order of ``rows``."""
    length_at = columns("passages").index("length")
    prows: list[list[Any]] = []
    seg_rows: list[SegmentRow] = []
    vecs: list[np.ndarray | None] = []
    for r, pid in zip(rows, new_pids, strict=True):
        t = dict(terms[int(r[0])])
        length = sum(t.values())
        row = list(r[:-1])
        row[0], row[length_at] = pid, length
        prows.append(row)
        seg_rows.append((pid, int(r[-1]), length, int(r[1]), int(r[2]), t))
        vecs.append(vectors.get(int(r[0])))
    return prows, seg_rows, vecs
