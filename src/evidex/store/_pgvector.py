"""PostgreSQL's vector storage: one pgvector row per live passage (pid, signature, embedding).

``exact`` mode (the default) searches the way the SQLite backend does: each process keeps the
``VectorBlocks`` of ``_vectors`` (one block per signature), loaded from pgvector by one binary
``COPY`` on the first vector search and then synced by generation (live passage ids not yet
loaded are read, dead ones killed), so results and scores are SQLite's bit for bit. The price is
memory in every process that runs vector searches (dimension x 5 bytes per live passage) and a
first vector search that loads them all. ``hnsw`` mode (``?vector_search=hnsw``) keeps no vectors
in memory: an HNSW index with pgvector's iterative index scans, candidates re-scored in float64;
approximate, and the neighbours it finds can depend on rows the actor cannot see (the graph is
built over all rows), though never include them. Actors who may read few passages, and index
scans that give up early, get an exact scan in SQL instead.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np
import psycopg
from psycopg import sql
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo

from ..model import StoreError
from ._segments import SegmentCache
from ._vectors import VectorBlocks, exact_cosines

__all__ = ["HNSW_EF_SEARCH", "HNSW_EXACT_BELOW", "RowVectors", "hnsw_ddl", "register_vector"]

#: In hnsw mode, actors who may read at most this many passages get the exact search: it is
#: fast for them, and an iterative index scan would visit many rows they cannot read.
HNSW_EXACT_BELOW = 20_000
#: pgvector's hnsw.ef_search for an index scan (at least the candidate count asked for; pgvector's
#: maximum is 1000). Recall against exact search per value: benchmarks/RESULTS.md.
HNSW_EF_SEARCH = 800


# -- pgvector's binary format: int16 dimension, int16 unused, float32 big-endian values ---------
class _VectorDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        a = np.ascontiguousarray(obj, dtype=">f4").reshape(-1)
        return struct.pack(">HH", a.shape[0], 0) + a.tobytes()


class _VectorLoader(Loader):
    format = Format.BINARY

    def load(self, data: Any) -> np.ndarray:
        return np.frombuffer(bytes(data), dtype=">f4", offset=4).astype(np.float32)


def register_vector(conn: psycopg.Connection) -> None:
    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        raise StoreError("the pgvector extension (type 'vector') is not installed in this database")
    info.register(conn)
    dumper = type("VectorDumper", (_VectorDumper,), {"oid": info.oid})
    conn.adapters.register_dumper(np.ndarray, dumper)
    conn.adapters.register_loader(info.oid, _VectorLoader)


def hnsw_ddl(dimension: int) -> sql.Composed:
    """The HNSW index: an expression index for the current model's dimension (the column has
    none, so that a re-embed can change it)."""
    return sql.SQL("CREATE INDEX IF NOT EXISTS vectors_hnsw ON vectors "
                   "USING hnsw ((embedding::vector({})) vector_ip_ops)").format(sql.Literal(int(dimension)))


_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"


def _parse_vector_copy(buf: bytes | bytearray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(pids, float32 vectors) from ``COPY (SELECT pid, embedding ...) TO STDOUT (FORMAT BINARY)``.

    Every tuple has the same size (field count, int4 pid, and pgvector's binary ``vector``: int16
    dimension, int16 unused, ``dim`` big-endian float32), so the whole stream is one numpy record
    array; each fixed field is checked, so a row of another dimension fails loudly."""
    if bytes(buf[:11]) != _COPY_SIGNATURE:
        raise StoreError("unexpected COPY stream from PostgreSQL (no binary signature)")
    ext = int.from_bytes(buf[15:19], "big")
    start = 19 + ext
    end = len(buf) - 2  # trailer: int16 -1
    if end < start or buf[end:] != b"\xff\xff":
        raise StoreError("unexpected COPY stream from PostgreSQL (no trailer)")
    row = np.dtype([("nf", ">i2"), ("l1", ">i4"), ("pid", ">i4"), ("l2", ">i4"), ("dim", ">i2"),
                    ("unused", ">i2"), ("vec", ">f4", (dim,))])
    if (end - start) % row.itemsize:
        raise StoreError(f"stored vectors do not all have the store's {dim} dimensions")
    rec = np.frombuffer(buf, dtype=row, count=(end - start) // row.itemsize, offset=start)
    if len(rec) and not ((rec["nf"] == 2).all() and (rec["l1"] == 4).all()
                         and (rec["l2"] == 4 + 4 * dim).all() and (rec["dim"] == dim).all()):
        raise StoreError(f"stored vectors do not all have the store's {dim} dimensions")
    return rec["pid"].astype(np.int64), rec["vec"].astype(np.float32)


def _empty() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)


class VectorOwner(Protocol):
    """What the vector storage reads of its store (a ``PostgresStore``) at each call: the model,
    which a re-embed changes, and the search settings."""

    embedder: str
    dimension: int
    vector_search: str
    hnsw_ef_search: int


class RowVectors:
    """The ``VectorStorage`` of ``PostgresStore`` (see the module docstring); ``cache`` gives
    the store's segment cache as it is now (which passages are live, their signatures, its
    generation; a closed store drops it)."""

    def __init__(self, store: VectorOwner, cache: Callable[[], SegmentCache]) -> None:
        self._s = store
        self._cache = cache
        #: Exact mode's in-memory vectors, the (model, dimension) they hold and the segment-cache
        #: generation they were synced to (see ``_sync``).
        self.blocks: VectorBlocks | None = None
        #: hnsw mode: signature -> (its version, sum of its vectors, how many, the model).
        self._sums: dict[int, tuple[int | None, np.ndarray, int, str]] = {}
        self._model: tuple[str, int] | None = None
        self._gen: int | None = None

    def meta_rows(self) -> list[tuple[str, str]]:
        return [("hnsw", "0")]

    def cache_model(self) -> tuple[str, int]:
        # The segment cache gets no vectors: exact mode keeps its own blocks, loaded on the first
        # vector search, so processes that only run keyword searches never hold them.
        return "none", 0

    def segment(self, c: Any, ids: Sequence[int], model: str, dimension: int) -> None:
        return None  # rows outlive merges: a merge moves passages, never their vectors

    def write(self, c: Any, segment: int, pids: np.ndarray, sigs: np.ndarray, vectors: np.ndarray,
              model: str) -> None:
        with c.raw.copy("COPY vectors (pid, sig, embedding) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(["int4", "int4", "vector"])
            for pid, sig, v in zip(pids.tolist(), sigs.tolist(), vectors, strict=True):
                cp.write_row((pid, sig, v))

    def drop(self, c: Any, pids: list[int]) -> None:
        c.execute("DELETE FROM vectors WHERE pid = ANY(?)", (pids,))

    def drop_segments(self, c: Any, ids: Sequence[int]) -> None:
        return None

    def switch(self, c: Any, model: str, dimension: int, vectors: dict[int, np.ndarray]) -> None:
        """Readers keep their snapshot's vectors until this commits; the HNSW index, if any, is
        rebuilt for the new dimension."""
        live = c.execute("SELECT p.pid, d.sig FROM passages p JOIN documents d USING (dkey)").fetchall()
        c.execute("DROP INDEX IF EXISTS vectors_hnsw")
        c.execute("DELETE FROM vectors")
        mat = np.array([vectors[int(p)] for p, _ in live], dtype=np.float32).reshape(len(live), dimension)
        self.write(c, 0, np.array([int(p) for p, _ in live]), np.array([int(s) for _, s in live]), mat, model)
        hnsw = c.execute("SELECT value FROM meta WHERE key = 'hnsw'").fetchone()
        if hnsw and hnsw[0] == "1":
            c.execute("SET LOCAL maintenance_work_mem = '1GB'")
            c.raw.execute(hnsw_ddl(dimension))

    def sums(self, c: Any, sigs: Iterable[int]) -> dict[int, tuple[np.ndarray, int]]:
        s = self._s
        sig_list = sorted({int(x) for x in sigs})
        if s.embedder == "none" or not sig_list:
            return {}
        if s.vector_search == "exact":
            return self._sync(c).sums(sig_list)
        # hnsw mode keeps no vectors in memory: summed in SQL, once per signature and version
        # (a signature's version moves with every write that adds or removes one of its rows).
        version = {x.id: x.version for xs in self._cache().by_tenant.values() for x in xs}
        known = {x: v[0] for x, v in self._sums.items() if v[3] == s.embedder}
        want = [x for x in sig_list if x not in known or known[x] != version.get(x)]
        if want:
            for sig, total, n in c.execute(
                    "SELECT sig, sum(embedding), count(*) FROM vectors WHERE sig = ANY(?) "
                    "GROUP BY sig", (want,)).fetchall():
                self._sums[int(sig)] = (version.get(int(sig)), np.asarray(total, dtype=np.float64),
                                        int(n), s.embedder)
                want.remove(int(sig))
            for x in want:  # no live row left
                self._sums.pop(x, None)
        return {x: self._sums[x][1:3] for x in sig_list if x in self._sums}

    def get(self, c: Any, pids: Iterable[int]) -> dict[int, np.ndarray]:
        if self._s.embedder == "none":
            return {}
        rows = c.execute("SELECT pid, embedding FROM vectors WHERE pid = ANY(?)",
                               ([int(p) for p in pids],)).fetchall()
        return {int(r[0]): r[1] for r in rows}

    def matrix(self, c: Any, pids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        got = self.get(c, pids.tolist())
        have = np.asarray([p for p in pids.tolist() if p in got], dtype=np.int64)
        dim = max(1, self._s.dimension)
        if not len(have):
            return have, np.zeros((0, dim), dtype=np.float32)
        return have, np.stack([got[p] for p in have.tolist()]).astype(np.float32, copy=False)

    def close(self) -> None:
        self.blocks = None

    # -- search ---------------------------------------------------------------------------------
    def search(self, c: Any, sigs: Iterable[int], query: np.ndarray,
               k: int) -> tuple[np.ndarray, np.ndarray]:
        s = self._s
        sig_list = sorted({int(x) for x in sigs})
        if s.embedder == "none" or not sig_list or k < 1:
            return _empty()
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != s.dimension:
            raise StoreError(f"query vector has {q.shape[0]} dimensions, the store {s.dimension}")
        if s.vector_search == "exact":
            return self._sync(c).search(sig_list, q, k)
        counts = {x.id: x.passages for xs in self._cache().by_tenant.values() for x in xs}
        allowed = sum(counts.get(x, 0) for x in sig_list)
        if allowed > HNSW_EXACT_BELOW:
            got = self._hnsw(c, sig_list, q, k)
            if len(got[0]) >= min(k, allowed):
                return got
            # The index scan gave up early (pgvector's hnsw.max_scan_tuples): the exact scan
            # instead, so a list is never under-filled.
        return self._sql_exact(c, sig_list, q, k)

    def _sync(self, c: Any) -> VectorBlocks:
        """The blocks brought to this snapshot (the segment cache was refreshed to it when the
        view opened). A passage's vector and signature never change while its id lives, so the
        difference to the blocks is just ids: live ones not yet loaded are read with one binary
        COPY, loaded ones no longer live are killed. A merge moves ids between segments and
        costs nothing."""
        s, cache = self._s, self._cache()
        if self.blocks is None or self._model != (s.embedder, s.dimension):
            self.blocks, self._model, self._gen = VectorBlocks(s.dimension), (s.embedder, s.dimension), None
        blocks = self.blocks
        if self._gen == cache.generation:
            return blocks
        live = cache.sig >= 0
        loaded = np.flatnonzero(blocks._blk >= 0)
        inside = loaded < len(live)
        still = np.zeros(len(loaded), dtype=bool)
        still[inside] = live[loaded[inside]]
        gone = loaded[~still]
        held = np.zeros(len(live), dtype=bool)
        held[loaded[inside]] = True
        if len(gone):
            blocks.kill(gone)
        new = np.flatnonzero(live & ~held)
        if len(new):
            pids, vecs = self.load(c, new, s.dimension)
            blocks.add(pids, cache.sig[pids], vecs)
        self._gen = cache.generation
        return blocks

    def load(self, c: Any, want: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """Stored vectors of these live passage ids (sorted), in that order, read in the view's
        snapshot with one binary COPY (no per-row Python). Every live passage has a vector row;
        one without is a corrupt store and raises rather than being searched as zeros."""
        lo, hi = int(want[0]), int(want[-1])
        if len(want) * 4 >= hi - lo + 1:
            # Mostly contiguous ids (a first load, bulk writes): a range scan, then filter.
            stmt = sql.SQL("COPY (SELECT pid, embedding FROM vectors WHERE pid BETWEEN {} AND {}) "
                           "TO STDOUT (FORMAT BINARY)").format(sql.Literal(lo), sql.Literal(hi))
        else:
            stmt = sql.SQL("COPY (SELECT pid, embedding FROM vectors WHERE pid = ANY({}::int4[])) "
                           "TO STDOUT (FORMAT BINARY)").format(sql.Literal(want.tolist()))
        buf = bytearray()
        with c.raw.copy(stmt) as cp:
            for chunk in cp:
                buf += chunk
        pids, vecs = _parse_vector_copy(buf, dim)
        del buf
        keep = np.isin(pids, want)
        if not keep.all():
            pids, vecs = pids[keep], vecs[keep]
        if len(pids) != len(want):
            lost = np.setdiff1d(want, pids)
            raise StoreError(f"{len(lost)} live passages have no stored vector (e.g. pid {int(lost[0])}); "
                             "re-embed the store with `evidex reembed`")
        order = np.argsort(pids, kind="stable")
        return pids[order], vecs[order]

    def _sql_exact(self, c: Any, sigs: list[int], q: np.ndarray,
                   k: int) -> tuple[np.ndarray, np.ndarray]:
        """hnsw mode's exact path (small actors, under-filled index scans), run in SQL because
        that mode keeps no vectors in memory. pgvector orders, float64 re-scoring decides. A row
        not fetched has a float32 score at most the last fetched one's; both differ from the
        exact score by at most ``eps`` (a bound on float32 summation error over ``dim`` products
        of unit vectors), so once the last fetched row is more than ``eps`` below the k-th exact
        score, no unfetched row can reach or tie it."""
        eps = 2.0 * len(q) * 2.0**-24 * max(float(np.linalg.norm(q)), 1.0) + 1e-7
        limit = 2 * k + 32
        while True:
            rows = c.execute(
                "SELECT pid, -(embedding <#> ?) AS s, embedding FROM vectors "
                "WHERE sig = ANY(?) ORDER BY embedding <#> ? LIMIT ?", (q, sigs, q, limit)).fetchall()
            pids, scores = _rescore(rows, q, k)
            if len(rows) < limit or float(rows[-1][1]) + eps < float(scores.min()):
                return pids, scores
            limit *= 4

    def _hnsw(self, c: Any, sigs: list[int], q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        raw = c.raw
        limit = 2 * k + 32
        ef = min(1000, max(self._s.hnsw_ef_search, limit))  # pgvector accepts 1..1000
        raw.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(ef)))
        raw.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cast = sql.SQL("::vector({})").format(sql.Literal(int(self._s.dimension)))
        rows = raw.execute(sql.SQL(
            "SELECT pid, -((embedding{c}) <#> (%s{c})) AS s, embedding FROM vectors "
            "WHERE sig = ANY(%s) ORDER BY (embedding{c}) <#> (%s{c}) LIMIT %s").format(c=cast),
            (q, sigs, q, limit)).fetchall()
        return _rescore(rows, q, k)


def _rescore(rows: list[tuple[Any, ...]], q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Candidates scored exactly (as ``VectorBlocks`` does); the best ``k`` plus ties."""
    if not rows:
        return _empty()
    pids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    exact = exact_cosines(np.vstack([r[2] for r in rows]), q)
    if len(rows) > k:
        kth = np.partition(exact, len(rows) - k)[len(rows) - k]
        keep = exact >= kth
        pids, exact = pids[keep], exact[keep]
    return pids, exact
