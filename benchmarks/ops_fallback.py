"""Hybrid search latency when the query embedding is slow: the keyword fallback (issue 24).

    .venv/bin/python benchmarks/ops_fallback.py [--queries 40] [--delay-ms 2000] \
        [--timeout-ms 250] [--base-src /tmp/base-ops/src]

Questions are searched as ``kb.answer`` searches them (question-length limits). Builds the
example shop collection (examples/shop/site, default embedder) in a temporary SQLite
store, then times ``kb.search(actor, question)`` (hybrid, the default mode) for the first
``--queries`` questions of examples/eval/cases.yaml, each embedded for the first time (the
query-vector cache is cleared between scenarios), in these scenarios:

* ``keyword``: keyword mode (what the fallback returns);
* ``hybrid``: the embedder as it is, timeout 4000 ms (the reference configuration);
* ``slow, 4000``: the embedder slowed by ``--delay-ms`` per query, timeout 4000 ms (fused);
* ``slow, N``: slowed, timeout ``--timeout-ms`` (falls back to keywords);
* ``base, slow`` (with ``--base-src``): the base commit's code on the same store, slowed: it
  has no deadline and waits for the embedding.

Scenarios alternate per query (the machine is shared and noisy). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]


def questions(n: int) -> list[str]:
    cases = yaml.safe_load((ROOT / "examples" / "eval" / "cases.yaml").read_text(encoding="utf-8"))
    found = [c["question"] for c in cases["cases"] if "question" in c]
    return found[:n]


def build(db: Path) -> None:
    from evidex import KnowledgeBase
    from evidex.ingest import load_paths

    with KnowledgeBase.open(db) as kb:
        loaded = load_paths([ROOT / "examples" / "shop" / "site"],
                            {"tenant": "acme", "groups": ["customers", "staff"],
                             "visibility": "public", "language": "en"})
        kb.ingest(loaded.documents, split="heading")


def slowed(delay_s: float) -> list[float]:
    """Slow the store's embedder's query embedding by ``delay[0]`` seconds (settable)."""
    from evidex.embed import DEFAULT_EMBEDDER, get_embedder

    embedder = get_embedder(os.environ.get("EVIDEX_EMBEDDER") or DEFAULT_EMBEDDER)
    real = embedder.embed_queries
    delay = [delay_s]

    def slow(texts):  # type: ignore[no-untyped-def]
        time.sleep(delay[0])
        return real(texts)

    embedder.embed_queries = slow  # type: ignore[method-assign]
    return delay


def run_scenarios(db: Path, qs: list[str], delay_ms: int, timeout_ms: int, base: bool) -> dict[str, object]:
    """This process's scenarios (``base``: only the base code's slowed hybrid search)."""
    from evidex import Actor, KnowledgeBase
    from evidex.embed import query_vectors
    from evidex.kb import QUESTION_LIMITS

    actor = Actor("acme", frozenset({"customers"}), visibilities=frozenset({"public"}))
    kb = KnowledgeBase.open(db)
    kb.search(actor, "warm up the model")  # loads the model: the first query has no deadline
    delay = slowed(0.0)
    plan = ([("base, slow", "hybrid", delay_ms, None)] if base else [
        ("keyword", "keyword", 0, 4000), ("hybrid", "hybrid", 0, 4000),
        ("slow, 4000", "hybrid", delay_ms, 4000), (f"slow, {timeout_ms}", "hybrid", delay_ms, timeout_ms)])
    times: dict[str, list[float]] = {name: [] for name, *_ in plan}
    fallbacks: dict[str, int] = {name: 0 for name, *_ in plan}
    for q in qs:
        for name, mode, d, t in plan:
            query_vectors.clear()
            delay[0] = d / 1000
            if not base:
                kb.vector_timeout_ms = t
            t0 = time.perf_counter()
            res = kb.search(actor, q, mode=mode, limits=QUESTION_LIMITS)
            times[name].append((time.perf_counter() - t0) * 1000)
            fallbacks[name] += bool(getattr(res, "fallback", None))
    kb.close()
    return {name: {"p50_ms": round(statistics.median(v), 1),
                   "p95_ms": round(float(np.percentile(v, 95)), 1),
                   "max_ms": round(max(v), 1), "fallbacks": fallbacks[name], "queries": len(v)}
            for name, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--delay-ms", type=int, default=2000)
    ap.add_argument("--timeout-ms", type=int, default=250)
    ap.add_argument("--base-src", default=None, help="src/ of a base checkout to compare with")
    ap.add_argument("--db", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--base-run", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    qs = questions(args.queries)
    if args.base_run:
        print(json.dumps(run_scenarios(Path(args.db), qs, args.delay_ms, args.timeout_ms, True)))
        return
    db = Path(tempfile.mkdtemp(prefix="evidex-ops-")) / "shop.db"
    t0 = time.perf_counter()
    build(db)
    report: dict[str, object] = {
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d %H:%M"), "load_average_before": os.getloadavg()[0],
        "build_seconds": round(time.perf_counter() - t0, 1), "queries": len(qs),
        "delay_ms": args.delay_ms, "timeout_ms": args.timeout_ms,
    }
    report["new"] = run_scenarios(db, qs, args.delay_ms, args.timeout_ms, False)
    if args.base_src:
        env = {**os.environ, "PYTHONPATH": args.base_src}
        out = subprocess.run([sys.executable, __file__, "--base-run", "--db", str(db), "--queries",
                              str(args.queries), "--delay-ms", str(args.delay_ms)], env=env,
                             check=True, capture_output=True, text=True).stdout
        report["base"] = json.loads(out)
    report["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
