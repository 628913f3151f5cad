"""Hybrid query latency on SciFact including the query embedding (issue 3's latency target).

    EVIDEX_EMBED_THREADS=1 .venv/bin/python benchmarks/hybrid_latency.py \
        [--embedders all-minilm-l6-v2,multilingual-e5-small-int8] [--queries 100]
    EVIDEX_EMBED_THREADS=1 .venv/bin/python benchmarks/hybrid_latency.py --set encyclopedia

``--set NAME`` measures on a question set of benchmarks/answers_sets.py instead (development
questions over its collection, passage vectors from the embedding cache, so no corpus is
embedded): each search's question is one never seen before, timed alternately with the query
embedding alone of the same question (straight through the model), so machine noise hits both; then
the same searches with ``evidence=True`` (the answer decision), on questions never seen either;
then the first questions again, their vectors cached: the search alone, without the embedding.

For each embedder: builds the SciFact store (english analyzer, corpus vectors from the embedding
cache), then times ``kb.search(actor, query, limit=10)`` with the default mode and fusion
(hybrid, convex) for the first ``--queries`` test queries, each seen for the first time, so each
is embedded; then the same queries again, served from the query-vector cache, which isolates
retrieval; and the query embedding alone on other texts. One embedding thread is the measured
best on 2 cores (two threads contend with everything else on the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from evidex.embed import get_embedder, query_vectors
from evidex.evaluation import load_beir
from evidex.kb import QUESTION_LIMITS
from scifact_hybrid import ACTOR, SCIFACT, build


def pcts(values: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(values), 2), "p95": round(float(np.percentile(values, 95)), 2)}


def on_set(name: str, embedder: str, queries: int) -> dict[str, object]:
    """Latency of never-seen questions of a question set (see the module docstring)."""
    from answers_sets import build, load

    qset = load(name, "dev")
    kb = build(qset, embedder)
    kb._query_vectors = query_vectors  # the process's own cache, cleared: every question is new
    query_vectors.clear()
    actor = qset.actor
    texts = [q.text for q in qset.questions if q.split == "dev"]
    n = min(queries, len(texts) // 2)
    # The embedding alone is timed on the searched question itself (straight through the
    # model, which keeps no cache, so the search still embeds it): other questions would differ
    # in length, and the embedding's time grows with it.
    plain_qs, asked_qs = texts[:n], texts[n:2 * n]
    model = get_embedder(embedder)
    kb.search(actor, "warm up the model and the caches", limit=10)
    plain, embed, asked = [], [], []
    for i, q in enumerate(plain_qs):
        # Which goes first alternates, so neither is always the one after the other.
        for step in ((0, 1) if i % 2 == 0 else (1, 0)):
            t = time.perf_counter()
            if step == 0:
                kb.search(actor, q, limit=10, limits=QUESTION_LIMITS)
            else:
                model.embed_queries([q])
            (plain if step == 0 else embed).append((time.perf_counter() - t) * 1000)
    for q in asked_qs:
        t = time.perf_counter()
        kb.search(actor, q, limit=10, limits=QUESTION_LIMITS, evidence=True)
        asked.append((time.perf_counter() - t) * 1000)
    # The first questions again: their vectors are cached now, so this is the search alone
    # (no embedding, no hop to the embedding thread), three times each.
    cached = []
    for _ in range(3):
        for q in plain_qs:
            t = time.perf_counter()
            kb.search(actor, q, limit=10, limits=QUESTION_LIMITS)
            cached.append((time.perf_counter() - t) * 1000)
    kb.close()
    out: dict[str, object] = {"queries": n,
                              "hybrid_never_seen_ms": pcts(plain),
                              "query_embedding_alone_ms": pcts(embed),
                              "hybrid_never_seen_with_evidence_ms": pcts(asked),
                              "hybrid_cached_query_vector_ms": pcts(cached)}
    out["hybrid_minus_embedding_p50_ms"] = round(statistics.median(plain) - statistics.median(embed), 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedders", default="all-minilm-l6-v2,multilingual-e5-small-int8")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--set", default=None, help="a question set of answers_sets.py instead of SciFact")
    args = ap.parse_args()
    if args.set:
        report: dict[str, object] = {
            "set": args.set, "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "embed_threads": os.environ.get("EVIDEX_EMBED_THREADS", "all cores"),
            "load_average_before": os.getloadavg()[0]}
        for emb in args.embedders.split(","):
            report[emb] = on_set(args.set, emb, args.queries)
        report["load_average_after"] = os.getloadavg()[0]
        print(json.dumps(report, indent=2))
        return
    beir = load_beir(SCIFACT)
    texts = list(beir.queries.values())
    qs, others = texts[: args.queries], texts[args.queries : 2 * args.queries]
    report = {
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "embed_threads": os.environ.get("EVIDEX_EMBED_THREADS", "all cores"),
        "load_average_before": os.getloadavg()[0],
    }
    for emb in args.embedders.split(","):
        kb, _, _ = build(SCIFACT, emb, "english", Path(tempfile.mkdtemp(prefix="evidex-hlat-")))
        query_vectors.clear()
        kb.search(ACTOR, "warm up the model and the caches", limit=10)
        fresh, cached, embed = [], [], []
        for q in qs:
            t = time.perf_counter()
            kb.search(ACTOR, q, limit=10)
            fresh.append((time.perf_counter() - t) * 1000)
        for q in qs:
            t = time.perf_counter()
            kb.search(ACTOR, q, limit=10)
            cached.append((time.perf_counter() - t) * 1000)
        model = get_embedder(emb)
        for q in others:
            t = time.perf_counter()
            model.embed_queries([q])
            embed.append((time.perf_counter() - t) * 1000)
        report[emb] = {"hybrid_incl_query_embedding_ms": pcts(fresh),
                       "hybrid_cached_query_vector_ms": pcts(cached),
                       "query_embedding_alone_ms": pcts(embed)}
        kb.close()
        print(json.dumps({emb: report[emb]}), flush=True)
    report["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
