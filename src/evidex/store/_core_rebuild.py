"""Rebuilding what every passage has: its vector with another model (``switch_vectors``) or
its terms with another analyzer (``reindex``), each switched atomically."""


from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model import StoreError
from . import _reindex
from ._contract import MissingVectors
from ._dialect import Retry, Tx
from ._merge_policy import merge_budget
from ._schema import columns
from ._segments import (
    segment_from_rows,
)
from ._session import ReadSession

if TYPE_CHECKING:
    pass


class Rebuilds:
    """``SQLStore``'s re-embed and reindex (a part of it, on its transactions)."""

    def live_passages(self) -> list[tuple[int, str]]:
        """(passage id, text) of every live passage: what a re-embed must cover."""
        with self._connection() as c:
            return [(int(r[0]), r[1]) for r in c.execute("SELECT pid, text FROM passages ORDER BY pid")]

    def switch_vectors(self, model: str, dimension: int, vectors: dict[int, np.ndarray],
                       session: ReadSession | None = None) -> bool:
        """Atomically replace every stored vector by ``model``'s. ``vectors`` must cover every
        live passage; returns False (changing nothing) if passages were added meanwhile, so the
        caller embeds those and tries again. Readers keep the old vectors until this commits."""
        def run() -> bool:
            try:
                with self._write(exclusive=True, session=session) as tx:
                    live = [int(r[0]) for r in tx.cur.execute("SELECT pid FROM passages").fetchall()]
                    if not all(p in vectors for p in live):
                        raise Retry
                    self._vectors.switch(tx.cur, model, dimension, vectors)
                    tx.cur.executemany("UPDATE meta SET value = ? WHERE key = ?",
                                       [(model, "embedder"), (str(dimension), "dimension")])
                    tx.changed = True
            except Retry:
                return False
            return True

        done: bool = self._retrying(run)
        if done:
            self.embedder, self.dimension = model, dimension
        return done

    def reindex(self, analyzer: str, session: ReadSession | None = None) -> int:
        """Analyse every live passage with ``analyzer`` and switch to the new postings (see
        ``_reindex``); the number of passages analysed. Passages written meanwhile are read and
        analysed again (a few times, then it gives up)."""
        for _ in range(5):
            with self._connection() as c:
                terms = _reindex.new_terms(c.execute(_reindex.LIVE_PASSAGES).fetchall(), analyzer)
            vectors: dict[int, np.ndarray] = {}
            if self.embedder != "none":
                with self.read() as view:
                    vectors = view.passage_vectors(terms)
            if self._switch_analyzer(analyzer, terms, vectors, session):
                return len(terms)
        raise StoreError("the store kept changing during reindex; try again when writes pause")

    def _switch_analyzer(self, analyzer: str, terms: Mapping[int, Mapping[str, int]],
                         vectors: Mapping[int, np.ndarray], session: ReadSession | None) -> bool:
        """Replace every live passage's postings by ``terms`` and record ``analyzer``,
        atomically; False, changing nothing, when passages were written or the model changed
        meanwhile, so the caller reads them again and retries."""
        def run() -> bool:
            try:
                with self._write(exclusive=True, session=session) as tx:
                    self._check_model(tx.cur)
                    rows = tx.cur.execute(_reindex.REWRITE_ROWS).fetchall()
                    if not _reindex.covered(rows, terms, vectors if self.embedder != "none" else None):
                        raise Retry
                    self._rewrite(tx, rows, terms, vectors)
                    tx.cur.execute("UPDATE meta SET value = ? WHERE key = 'analyzer'", (analyzer,))
                    tx.changed = True
            except (Retry, MissingVectors):
                return False
            return True

        done: bool = self._retrying(run)
        if done:
            self.analyzer = analyzer
            if terms:
                self._merges.request(merge_budget(len(terms), self._merge_policy))
        return done

    def _rewrite(self, tx: Tx, rows: list[Any], terms: Mapping[int, Mapping[str, int]],
                 vectors: Mapping[int, np.ndarray]) -> None:
        """Every passage of ``rows`` dies and is written again under a new id with its new
        terms, in one new segment."""
        for dkey, sig in _reindex.documents_of(rows):
            self._drop_passages(tx, dkey, sig)
        if not rows:
            return
        prows, seg_rows, vecs = _reindex.rewritten(rows, terms, vectors,
                                                   self.dialect.next_pids(tx.cur, len(rows)))
        for _, sig, length, *_ in seg_rows:
            tx.add(sig, 1, length)
        self.dialect.insert_many(tx.cur, "passages", columns("passages"), prows)
        cols, postings = segment_from_rows(seg_rows)
        self._insert_segment(tx.cur, cols, postings, self._stack(vecs), self.embedder)
