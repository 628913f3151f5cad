"""The same store workloads on two versions of evidex, for bit-for-bit and speed comparisons.

Run once per version (the version is whatever ``evidex`` imports, e.g. an older checkout's
``src`` on PYTHONPATH), alternating versions, then compare the dumps:

    PYTHONPATH=/tmp/old/src .venv/bin/python benchmarks/store_compare.py scifact --out old-1.json
    .venv/bin/python benchmarks/store_compare.py scifact --out new-1.json
    .venv/bin/python benchmarks/store_compare.py compare old-1.json new-1.json

Workloads (public API only, so any version runs them):
* ``scifact``: the SciFact corpus (english analyzer) in a SQLite store, every test query in
  keyword mode (k=100, one passage per document, as ``evidex eval``) and, in a second store
  with the deterministic ``hash-test`` embedder (so no model is timed or downloaded), in vector
  and hybrid mode (k=10); dumps (document, passage, score) per query, and times keyword
  ``search`` q/s (k=10) over several rounds.
* ``ingest``: ``--passages`` synthetic passages (the 1M benchmarks' generator) ingested into a
  fresh keyword-only store in batches of 2,000 documents, SQLite or ``--pg-url``; then 200
  one-document supersedes and removes. Reports passages/s (and the process's CPU seconds) and
  the write latencies.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from evidex import Actor, Document, KnowledgeBase
from evidex.evaluation import EVAL_LIMITS, corpus_documents, load_beir

SCIFACT = Path("/work/shared/data/beir/scifact")
ACTOR = Actor("eval", frozenset({"eval"}), visibilities=frozenset({"public", "internal"}))


def _hits(kb: KnowledgeBase, q: str, **kw: object) -> list[tuple[str, int, float]]:
    return [(h.document_id, h.passage, h.score) for h in kb.search(ACTOR, q, **kw)]  # type: ignore[arg-type]


def scifact(beir_dir: Path, rounds: int) -> dict[str, object]:
    beir = load_beir(beir_dir)
    docs = list(corpus_documents(beir))
    texts = list(beir.queries.values())
    tmp = Path(tempfile.mkdtemp(prefix="evidex-compare-"))
    out: dict[str, object] = {}
    with KnowledgeBase.open(tmp / "kw.db", analyzer="english", embedder="none", max_limit=100,
                            query_limits=EVAL_LIMITS) as kb:
        t = time.perf_counter()
        kb.ingest(docs, split="document")
        kb.optimize()
        out["ingest_keyword_s"] = round(time.perf_counter() - t, 2)
        out["keyword"] = [_hits(kb, q, limit=100, max_per_document=1, mode="keyword") for q in texts]
        qps = []
        for _ in range(rounds):
            t = time.perf_counter()
            for q in texts:
                kb.search(ACTOR, q, limit=10, mode="keyword")
            qps.append(len(texts) / (time.perf_counter() - t))
        out["search_keyword_k10_qps"] = [round(x) for x in qps]
    with KnowledgeBase.open(tmp / "hy.db", analyzer="english", embedder="hash-test",
                            query_limits=EVAL_LIMITS) as kb:
        t = time.perf_counter()
        kb.ingest(docs, split="paragraph")
        out["ingest_hash_test_s"] = round(time.perf_counter() - t, 2)
        for mode in ("vector", "hybrid"):
            out[mode] = [_hits(kb, q, limit=10, mode=mode) for q in texts]
    return out


def ingest(passages: int, pg_url: str | None) -> dict[str, object]:
    from million_keyword import documents, vocabulary

    docs = documents(passages, vocabulary(50_000))
    if pg_url:
        location = f"{pg_url}{'&' if '?' in pg_url else '?'}schema=cmp_{uuid.uuid4().hex[:10]}"
    else:
        location = str(Path(tempfile.mkdtemp(prefix="evidex-compare-")) / "ingest.db")
    out: dict[str, object] = {"location": location.split("?")[0] if pg_url else "sqlite"}
    with KnowledgeBase.open(location, embedder="none") as kb:
        t, cpu = time.perf_counter(), time.process_time()
        for i in range(0, len(docs), 2000):
            kb.ingest(docs[i : i + 2000])
        kb.store.settle()  # type: ignore[attr-defined]
        dt = time.perf_counter() - t
        out["ingest_s"] = round(dt, 2)
        # This process's CPU time (all its threads): on a shared machine it moves far less with
        # the load than wall time does. PostgreSQL's own work is not in it.
        out["ingest_cpu_s"] = round(time.process_time() - cpu, 2)
        out["passages_per_s"] = round(passages / dt)
        times = []
        for i in range(200):
            d = docs[(i * 7919) % len(docs)]
            t = time.perf_counter()
            if i % 7 == 6:
                kb.remove(d.tenant, d.id)
            else:
                kb.ingest(Document(d.id, d.tenant, d.groups, f"v{i}", d.text + f"\n\nrevision {i}"))
            times.append((time.perf_counter() - t) * 1000)
        kb.store.settle()  # type: ignore[attr-defined]
        times.sort()
        out["write_p50_ms"] = round(statistics.median(times), 2)
        out["write_p90_ms"] = round(times[int(0.9 * len(times))], 2)
    return out


def compare(a: Path, b: Path) -> dict[str, object]:
    """Per result list: identical (documents, passages and scores to the last bit) or not."""
    one, two = json.loads(a.read_text()), json.loads(b.read_text())
    out: dict[str, object] = {}
    for key in sorted(set(one) & set(two)):
        x, y = one[key], two[key]
        if isinstance(x, list) and x and isinstance(x[0], list):
            out[key] = f"{sum(p == q for p, q in zip(x, y, strict=True))}/{len(x)} identical"
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=("scifact", "ingest", "compare"))
    ap.add_argument("files", nargs="*", type=Path, help="compare: the two dumps")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--beir", type=Path, default=SCIFACT)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--passages", type=int, default=100_000)
    ap.add_argument("--pg-url", default=None)
    args = ap.parse_args()
    os.environ.setdefault("EVIDEX_CACHE_DIR", tempfile.mkdtemp(prefix="evidex-compare-cache-"))
    if args.workload == "compare":
        print(json.dumps(compare(*args.files), indent=2))
        return
    report = scifact(args.beir, args.rounds) if args.workload == "scifact" else ingest(args.passages,
                                                                                      args.pg_url)
    if args.out is not None:
        args.out.write_text(json.dumps(report))
    print(json.dumps({k: v for k, v in report.items() if not isinstance(v, list) or not v
                      or not isinstance(v[0], list)}, indent=2))


if __name__ == "__main__":
    main()
