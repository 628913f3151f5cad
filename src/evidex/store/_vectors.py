"""In-memory vector blocks, one per access signature, for filtered vector search.

Rows of one signature are contiguous, so a query multiplies only the blocks of the signatures
the actor may read: no gathering of rows and no post-filtering that could under-fill a result
list. Dead rows (superseded, removed, or moved by a merge) are flagged rather than moved, and a
block is compacted once half of it is dead.

Blocks below QUANT_MIN_ROWS are searched exactly (float64 sums, one fixed order per row: BLAS
would give a row a different last bit depending on its position, so ties would break differently
when other data shared the block). Larger blocks, where exact search is memory-bandwidth bound,
get a first pass over int8 copies of the rows (a fixed scale of
127/0.35 for unit vectors: a constant, nothing fitted on stored data, so other tenants' vectors
cannot influence an actor's quantisation) with numkong's SIMD dot products, and the best
max(10 k, 500) rows of that pass are re-scored exactly in float32. Recall@10 against exact search
is measured in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import numkong
import numpy as np

__all__ = ["QUANT_MIN_ROWS", "VectorBlocks", "exact_cosines"]

QUANT_SCALE = 127.0 / 0.35
QUANT_MIN_ROWS = 2_048
RESCORE_MIN = 500


def exact_cosines(rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Cosines computed row by row in float64 with one fixed summation order, so a passage's
    score does not depend on which other rows share its block (bit-for-bit reproducible)."""
    return np.einsum("ij,j->i", rows.astype(np.float64), q.astype(np.float64))


def _quantize(vecs: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(vecs * QUANT_SCALE), -127, 127).astype(np.int8)


class _Block:
    __slots__ = ("alive", "dead", "n", "pids", "q8", "sum", "vecs")

    def __init__(self, dim: int, cap: int = 256) -> None:
        self.pids = np.empty(cap, dtype=np.int32)
        self.alive = np.zeros(cap, dtype=bool)
        self.vecs = np.empty((cap, dim), dtype=np.float32)
        self.q8 = np.empty((cap, dim), dtype=np.int8)
        self.n = 0
        self.dead = 0
        #: (n, dead, the sum of the live rows) once asked, for the state it was computed in.
        self.sum: tuple[int, int, np.ndarray] | None = None

    def append(self, pids: np.ndarray, vecs: np.ndarray) -> int:
        need = self.n + len(pids)
        if need > len(self.pids):
            cap = max(need, 2 * len(self.pids))
            for name in ("pids", "alive"):
                old = getattr(self, name)
                new = np.zeros(cap, dtype=old.dtype)
                new[: self.n] = old[: self.n]
                setattr(self, name, new)
            for name in ("vecs", "q8"):
                old = getattr(self, name)
                new = np.empty((cap, old.shape[1]), dtype=old.dtype)
                new[: self.n] = old[: self.n]
                setattr(self, name, new)
        start = self.n
        self.pids[start:need] = pids
        self.alive[start:need] = True
        self.vecs[start:need] = vecs
        self.q8[start:need] = _quantize(vecs)
        self.n = need
        return start


class VectorBlocks:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.blocks: dict[int, _Block] = {}
        self._blk = np.full(0, -1, dtype=np.int32)  # signature block holding a pid's live row
        self._row = np.full(0, -1, dtype=np.int32)

    def _grow(self, max_pid: int) -> None:
        if max_pid < len(self._blk):
            return
        cap = max(max_pid + 1, 2 * len(self._blk), 1024)
        for name in ("_blk", "_row"):
            old = getattr(self, name)
            new = np.full(cap, -1, dtype=np.int32)
            new[: len(old)] = old
            setattr(self, name, new)

    def add(self, pids: np.ndarray, sigs: np.ndarray, vecs: np.ndarray) -> None:
        if not len(pids):
            return
        self._grow(int(pids.max()))
        order = np.argsort(sigs, kind="stable")
        pids, sigs, vecs = pids[order], sigs[order], vecs[order]
        cuts = np.flatnonzero(np.diff(sigs)) + 1
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(sigs)], strict=True):
            sig = int(sigs[lo])
            block = self.blocks.get(sig)
            if block is None:
                block = self.blocks[sig] = _Block(self.dim, max(256, hi - lo))
            start = block.append(pids[lo:hi], vecs[lo:hi])
            self._blk[pids[lo:hi]] = sig
            self._row[pids[lo:hi]] = np.arange(start, start + hi - lo, dtype=np.int32)

    def kill(self, pids: Iterable[int] | np.ndarray) -> None:
        pids = np.asarray(pids, dtype=np.int64)
        pids = pids[pids < len(self._blk)]
        blk = self._blk[pids]
        live = blk >= 0
        pids, blk = pids[live], blk[live]
        for sig in np.unique(blk).tolist():
            block = self.blocks[sig]
            rows = self._row[pids[blk == sig]]
            block.alive[rows] = False
            block.dead += len(rows)
        self._blk[pids] = -1
        self._row[pids] = -1
        for sig in np.unique(blk).tolist():
            block = self.blocks[sig]
            if block.dead * 2 > block.n:
                self._compact(sig, block)

    def _compact(self, sig: int, block: _Block) -> None:
        keep = np.flatnonzero(block.alive[: block.n])
        fresh = _Block(self.dim, max(256, len(keep)))
        if len(keep):
            fresh.append(block.pids[keep], block.vecs[keep])
            self._row[fresh.pids[: fresh.n]] = np.arange(fresh.n, dtype=np.int32)
        self.blocks[sig] = fresh

    def sums(self, sigs: Iterable[int]) -> dict[int, tuple[np.ndarray, int]]:
        """Per signature with live rows: (the sum of their vectors, float64; how many). Kept per
        block until a row is added or killed (rows are appended and killed, never changed)."""
        out = {}
        for sig in sigs:
            block = self.blocks.get(sig)
            if block is None or block.n == block.dead:
                continue
            if block.sum is None or block.sum[:2] != (block.n, block.dead):
                rows = block.vecs[: block.n][block.alive[: block.n]]
                block.sum = (block.n, block.dead, rows.sum(axis=0, dtype=np.float64))
            out[int(sig)] = (block.sum[2], block.n - block.dead)
        return out

    def search(self, sigs: Iterable[int], q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Passage ids and cosine scores of the best rows of the given signatures: at least the
        top ``k`` plus every row tied with the k-th (so ties can be broken by the caller)."""
        pids_out, scores_out = [], []
        q8 = None
        for sig in sigs:
            block = self.blocks.get(sig)
            if block is None or block.n == block.dead:
                continue
            n = block.n
            if n >= QUANT_MIN_ROWS:
                if q8 is None:
                    q8 = np.clip(np.rint(q * (127.0 / max(float(np.abs(q).max()), 1e-12))),
                                 -127, 127).astype(np.int8)[None, :]
                p, sc = self._approximate(block, q, q8, k)
                pids_out.append(p)
                scores_out.append(sc)
                continue
            p, sc = self._final(block, np.flatnonzero(block.alive[:n]), q, k)
            pids_out.append(p)
            scores_out.append(sc)
        if not pids_out:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        return np.concatenate(pids_out).astype(np.int64), np.concatenate(scores_out)

    @staticmethod
    def _approximate(block: _Block, q: np.ndarray, q8: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        n = block.n
        coarse = np.empty((1, n), dtype=np.float64)
        numkong.cdist(q8, block.q8[:n], metric="dot", out=coarse)
        s = coarse[0]
        if block.dead:
            s[~block.alive[:n]] = -np.inf
        c = min(n, max(10 * k, RESCORE_MIN))
        if c < n:
            # Every row tied with the c-th coarse score is kept: an arbitrary cut among equal
            # rows would make the final order depend on row positions.
            kth = np.partition(s, n - c)[n - c]
            idx = np.flatnonzero(s >= kth)
        else:
            idx = np.arange(n)
        idx = idx[block.alive[idx]]
        return VectorBlocks._final(block, idx, q, k)

    @staticmethod
    def _final(block: _Block, idx: np.ndarray, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact, position-independent scores of the candidate rows; the best k plus ties."""
        exact = exact_cosines(block.vecs[idx], q)
        if len(idx) > k:
            kth = np.partition(exact, len(idx) - k)[len(idx) - k]
            keep = exact >= kth
            idx, exact = idx[keep], exact[keep]
        return block.pids[idx], exact

    def get(self, pids: Iterable[int]) -> dict[int, np.ndarray]:
        """Copies of the live rows of these passages."""
        out: dict[int, np.ndarray] = {}
        for pid in pids:
            p = int(pid)
            if p < len(self._blk) and self._blk[p] >= 0:
                out[p] = self.blocks[int(self._blk[p])].vecs[self._row[p]].copy()
        return out

    def matrix(self, pids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the ids among ``pids`` with a live row, in the given order; their rows stacked):
        ``get`` as one array, gathered per block rather than per passage."""
        pids = np.asarray(pids, dtype=np.int64)
        pids = pids[pids < len(self._blk)]
        blk = self._blk[pids]
        pids, blk = pids[blk >= 0], blk[blk >= 0]
        rows = self._row[pids]
        out = np.empty((len(pids), self.dim), dtype=np.float32)
        # The rows grouped by block with one sort (a pass per block would scan every row).
        order = np.argsort(blk, kind="stable")
        ordered = blk[order]
        cuts = [0, *(np.flatnonzero(np.diff(ordered)) + 1).tolist(), len(order)]
        for lo, hi in itertools.pairwise(cuts) if len(order) else ():
            at = order[lo:hi]
            out[at] = self.blocks[int(ordered[lo])].vecs[rows[at]]
        return pids, out

    def rows(self) -> int:
        return sum(b.n - b.dead for b in self.blocks.values())
