"""Prototype: exact / quantised vector top-k over per-signature blocks, side by side.

Not part of evidex; a measurement script for the in-memory vector design (one contiguous block of
unit-norm float32 rows per access signature; a query scores only the blocks it may read, masks dead
rows, keeps the top-k).

Run (numpy only; every library-backed method is skipped when its package is missing):

    .venv/bin/python benchmarks/vector_prototype.py

All methods (optional packages, install them into a SEPARATE venv, not into the project's):

    python -m venv /tmp/vecbench-venv
    /tmp/vecbench-venv/bin/pip install numpy==2.4.6 numkong==7.8.6 simsimd==6.5.16 \
        faiss-cpu==1.15.1 threadpoolctl==3.8.0
    /tmp/vecbench-venv/bin/python benchmarks/vector_prototype.py --json /tmp/vecbench.json

Options: --rows-per-block 100000 --blocks 10 --allowed 5 --queries 200 (see --help). A full run
takes ~5-10 minutes and ~6 GB of RAM (faiss keeps its own copies of the float32 rows).

Data (synthetic, but with sentence-embedding-like structure rather than isotropic noise):
  * anisotropic per-dimension spectrum s_d ~ (1+d)^-0.25 (shuffled), two "outlier" dimensions;
  * a common mean direction (weight^2 --mean-share, default 0.35) shared by every vector, 50
    topics (0.15), 2000 clusters of log-normal sizes (0.25) and per-vector noise (0.25, with a
    per-cluster spread); unrelated vectors have cosine ~0.35, same-cluster ~0.75 (with
    --mean-share 0.7: ~0.7 and ~0.88, a strongly anisotropic model);
  * queries: half noisy copies of random stored vectors (cos ~0.9 to the source), half noisy
    copies of cluster centres;
  * 1% of the rows of every block are dead (deleted/superseded) and must never be returned.

Methods (each is timed per query, interleaved round-robin so machine noise hits all alike):
  exact  : numpy float32 gemv per allowed block (BLAS threads = 2); numpy on one contiguous
           matrix of all allowed rows; numkong float32 dot per 50k-row chunk in a 2-thread pool;
           faiss IndexFlatIP per block (alive-row IDSelectorBitmap) in a 2-thread pool; faiss one
           1M-row IndexFlatIP with an IDSelectorBitmap of allowed & alive rows.
  int8   : rows stored as clip(round(x * 127 / 0.35), -127, 127) (a FIXED constant, nothing
           fitted on data); the query is scaled by 127 / max|q| (a per-query constant, which does
           not change its ranking); int8 dot per chunk (numkong / simsimd) in a 2-thread pool,
           top-C per chunk, then exact float32 re-scoring of the C best.
  binary : sign bits (no centring: a data-fitted centre is not allowed), Hamming distance per
           chunk (numpy XOR + bitwise_count, numkong hammings_packed, simsimd hamming), top-C,
           exact re-scoring.  A row "binary centred" uses the mean of the stored vectors as the
           centre: NOT ALLOWED by the design, shown only to quantify what centring would buy.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
os.environ.setdefault("OMP_NUM_THREADS", "2")

import argparse
import json
import platform
import resource
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

try:
    import numkong as nk
except ImportError:  # pragma: no cover - optional
    nk = None
try:
    import simsimd as ss
except ImportError:  # pragma: no cover - optional
    ss = None
try:
    import faiss
except ImportError:  # pragma: no cover - optional
    faiss = None
try:
    from threadpoolctl import ThreadpoolController, threadpool_limits
except ImportError:  # pragma: no cover - optional
    threadpool_limits = None
    ThreadpoolController = None

INT8_RANGE = 0.35  # fixed constant: a component of +-0.35 maps to +-127; not fitted on data
CHUNK_ROWS = 50_000  # unit of work handed to the 2-thread pool


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------


def normalise(x: np.ndarray) -> np.ndarray:
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    return x


@dataclass
class Corpus:
    dim: int
    blocks: list[np.ndarray]  # float32 unit rows, one array per signature
    ids: list[np.ndarray]  # passage ids (int64) per block
    dead: list[np.ndarray]  # bool per row
    cluster_of: list[np.ndarray]
    centres: np.ndarray
    spectrum: np.ndarray
    stats: dict = field(default_factory=dict)


def make_corpus(args) -> Corpus:
    rng = np.random.default_rng(args.seed)
    d = args.dim
    spectrum = (1.0 + np.arange(d)) ** -0.25
    rng.shuffle(spectrum)
    spectrum /= np.sqrt((spectrum**2).sum())  # E||spectrum * g||^2 = 1 for g ~ N(0, I)
    mu = rng.standard_normal(d)
    mu /= np.linalg.norm(mu)
    outliers = rng.choice(d, 2, replace=False)
    mu[outliers] = [0.30, -0.25]  # "rogue" dimensions with a large shared component
    mu /= np.linalg.norm(mu)
    rest = (1.0 - args.mean_share) / 0.65
    w_mean, w_topic, w_cluster, w_noise = np.sqrt([args.mean_share, 0.15 * rest, 0.25 * rest, 0.25 * rest])
    topics = rng.standard_normal((50, d)) * spectrum
    topic_of_cluster = rng.integers(0, 50, args.clusters)
    centres = (
        w_mean * mu
        + w_topic * topics[topic_of_cluster]
        + w_cluster * rng.standard_normal((args.clusters, d)) * spectrum
    ).astype(np.float32)
    sizes = rng.lognormal(0.0, 1.0, args.clusters)
    p = sizes / sizes.sum()
    spread = rng.uniform(0.7, 1.3, args.clusters).astype(np.float32)  # tight and loose clusters
    blocks, ids, dead, cluster_of = [], [], [], []
    next_id = 0
    n = args.rows_per_block
    for _ in range(args.blocks):
        c = rng.choice(args.clusters, n, p=p)
        x = rng.standard_normal((n, d), dtype=np.float32)
        x *= spectrum.astype(np.float32)
        x *= (w_noise * spread[c])[:, None]
        x += centres[c]
        blocks.append(normalise(x))
        ids.append(np.arange(next_id, next_id + n, dtype=np.int64))
        next_id += n
        dd = np.zeros(n, dtype=bool)
        dd[rng.choice(n, int(n * args.dead_fraction), replace=False)] = True
        dead.append(dd)
        cluster_of.append(c)
    corpus = Corpus(d, blocks, ids, dead, cluster_of, centres, spectrum.astype(np.float32))
    # statistics of the space
    sample = np.concatenate([b[rng.choice(n, 2000, replace=False)] for b in blocks[:2]])
    sims = sample[:2000] @ sample[2000:].T
    same = []
    for i in range(200):
        members = np.flatnonzero(cluster_of[0] == cluster_of[0][i])
        if len(members) > 1:
            same.append(float(blocks[0][i] @ blocks[0][members[members != i][0]]))
    allx = np.concatenate([np.abs(b[:20000]) for b in blocks])
    corpus.stats = {
        "cos_random_pairs_mean": float(sims.mean()),
        "cos_random_pairs_p5_p95": [float(np.percentile(sims, 5)), float(np.percentile(sims, 95))],
        "cos_same_cluster_mean": float(np.mean(same)),
        "max_abs_component": float(allx.max()),
        "fraction_components_clipped_by_int8_range": float((allx > INT8_RANGE).mean()),
        "fraction_components_below_one_int8_step": float((allx < INT8_RANGE / 127 / 2).mean()),
    }
    return corpus


def make_queries(corpus: Corpus, args) -> np.ndarray:
    rng = np.random.default_rng(args.seed + 1)
    qs = []
    s = corpus.spectrum
    for i in range(args.queries + args.warmup):
        if i % 2 == 0:
            b = rng.integers(len(corpus.blocks))
            src = corpus.blocks[b][rng.integers(len(corpus.blocks[b]))]
        else:
            src = corpus.centres[rng.integers(len(corpus.centres))]
            src = src / np.linalg.norm(src)
        q = src + 0.48 * rng.standard_normal(corpus.dim).astype(np.float32) * s
        qs.append(q / np.linalg.norm(q))
    return np.asarray(qs, dtype=np.float32)


# --------------------------------------------------------------------------------------------
# the allowed view: chunks of the actor's blocks
# --------------------------------------------------------------------------------------------


@dataclass
class Chunk:
    block: int
    start: int
    stop: int
    offset: int  # position of the chunk's first row in the concatenated allowed view
    dead_local: np.ndarray  # indices (relative to start) of dead rows


class View:
    """The rows one actor may read: the allowed blocks, split into chunks for the pool."""

    def __init__(self, corpus: Corpus, allowed: list[int]):
        self.corpus = corpus
        self.allowed = allowed
        self.chunks: list[Chunk] = []
        offset = 0
        for b in allowed:
            n = len(corpus.blocks[b])
            for start in range(0, n, CHUNK_ROWS):
                stop = min(n, start + CHUNK_ROWS)
                dl = np.flatnonzero(corpus.dead[b][start:stop])
                self.chunks.append(Chunk(b, start, stop, offset, dl))
                offset += stop - start
        self.total = offset
        self.block_offset = {}
        off = 0
        for b in allowed:
            self.block_offset[b] = off
            off += len(corpus.blocks[b])
        self.pos_block = np.concatenate([np.full(len(corpus.blocks[b]), b, dtype=np.int32) for b in allowed])
        self.pos_row = np.concatenate([np.arange(len(corpus.blocks[b])) for b in allowed])
        self.dead_pos = np.concatenate(
            [np.flatnonzero(corpus.dead[b]) + self.block_offset[b] for b in allowed]
        )

    def passage_ids(self, pos: np.ndarray) -> np.ndarray:
        return np.array(
            [self.corpus.ids[b][r] for b, r in zip(self.pos_block[pos], self.pos_row[pos], strict=False)],
            dtype=np.int64,
        )

    def rows(self, pos: np.ndarray) -> np.ndarray:
        """Gather float32 rows for re-scoring (grouped by block, one fancy-index per block)."""
        out = np.empty((len(pos), self.corpus.dim), dtype=np.float32)
        pb = self.pos_block[pos]
        pr = self.pos_row[pos]
        for b in np.unique(pb):
            m = pb == b
            out[m] = self.corpus.blocks[b][pr[m]]
        return out


def top_desc(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest scores, best first."""
    idx = np.arange(len(scores)) if k >= len(scores) else np.argpartition(scores, -k)[-k:]
    return idx[np.argsort(-scores[idx], kind="stable")]


def merge(parts: list[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    pos = np.concatenate([p for p, _ in parts])
    sc = np.concatenate([s for _, s in parts])
    o = top_desc(sc, k)
    return pos[o], sc[o]


# --------------------------------------------------------------------------------------------
# methods: each returns (positions in the allowed view, scores), best first, length k
# --------------------------------------------------------------------------------------------


class Methods:
    def __init__(self, corpus: Corpus, view: View, args, pool: ThreadPoolExecutor):
        self.c = corpus
        self.v = view
        self.k = args.k
        self.pool = pool
        self.memory: dict[str, float] = {}  # MB per 1M vectors
        n_all = sum(len(b) for b in corpus.blocks)
        per_m = 1_000_000 / n_all
        d = corpus.dim
        self.memory["float32 rows"] = n_all * d * 4 * per_m / 2**20
        self.memory["passage ids (int64)"] = n_all * 8 * per_m / 2**20
        # exact: per-chunk score buffers
        self.buf64 = {i: np.empty((1, ch.stop - ch.start)) for i, ch in enumerate(view.chunks)}
        self.buf32 = {i: np.empty(ch.stop - ch.start, dtype=np.float32) for i, ch in enumerate(view.chunks)}
        self.scores_all = np.empty(view.total, dtype=np.float32)
        self.concat = None
        # int8 rows (all blocks, as a deployment would hold them)
        self.i8 = [quantise_rows(b) for b in corpus.blocks]
        self.memory["int8 rows (fixed scale)"] = sum(a.nbytes for a in self.i8) * per_m / 2**20
        # binary rows
        self.bits = [np.packbits(b > 0, axis=1) for b in corpus.blocks]
        self.memory["binary sign rows"] = sum(a.nbytes for a in self.bits) * per_m / 2**20
        self.centre = np.mean(
            [b[:: max(1, len(b) // 20000)].mean(axis=0) for b in corpus.blocks], axis=0
        ).astype(np.float32)  # data-fitted: NOT ALLOWED, reference only
        self.bits_c = [np.packbits(b > self.centre, axis=1) for b in corpus.blocks]
        self.bits64 = [a.view(np.uint64) for a in self.bits]
        self.tmp64 = {
            i: np.empty((ch.stop - ch.start, d // 64), dtype=np.uint64) for i, ch in enumerate(view.chunks)
        }
        self.tmp8 = {
            i: np.empty((ch.stop - ch.start, d // 64), dtype=np.uint8) for i, ch in enumerate(view.chunks)
        }
        self.ham16 = {i: np.empty(ch.stop - ch.start, dtype=np.uint16) for i, ch in enumerate(view.chunks)}
        # numkong's packed kernels want a numkong Tensor as out=; keep a numpy view of each
        self.hamu32 = {}
        self.hamu32_np = {}
        if nk is not None:
            for i, ch in enumerate(view.chunks):
                self.hamu32[i] = nk.zeros((1, ch.stop - ch.start), dtype="uint32")
                self.hamu32_np[i] = np.asarray(self.hamu32[i])
        self.nk_ham_packed = None
        self.nk_ham_packed_c = None
        if nk is not None:
            self.nk_ham_packed = [
                nk.hammings_pack(self.bits[ch.block][ch.start : ch.stop]) for ch in view.chunks
            ]
            self.nk_ham_packed_c = [
                nk.hammings_pack(self.bits_c[ch.block][ch.start : ch.stop]) for ch in view.chunks
            ]
        self.faiss_blocks = None
        self.faiss_big = None
        self.blas_ctl = ThreadpoolController() if ThreadpoolController is not None else None

    # ---- helpers
    def _chunk_top(self, i: int, scores: np.ndarray, m: int, larger_is_better=True):
        ch = self.v.chunks[i]
        if larger_is_better:
            scores[ch.dead_local] = -np.inf
            loc = top_desc(scores, m)
        else:
            scores[ch.dead_local] = np.iinfo(scores.dtype).max if scores.dtype.kind in "ui" else np.inf
            loc = np.arange(len(scores)) if m >= len(scores) else np.argpartition(scores, m)[:m]
        return loc + ch.offset, scores[loc]

    def _rescore(self, q: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rows = self.v.rows(cand)
        sc = rows @ q  # candidates are alive: dead rows were masked in the first pass
        o = top_desc(sc, self.k)
        return cand[o], sc[o]

    # ---- 1. exact float32
    def np_blocks(self, q):
        s = self.scores_all
        for b in self.v.allowed:
            off = self.v.block_offset[b]
            blk = self.c.blocks[b]
            np.dot(blk, q, out=s[off : off + len(blk)])
        s[self.v.dead_pos] = -np.inf
        o = top_desc(s, self.k)
        return o, s[o]

    def np_concat(self, q):
        s = self.scores_all
        np.dot(self.concat, q, out=s)
        s[self.v.dead_pos] = -np.inf
        o = top_desc(s, self.k)
        return o, s[o]

    def nk_f32(self, q):
        q2 = q[None]

        def task(i):
            ch = self.v.chunks[i]
            out = self.buf64[i]
            nk.cdist(q2, self.c.blocks[ch.block][ch.start : ch.stop], metric="dot", out=out)
            return self._chunk_top(i, out[0], self.k)

        return merge(list(self.pool.map(task, range(len(self.v.chunks)))), self.k)

    def np_f32_pool(self, q):
        # BLAS must be single-threaded here, or 2 pool threads x 2 BLAS threads oversubscribe
        if ThreadpoolController is not None:
            with self.blas_ctl.limit(limits=1, user_api="blas"):
                return self._np_f32_pool(q)
        return self._np_f32_pool(q)

    def _np_f32_pool(self, q):
        def task(i):
            ch = self.v.chunks[i]
            out = self.buf32[i]
            np.dot(self.c.blocks[ch.block][ch.start : ch.stop], q, out=out)
            return self._chunk_top(i, out, self.k)

        return merge(list(self.pool.map(task, range(len(self.v.chunks)))), self.k)

    def faiss_per_block(self, q):
        q2 = q[None]

        def task(b):
            index, params = self.faiss_blocks[b]
            dist, idx = index.search(q2, self.k, params=params)
            ok = idx[0] >= 0
            return idx[0][ok] + self.v.block_offset[b], dist[0][ok]

        return merge(list(self.pool.map(task, self.v.allowed)), self.k)

    def faiss_selector(self, q):
        index, params, global_to_pos = self.faiss_big
        dist, idx = index.search(q[None], self.k, params=params)
        ok = idx[0] >= 0
        return global_to_pos[idx[0][ok]], dist[0][ok]

    # ---- 2. int8 first pass + exact re-scoring
    def int8(self, q, C, lib):
        qi = quantise_query(q)[None]

        def task(i):
            ch = self.v.chunks[i]
            rows = self.i8[ch.block][ch.start : ch.stop]
            if lib == "numkong":
                out = self.buf64[i]
                nk.cdist(qi, rows, metric="dot", out=out)
            else:
                # no out=: simsimd 6.5.16 returns None without a reference when given out=,
                # which drives None's refcount to zero (fatal "deallocating None") after ~1e5 calls
                out = np.asarray(ss.cdist(qi, rows, metric="dot", dtype="int8", out_dtype="float32"))
            return self._chunk_top(i, out[0], C)

        cand, _ = merge(list(self.pool.map(task, range(len(self.v.chunks)))), C)
        return self._rescore(q, cand)

    # ---- 3. binary first pass + exact re-scoring
    def binary(self, q, C, lib, centred=False):
        qb = np.packbits(q > self.centre) if centred else np.packbits(q > 0)
        qb2 = qb[None]
        q64 = qb.view(np.uint64)

        def task(i):
            ch = self.v.chunks[i]
            if lib == "numpy":
                np.bitwise_xor(self.bits64[ch.block][ch.start : ch.stop], q64, out=self.tmp64[i])
                np.bitwise_count(self.tmp64[i], out=self.tmp8[i])
                np.add.reduce(self.tmp8[i], axis=1, dtype=np.uint16, out=self.ham16[i])
                h = self.ham16[i]
            elif lib == "numkong":
                packed = (self.nk_ham_packed_c if centred else self.nk_ham_packed)[i]
                nk.hammings_packed(qb2, packed, out=self.hamu32[i])
                h = self.hamu32_np[i][0]
            else:
                bits = (self.bits_c if centred else self.bits)[ch.block][ch.start : ch.stop]
                h = np.asarray(ss.cdist(qb2, bits, metric="hamming", dtype="bin8", out_dtype="float32"))[0]
            return self._chunk_top(i, h, C, larger_is_better=False)

        parts = list(self.pool.map(task, range(len(self.v.chunks))))
        pos = np.concatenate([p for p, _ in parts])
        sc = np.concatenate([s for _, s in parts]).astype(np.int64)
        if len(pos) > C:
            pos = pos[np.argpartition(sc, C)[:C]]
        return self._rescore(q, pos)


def quantise_rows(x: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape, dtype=np.int8)
    for s in range(0, len(x), 50_000):
        y = np.rint(x[s : s + 50_000] * (127.0 / INT8_RANGE))
        np.clip(y, -127, 127, out=y)
        out[s : s + 50_000] = y
    return out


def quantise_query(q: np.ndarray) -> np.ndarray:
    # a per-query positive scale does not change the ranking; it only uses the int8 range fully
    return np.rint(q * (127.0 / np.abs(q).max())).astype(np.int8)


# --------------------------------------------------------------------------------------------
# ground truth, machine load
# --------------------------------------------------------------------------------------------


def ground_truth(corpus: Corpus, view: View, queries: np.ndarray, k: int):
    """Exact top-k by cosine over the allowed, alive rows; final order by float64 scores."""
    margin = 2 * k
    cand_pos = [[] for _ in queries]
    for b in view.allowed:
        blk = corpus.blocks[b]
        off = view.block_offset[b]
        for s in range(0, len(blk), 25_000):
            sc = queries @ blk[s : s + 25_000].T
            sc[:, corpus.dead[b][s : s + 25_000]] = -np.inf
            part = np.argpartition(sc, -margin, axis=1)[:, -margin:]
            for qi in range(len(queries)):
                cand_pos[qi].append(part[qi] + s + off)
    gt_pos, gt_sc = [], []
    for qi, q in enumerate(queries):
        pos = np.unique(np.concatenate(cand_pos[qi]))
        sc = view.rows(pos).astype(np.float64) @ q.astype(np.float64)
        o = np.argsort(-sc, kind="stable")[:k]
        gt_pos.append(pos[o])
        gt_sc.append(sc[o])
    return np.array(gt_pos), np.array(gt_sc)


def cpu_times():
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    vals = list(map(int, parts))
    idle = vals[3] + vals[4]
    return sum(vals), idle


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows-per-block", type=int, default=100_000)
    ap.add_argument("--blocks", type=int, default=10)
    ap.add_argument("--allowed", type=int, default=5)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--clusters", type=int, default=2000)
    ap.add_argument("--dead-fraction", type=float, default=0.01)
    ap.add_argument(
        "--mean-share",
        type=float,
        default=0.35,
        help="share of the common mean direction (~ cosine of unrelated vectors)",
    )
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--no-faiss", action="store_true")
    ap.add_argument("--numkong-f32", action="store_true", help="also time numkong float32 (slow)")
    ap.add_argument("--json", help="write all results to this file too")
    args = ap.parse_args()
    assert args.dim % 64 == 0, "binary path assumes dim divisible by 64"

    t0 = time.perf_counter()
    load_before = os.getloadavg()
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"numkong {getattr(nk, '__version__', '-')}, simsimd {getattr(ss, '__version__', '-')}, "
        f"faiss {getattr(faiss, '__version__', '-')}, cpus {os.cpu_count()}",
        flush=True,
    )
    if threadpool_limits is not None:
        threadpool_limits(limits=args.threads, user_api="blas")
    corpus = make_corpus(args)
    print(
        f"data: {args.blocks} blocks x {args.rows_per_block} rows x {args.dim} dims in "
        f"{time.perf_counter() - t0:.1f} s; {json.dumps(corpus.stats)}",
        flush=True,
    )
    allowed = list(range(0, args.blocks, args.blocks // args.allowed))[: args.allowed]
    view = View(corpus, allowed)
    queries = make_queries(corpus, args)
    pool = ThreadPoolExecutor(args.threads)
    m = Methods(corpus, view, args, pool)

    t1 = time.perf_counter()
    gt_pos, gt_sc = ground_truth(corpus, view, queries, args.k)
    print(
        f"ground truth in {time.perf_counter() - t1:.1f} s; allowed rows {view.total} "
        f"(alive {view.total - len(view.dead_pos)})",
        flush=True,
    )
    warm = args.warmup
    qstats = {
        "score@1_mean": float(gt_sc[warm:, 0].mean()),
        "score@10_mean": float(gt_sc[warm:, 9].mean()),
        "score@50_mean": float(gt_sc[warm:, args.k - 1].mean()),
        "gap score@10-score@11 median": float(np.median(gt_sc[warm:, 9] - gt_sc[warm:, 10])),
        "gap score@50-score@49 median": float(np.median(gt_sc[warm:, 48] - gt_sc[warm:, 49])),
    }
    print("query/GT stats:", json.dumps(qstats), flush=True)

    configs: list[tuple[str, str, Callable]] = [
        ("exact", "numpy f32 gemv per block (BLAS 2 thr)", m.np_blocks),
        ("exact", "numpy f32 per 50k chunk, 2-thread pool, BLAS 1 thr", m.np_f32_pool),
    ]
    m.concat = np.concatenate([corpus.blocks[b] for b in allowed])
    configs.append(("exact", "numpy f32 one contiguous matrix", m.np_concat))
    if nk is not None and args.numkong_f32:
        # numkong 7.8.6 accumulates float32 dots in float64: ~10x slower than BLAS here
        configs.append(("exact", "numkong f32 per chunk, 2-thread pool", m.nk_f32))
    if faiss is not None and not args.no_faiss:
        faiss.omp_set_num_threads(args.threads)
        keep = []
        m.faiss_blocks = {}
        for b in allowed:
            index = faiss.IndexFlatIP(args.dim)
            index.add(corpus.blocks[b])
            bm = np.packbits(~corpus.dead[b], bitorder="little")
            keep.append(bm)
            sel = faiss.IDSelectorBitmap(len(corpus.dead[b]), faiss.swig_ptr(bm))
            keep.append(sel)
            m.faiss_blocks[b] = (index, faiss.SearchParameters(sel=sel))
        big = faiss.IndexFlatIP(args.dim)
        allowed_mask = []
        global_to_pos = np.full(sum(len(b) for b in corpus.blocks), -1, dtype=np.int64)
        start = 0
        for b, blk in enumerate(corpus.blocks):
            big.add(blk)
            if b in view.block_offset:
                allowed_mask.append(~corpus.dead[b])
                global_to_pos[start : start + len(blk)] = view.block_offset[b] + np.arange(len(blk))
            else:
                allowed_mask.append(np.zeros(len(blk), dtype=bool))
            start += len(blk)
        bm = np.packbits(np.concatenate(allowed_mask), bitorder="little")
        sel = faiss.IDSelectorBitmap(len(global_to_pos), faiss.swig_ptr(bm))
        keep += [bm, sel]
        m.faiss_big = (big, faiss.SearchParameters(sel=sel), global_to_pos)
        m._faiss_keep = keep
        configs.append(("exact", "faiss IndexFlatIP per block + alive selector, pool 2", m.faiss_per_block))
        configs.append(("exact", "faiss IndexFlatIP 1M + IDSelectorBitmap(allowed&alive)", m.faiss_selector))
    for lib, ok in (("numkong", nk is not None), ("simsimd", ss is not None)):
        if ok:
            for C in (200, 500, 1000):
                configs.append(
                    ("int8", f"int8 {lib} dot, C={C}, rescore f32", lambda q, C=C, lib=lib: m.int8(q, C, lib))
                )
    bin_libs = [("numpy", True), ("numkong", nk is not None), ("simsimd", ss is not None)]
    for lib, ok in bin_libs:
        if not ok:
            continue
        Cs = (200, 1000, 5000, 20000) if lib == "numkong" else (1000,)
        for C in Cs:
            configs.append(
                (
                    "binary",
                    f"binary {lib} hamming, C={C}, rescore f32",
                    lambda q, C=C, lib=lib: m.binary(q, C, lib),
                )
            )
    best_bin = "numkong" if nk is not None else "numpy"
    for C in (200, 1000):
        configs.append(
            (
                "ref",
                f"binary CENTRED (not allowed) {best_bin}, C={C}",
                lambda q, C=C: m.binary(q, C, best_bin, centred=True),
            )
        )

    results = {
        name: {"group": g, "t": [], "cpu": [], "r10": [], "r50": [], "exact": 0} for g, name, _ in configs
    }
    cpu0, idle0 = cpu_times()
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    wall0 = time.perf_counter()
    for qi, q in enumerate(queries):
        order = configs[qi % len(configs) :] + configs[: qi % len(configs)]
        for _, name, fn in order:
            cs = time.process_time()
            ts = time.perf_counter()
            pos, sc = fn(q)
            ids = view.passage_ids(np.asarray(pos))  # map to passage ids (part of the cost)
            dt = time.perf_counter() - ts
            dcpu = time.process_time() - cs
            if qi < warm:
                continue
            r = results[name]
            r["t"].append(dt * 1e3)
            r["cpu"].append(dcpu * 1e3)
            gp = gt_pos[qi]
            pos = np.asarray(pos)
            assert not np.isin(pos, view.dead_pos).any(), f"{name} returned a dead row"
            assert len(ids) == len(pos)
            r["r10"].append(len(np.intersect1d(pos[:10], gp[:10])) / 10)
            r["r50"].append(len(np.intersect1d(pos[: args.k], gp)) / args.k)
            # exact up to float32 ties: the same set, or the same sorted scores within 1e-5
            scd = np.sort(np.asarray(sc, dtype=np.float64))[::-1]
            same = len(np.intersect1d(pos[: args.k], gp)) == args.k or (
                len(scd) == args.k and float(np.max(np.abs(scd - gt_sc[qi]))) < 1e-5
            )
            r["exact"] += int(same)
        if qi and qi % 50 == 0:
            print(f"  query {qi}/{len(queries)}", flush=True)
    wall = time.perf_counter() - wall0
    cpu1, idle1 = cpu_times()
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    ticks = os.sysconf("SC_CLK_TCK")
    busy_total = ((cpu1 - cpu0) - (idle1 - idle0)) / ticks
    ours = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    ncpu = os.cpu_count() or 1
    load = {
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "measure_wall_s": wall,
        "machine_busy_fraction": busy_total / (wall * ncpu),
        "this_process_cpu_fraction": ours / (wall * ncpu),
        "other_processes_cpu_fraction": max(0.0, (busy_total - ours) / (wall * ncpu)),
    }

    nq = args.queries
    mem_of = {
        "exact": m.memory["float32 rows"],
        "int8": m.memory["int8 rows (fixed scale)"] + m.memory["float32 rows"],
        "binary": m.memory["binary sign rows"] + m.memory["float32 rows"],
        "ref": m.memory["binary sign rows"] + m.memory["float32 rows"],
    }
    rows = []
    print()
    hdr = (
        f"{'method':<58} {'p50 ms':>7} {'p95 ms':>7} {'cpu ms':>7} {'rec@10':>7} "
        f"{'rec@50':>7} {'min r10':>7} {'exact':>6} {'MB/1M':>7}"
    )
    print(hdr)
    print("-" * len(hdr))
    for g, name, _ in configs:
        r = results[name]
        t = np.array(r["t"])
        row = {
            "group": g,
            "method": name,
            "p50_ms": float(np.percentile(t, 50)),
            "p95_ms": float(np.percentile(t, 95)),
            "cpu_ms_p50": float(np.percentile(r["cpu"], 50)),
            "recall@10": float(np.mean(r["r10"])),
            "recall@50": float(np.mean(r["r50"])),
            "min_recall@10": float(np.min(r["r10"])),
            "exact_fraction": r["exact"] / nq,
            "memory_MB_per_1M": mem_of[g],
        }
        if name.startswith("faiss"):
            row["memory_MB_per_1M"] = m.memory["float32 rows"]  # a copy held inside faiss
        rows.append(row)
        print(
            f"{name:<58} {row['p50_ms']:7.1f} {row['p95_ms']:7.1f} {row['cpu_ms_p50']:7.1f} "
            f"{row['recall@10']:7.4f} "
            f"{row['recall@50']:7.4f} {row['min_recall@10']:7.2f} {row['exact_fraction']:6.2f} "
            f"{row['memory_MB_per_1M']:7.0f}"
        )
    print()
    print("memory per 1M vectors (MB):", json.dumps({k: round(v, 1) for k, v in m.memory.items()}))
    print("  int8/binary rows above include the float32 rows kept for exact re-scoring;")
    print("  faiss IndexFlat holds its own float32 copy (it cannot share the numpy blocks).")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("  p50/p95: wall-clock per query; cpu ms: median CPU time of this process per query")
    print("  (all threads); exact: fraction of queries whose top-k equals the exact top-k")
    print("  (float32 ties allowed); min r10: worst query's recall@10.")
    print(f"peak RSS {peak:.0f} MB; machine load: {json.dumps(load)}")
    print(f"total {time.perf_counter() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "args": vars(args),
                    "data": corpus.stats,
                    "queries": qstats,
                    "results": rows,
                    "memory_MB_per_1M": m.memory,
                    "load": load,
                    "peak_rss_MB": peak,
                    "versions": {
                        "python": platform.python_version(),
                        "numpy": np.__version__,
                        "numkong": getattr(nk, "__version__", None),
                        "simsimd": getattr(ss, "__version__", None),
                        "faiss": getattr(faiss, "__version__", None),
                    },
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    sys.exit(main())
