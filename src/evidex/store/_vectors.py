"""In-memory vector blocks, one per access signature, for exact filtered vector search.

Rows of one signature are contiguous, so a query multiplies only the blocks of the signatures
the actor may read: no gathering of rows and no post-filtering that could under-fill a result
list. Dead rows (superseded, removed, or moved by a merge) are flagged rather than moved, and a
block is compacted once half of it is dead.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["VectorBlocks"]


class _Block:
    __slots__ = ("alive", "dead", "n", "pids", "vecs")

    def __init__(self, dim: int, cap: int = 256) -> None:
        self.pids = np.empty(cap, dtype=np.int32)
        self.alive = np.zeros(cap, dtype=bool)
        self.vecs = np.empty((cap, dim), dtype=np.float32)
        self.n = 0
        self.dead = 0

    def append(self, pids: np.ndarray, vecs: np.ndarray) -> int:
        need = self.n + len(pids)
        if need > len(self.pids):
            cap = max(need, 2 * len(self.pids))
            for name in ("pids", "alive"):
                old = getattr(self, name)
                new = np.zeros(cap, dtype=old.dtype)
                new[: self.n] = old[: self.n]
                setattr(self, name, new)
            vecs_new = np.empty((cap, self.vecs.shape[1]), dtype=np.float32)
            vecs_new[: self.n] = self.vecs[: self.n]
            self.vecs = vecs_new
        start = self.n
        self.pids[start:need] = pids
        self.alive[start:need] = True
        self.vecs[start:need] = vecs
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

    def search(self, sigs: Iterable[int], q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Passage ids and cosine scores of the best rows of the given signatures: at least the
        top ``k`` plus every row tied with the k-th (so ties can be broken by the caller)."""
        pids_out, scores_out = [], []
        for sig in sigs:
            block = self.blocks.get(sig)
            if block is None or block.n == block.dead:
                continue
            n = block.n
            s = block.vecs[:n] @ q
            if block.dead:
                s[~block.alive[:n]] = -np.inf
            if n > k:
                kth = np.partition(s, n - k)[n - k]
                idx = np.flatnonzero(s >= kth)
            else:
                idx = np.flatnonzero(block.alive[:n])
            idx = idx[block.alive[idx]]
            pids_out.append(block.pids[idx])
            scores_out.append(s[idx])
        if not pids_out:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        return np.concatenate(pids_out).astype(np.int64), np.concatenate(scores_out)

    def rows(self) -> int:
        return sum(b.n - b.dead for b in self.blocks.values())
