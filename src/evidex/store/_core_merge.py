"""Merging segments: which ones the policy calls for, the merged segment computed from a
snapshot (``PendingMerge``), and committed only if its inputs still exist."""


from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ._dialect import Tx
from ._merge_policy import merge_postings, next_merge
from ._segments import (
    PACK_LIMIT,
    PID,
    TF,
    FlatPostings,
    PackedPostings,
    decode,
)

if TYPE_CHECKING:
    pass


@dataclass(frozen=True, slots=True)
class PendingMerge:
    """A merged segment computed from a snapshot, to be committed if its inputs still exist."""

    ids: list[int]
    large: list[int]  # the inputs whose postings are rows of their own
    cols: list[np.ndarray]
    postings: FlatPostings
    vectors: np.ndarray | None
    model: str
    dead: np.ndarray  # tombstoned passages the merged segment leaves out
    generation: int  # of the snapshot the merge was computed from

    @property
    def packed(self) -> bool:
        """Whether the merged segment keeps its postings in its own row (one small write)."""
        return len(self.cols[0]) <= PACK_LIMIT



class Merging:
    """``SQLStore``'s segment merges (a part of it, on its connections and transactions)."""

    def _merge_due(self, conn: Any, budget: int) -> None:
        """Run every merge the policy calls for under ``budget`` (reading on ``conn``, or on the
        store's connection when None)."""
        while True:
            with nullcontext(conn) if conn is not None else self._connection() as c:
                sizes = {int(i): int(n) for i, n in c.execute("SELECT id, n FROM segments ORDER BY id")}
            ids = next_merge(sizes, budget, self._merge_policy)
            if ids is None:
                return
            self._merge(conn, ids)

    def _fold(self, tx: Tx, ids: list[int]) -> None:
        """Merge segments ``ids`` within one write transaction."""
        plan = self._plan_merge(tx.cur, ids)
        if plan is not None:
            self._commit_merge(tx, plan)

    def settle(self) -> None:
        """Return once the merges earlier writes asked for are done, raising a failure."""
        self._merges.settle()

    def optimize(self) -> None:
        """Merge every segment into one and drop all tombstoned postings."""
        self.settle()

        def run() -> None:
            with self._write(exclusive=True) as tx:
                ids = [int(r[0]) for r in tx.cur.execute("SELECT id FROM segments ORDER BY id").fetchall()]
                tomb = tx.cur.execute("SELECT count(*) FROM tombstones").fetchone()[0]
                if len(ids) > 1 or (ids and tomb):
                    self._fold(tx, ids)

        self._retrying(run)

    def _tombstoned(self, c: Any, where: str, args: tuple[int, ...]) -> np.ndarray:
        """The passage ids of the tombstones ``where`` selects, as one string parsed by numpy:
        a merge at a million passages reads tens of thousands, and a tuple per row costs the
        merge time it otherwise shares with searches and writes."""
        text = c.execute(f"SELECT {self.dialect.pid_list} FROM tombstones WHERE {where}", args).fetchone()[0]
        return np.array([], dtype=np.int64) if text is None else np.fromstring(text, dtype=np.int64, sep=",")

    def _rows_in(self, c: Any, columns: str, table: str, column: str, ids: Sequence[int]) -> list[Any]:
        rows: list[Any] = []
        for cond, params in self.dialect.where_in(column, ids):
            rows += c.execute(f"SELECT {columns} FROM {table} WHERE {cond}", params).fetchall()
        return rows

    def _plan_merge(self, c: Any, ids: list[int]) -> PendingMerge | None:
        """Read segments ``ids`` and build their merged segment without the passages dead now
        (inside a transaction of ``c``; None if a segment is gone, i.e. merged meanwhile)."""
        rows = sorted(self._rows_in(c, "id, pids, sigs, lengths, dkeys, numbers, terms, term_ends, "
                                            "term_pids, term_tfs", "segments", "id", ids))
        if len(rows) != len(ids):
            return None
        meta = dict(c.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'dimension', "
                              "'generation')").fetchall())
        model, dimension = meta.get("embedder", "none"), int(meta.get("dimension", "0"))
        cols = [np.concatenate([decode(r[i], PID) for r in rows]) for i in range(1, 6)]
        vecs = self._vectors.segment(c, [r[0] for r in rows], model, dimension) if model != "none" else None
        # Only the tombstones in these segments' id range: those of passages in large segments
        # that are rarely merged pile up, and every small merge would read them all.
        lo, hi = (int(cols[0].min()), int(cols[0].max())) if len(cols[0]) else (0, -1)
        tomb = self._tombstoned(c, "pid BETWEEN ? AND ?", (lo, hi))
        self._pause()
        dead_mask = np.isin(cols[0], tomb)
        dead = cols[0][dead_mask]
        keep = ~dead_mask
        order = np.argsort(cols[0][keep], kind="stable")
        cols = [col[keep][order] for col in cols]
        if vecs is not None:
            vecs = vecs[keep][order]
        parts = [FlatPostings.from_stored(*r[6:]) for r in rows if r[6] is not None]
        self._pause()
        large = [r[0] for r in rows if r[6] is None]
        if large:
            by_segment: dict[int, PackedPostings] = {}
            for seg, term, p, f in self._rows_in(c, "segment, term, pids, tfs", "postings", "segment",
                                                      large):
                by_segment.setdefault(seg, {})[term] = (decode(p, PID), decode(f, TF))
            parts += [FlatPostings.from_dict(v) for v in by_segment.values()]
        postings = merge_postings(parts, dead, self._pause)
        return PendingMerge([r[0] for r in rows], large, cols, postings, vecs, model, dead,
                            int(meta["generation"]))

    def _commit_merge(self, tx: Tx, plan: PendingMerge) -> bool:
        """Replace the plan's segments by the merged one (inside a write transaction).

        False, changing nothing, when a segment is gone or the store switched vector models
        since the plan was read. Passages that died after the plan was read are left out here,
        with their tombstones (see the module docstring)."""
        c, ids = tx.cur, plan.ids
        still = len(self._rows_in(c, "id", "segments", "id", ids))
        model = c.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        if still != len(ids) or (model[0] if model else "none") != plan.model:
            return False
        cols, postings, vectors, dead = plan.cols, plan.postings, plan.vectors, plan.dead
        late_mask = np.isin(cols[0], self._tombstoned(c, "gen > ?", (plan.generation,)))
        if late_mask.any():
            late = cols[0][late_mask]
            cols = [col[~late_mask] for col in cols]
            vectors = vectors[~late_mask] if vectors is not None else None
            postings = merge_postings([postings], late)
            dead = np.concatenate([dead, late])
        self._insert_segment(c, cols, postings, vectors, plan.model)
        self._vectors.drop_segments(c, ids)
        for table, column, keys in (("postings", "segment", plan.large), ("segments", "id", ids),
                                    ("tombstones", "pid", [int(p) for p in dead])):
            for cond, params in self.dialect.where_in(column, keys):
                c.execute(f"DELETE FROM {table} WHERE {cond}", params)
        tx.changed = True
        return True
