"""Hybrid retrieval quality and latency per embedder and fusion; evidence calibration data.

    .venv/bin/python benchmarks/scifact_hybrid.py [--embedders all-minilm-l6-v2,multilingual-e5-small-int8]

For each embedder: builds one SciFact store (english analyzer, passage vectors from the
persistent embedding cache: the first run embeds the corpus, about 40 min for e5 on 2 cores),
then measures nDCG@10 / Recall@100 / MRR@10 for keyword, vector, hybrid RRF (k=60), weighted
RRF, adaptive and convex (alpha 0.3/0.5/0.7); the hybrid search latency with a fresh query embedding for every
query; the German question set (benchmarks/data/german-qa) in every mode; and the best-cosine
distribution of SciFact queries versus off-topic questions (benchmarks/data/off-topic-questions.txt)
from which the evidence thresholds are chosen: the thresholds come from the SciFact *train*
queries (``best_cosine_scifact_train_queries``) and the calibration half of the off-topic
questions; the test queries' figures are reported, never tuned on.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from evidex import Actor, KnowledgeBase
from evidex.evaluation import EVAL_LIMITS, corpus_documents, load_beir, metrics, run_queries

HERE = Path(__file__).resolve().parent
_DATA = Path("shared") / "data" / "beir" / "scifact"
# The shared data folder sits beside the checkout (/work/shared for /work/main and /work/wt/x).
SCIFACT = next((up / _DATA for up in HERE.parents if (up / _DATA).is_dir()), HERE.parents[1] / _DATA)
GERMAN = HERE / "data" / "german-qa"
OFF_TOPIC = HERE / "data" / "off-topic-questions.txt"
ACTOR = Actor("eval", frozenset({"eval"}), visibilities=frozenset({"public", "internal"}))


def build(beir_dir: Path, embedder: str, analyzer: str, tmp: Path) -> tuple[KnowledgeBase, object, float]:
    beir = load_beir(beir_dir)
    kb = KnowledgeBase.open(tmp / f"{beir_dir.name}-{embedder}-{analyzer}.db", analyzer=analyzer,
                            embedder=embedder, max_limit=100, query_limits=EVAL_LIMITS)
    docs = list(corpus_documents(beir))
    t = time.perf_counter()
    for i in range(0, len(docs), 1000):
        kb.ingest(docs[i : i + 1000], split="document")
    kb.optimize()
    return kb, beir, time.perf_counter() - t


def quality(kb: KnowledgeBase, beir: object, **search: object) -> dict[str, float]:
    run, seconds = run_queries(kb, beir, **search)  # type: ignore[arg-type]
    out = metrics(beir, run)  # type: ignore[arg-type]
    out["qps"] = round(len(run) / seconds, 1)
    return out


def best_similarities(kb: KnowledgeBase, questions: list[str]) -> list[float]:
    out = []
    for q in questions:
        res = kb.search(ACTOR, q, limit=1, mode="vector")
        out.append(float(res.signals.get("similarity") or -1.0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedders", default="all-minilm-l6-v2,multilingual-e5-small-int8")
    ap.add_argument("--latency-queries", type=int, default=100)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="evidex-hybrid-"))
    off = [ln.strip() for ln in OFF_TOPIC.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    report: dict[str, object] = {"machine": f"{platform.node()} {platform.machine()}",
                                 "date": time.strftime("%Y-%m-%d %H:%M")}
    for emb in args.embedders.split(","):
        r: dict[str, object] = {}
        kb, beir, ingest_s = build(SCIFACT, emb, "english", tmp)
        r["ingest_s_with_cache"] = round(ingest_s, 1)
        r["keyword"] = quality(kb, beir, mode="keyword")
        r["vector"] = quality(kb, beir, mode="vector")
        r["hybrid_rrf"] = quality(kb, beir, mode="hybrid", fusion="rrf")
        r["hybrid_weighted_rrf"] = quality(kb, beir, mode="hybrid", fusion="weighted_rrf")
        r["hybrid_adaptive"] = quality(kb, beir, mode="hybrid", fusion="adaptive")
        for alpha in (0.3, 0.5, 0.7):
            r[f"hybrid_convex_{alpha}"] = quality(kb, beir, mode="hybrid", fusion="convex", alpha=alpha)
        # Latency with a real query embedding each time (the query-vector cache is cleared).
        qs = list(beir.queries.values())[: args.latency_queries]  # type: ignore[attr-defined]
        times = []
        for q in qs:
            kb._query_vectors.clear()
            t = time.perf_counter()
            kb.search(ACTOR, q, limit=10, mode="hybrid")
            times.append((time.perf_counter() - t) * 1000)
        r["hybrid_latency_ms_p50"] = round(statistics.median(times), 1)
        r["hybrid_latency_ms_p95"] = round(float(np.percentile(times, 95)), 1)
        t_ret = []
        for q in qs:  # the same queries with cached query vectors: retrieval alone
            t = time.perf_counter()
            kb.search(ACTOR, q, limit=10, mode="hybrid")
            t_ret.append((time.perf_counter() - t) * 1000)
        r["hybrid_latency_ms_p50_cached_query_vector"] = round(statistics.median(t_ret), 2)
        sims_in = best_similarities(kb, list(beir.queries.values()))  # type: ignore[attr-defined]
        sims_train = best_similarities(kb, list(load_beir(SCIFACT, "train").queries.values()))
        sims_off = best_similarities(kb, off)
        r["best_cosine_scifact_train_queries"] = {p: round(float(np.percentile(sims_train, p)), 4)
                                                  for p in (5, 25, 50, 75, 95)}
        r["best_cosine_scifact_queries"] = {p: round(float(np.percentile(sims_in, p)), 4)
                                            for p in (5, 25, 50, 75, 95)}
        r["best_cosine_off_topic"] = {p: round(float(np.percentile(sims_off, p)), 4)
                                      for p in (5, 25, 50, 75, 95)}
        r["off_topic_calibration_max"] = round(max(sims_off[:60]), 4)
        r["off_topic_heldout_max"] = round(max(sims_off[60:]), 4)
        kb.close()
        for analyzer in ("exact", "german"):
            gkb, gbeir, _ = build(GERMAN, emb, analyzer, tmp)
            r[f"german_{analyzer}"] = {
                "keyword": quality(gkb, gbeir, mode="keyword"),
                "vector": quality(gkb, gbeir, mode="vector"),
                "hybrid_rrf": quality(gkb, gbeir, mode="hybrid", fusion="rrf"),
                "hybrid_weighted_rrf": quality(gkb, gbeir, mode="hybrid", fusion="weighted_rrf"),
                "hybrid_adaptive": quality(gkb, gbeir, mode="hybrid", fusion="adaptive"),
                "hybrid_convex_0.5": quality(gkb, gbeir, mode="hybrid", fusion="convex", alpha=0.5),
            }
            gkb.close()
        report[emb] = r
        print(json.dumps({emb: r}, indent=2), flush=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
