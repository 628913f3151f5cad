"""1,000,000 passages with synthetic vectors, half allowed: vector and hybrid latency, recall.

    .venv/bin/python benchmarks/million_vector.py [--passages 1000000] [--queries 200] [--db PATH]

Synthetic vectors stand in for a model (embedding a million passages with e5 would take days
here): 384-dim unit vectors with sentence-embedding-like structure (a shared mean direction,
2,000 clusters of log-normal sizes, anisotropic noise; unrelated cosine ~0.35, same cluster
~0.75). The passages' texts come from benchmarks/million_keyword.py. The store is written through
the store contract (`kb.store.apply` with the vectors attached, i.e. everything but the model
call), then searched through `KnowledgeBase.search`; the query vector is given to the
KnowledgeBase's query-vector cache, again skipping only the model call.

Reported: vector-leg and hybrid p50/p95 (limit 10), recall@10 of the vector leg against exact
float64 brute force over the allowed rows, file size, peak RSS.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from evidex import Actor, Document, KnowledgeBase
from evidex._writes import passage_writes
from evidex.store import DocumentWrite
from million_keyword import documents, queries, vocabulary

DIM = 384


def vectors(n: int, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    spectrum = (1.0 + np.arange(DIM)) ** -0.25
    rng.shuffle(spectrum)
    spectrum = (spectrum / np.sqrt((spectrum**2).sum())).astype(np.float32)
    mu = rng.standard_normal(DIM).astype(np.float32)
    mu /= np.linalg.norm(mu)
    centres = (0.59 * mu + 0.62 * rng.standard_normal((2000, DIM)).astype(np.float32) * spectrum)
    p = rng.lognormal(0.0, 1.0, 2000)
    c = rng.choice(2000, n, p=p / p.sum())
    out = np.empty((n, DIM), dtype=np.float32)
    for i in range(0, n, 100_000):
        j = min(n, i + 100_000)
        x = rng.standard_normal((j - i, DIM), dtype=np.float32) * spectrum * 0.52
        x += centres[c[i:j]]
        out[i:j] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out, centres


def build(kb: KnowledgeBase, docs: list[Document], vecs: np.ndarray) -> float:
    """Ingest ``docs`` with precomputed vectors (row order = passage order) in batches of 2,000
    documents, then optimize; returns the seconds taken."""
    t = time.perf_counter()
    row = 0
    for i in range(0, len(docs), 2000):
        writes = []
        for d in docs[i : i + 2000]:
            ps = passage_writes(kb.store.analyzer, d, "paragraph", 2000)
            ps = tuple(dataclasses.replace(p, vector=vecs[row + k]) for k, p in enumerate(ps))
            row += len(ps)
            writes.append(DocumentWrite(d, "paragraph", ps))
        kb.store.apply(writes)
    kb.optimize()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--db", type=Path, default=None,
                    help="measure an existing store built from the same generated data (e.g. the "
                         "SQLite store million_postgres.py leaves behind) instead of building one")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="evidex-mvec-"))
    path = args.db or tmp / "mvec.db"
    vocab = vocabulary(50_000)
    docs = documents(args.passages, vocab)
    vecs, centres = vectors(args.passages)
    kb = KnowledgeBase.open(path, embedder="all-minilm-l6-v2")
    if args.db is None:
        build_s: float | None = build(kb, docs, vecs)
    else:
        build_s = None
        if kb.stats()["passages"] != args.passages:
            raise SystemExit(f"{args.db} holds {kb.stats()['passages']} passages, not {args.passages}")
    actor = Actor("bench", frozenset({"a"}), visibilities=frozenset({"public", "internal"}))
    allowed_rows = np.concatenate([np.arange(k * 10, k * 10 + 10) for k, d in enumerate(docs)
                                   if "a" in d.groups])
    rng = np.random.default_rng(9)
    texts = queries(args.queries, vocab, seed=12, uniform=True)
    qvecs = []
    for i in range(args.queries):
        src = vecs[rng.choice(allowed_rows)] if i % 2 == 0 else centres[rng.integers(2000)]
        q = src / np.linalg.norm(src) + 0.05 * rng.standard_normal(DIM).astype(np.float32)
        qvecs.append((q / np.linalg.norm(q)).astype(np.float32))
    allowed_mat = vecs[allowed_rows].astype(np.float64)
    recall, t_vec, t_hyb = [], [], []
    model = kb.store.embedder
    kb.search(actor, texts[0], mode="vector")  # load the arrays and blocks once
    for text, q in zip(texts, qvecs, strict=True):
        kb._query_vectors.get(model, text, lambda _texts, q=q: q[None])
        t0 = time.perf_counter()
        hits = kb.search(actor, text, mode="vector", limit=10, max_per_document=None)
        t_vec.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        kb.search(actor, text, mode="hybrid", limit=10)
        t_hyb.append((time.perf_counter() - t0) * 1000)
        exact = allowed_mat @ q.astype(np.float64)
        top = allowed_rows[np.argsort(-exact, kind="stable")[:10]]
        want = {(f"doc{r // 10:07d}", int(r % 10 + 1)) for r in top}
        got = {(h.document_id, h.passage) for h in hits}
        recall.append(len(want & got) / 10)
    report = {
        "machine": f"{platform.node()} {platform.machine()}",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "passages": args.passages,
        "allowed_passages": len(allowed_rows),
        "build_s": round(build_s, 1) if build_s is not None else "not built (--db)",
        "vector_p50_ms": round(float(np.percentile(t_vec, 50)), 2),
        "vector_p95_ms": round(float(np.percentile(t_vec, 95)), 2),
        "hybrid_p50_ms": round(float(np.percentile(t_hyb, 50)), 2),
        "hybrid_p95_ms": round(float(np.percentile(t_hyb, 95)), 2),
        "recall_at_10_vs_exact": round(float(np.mean(recall)), 4),
        "queries_with_recall_below_1": int(sum(r < 1 for r in recall)),
        "file_bytes": path.stat().st_size,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    kb.close()
    print(json.dumps(report, indent=2))
    for p in tmp.glob("mvec.db*"):
        p.unlink()  # a store given with --db is left alone


if __name__ == "__main__":
    main()
