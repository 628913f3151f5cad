"""Queries right after writes the actor cannot read, on the 1M keyword store.

    cd benchmarks && ../.venv/bin/python million_keyword.py --keep   # builds .work/million-full.db
    ../.venv/bin/python unreadable_writes.py [--queries 300] [--seed 1]

Warms the group-"a" actor's caches with Zipf queries, then alternates: supersede one document of
group "b" only (unreadable to the actor), run one query as the actor. Ranking caches keyed by the
store generation were dropped by every such write; keyed by the actor's visible collection they
are kept. Reports p50/p95 of the queries. Modifies the store (new versions of group-b documents),
so `million_keyword.py --keep` rebuilds it afterwards.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from evidex import Actor, Document, KnowledgeBase
from million_keyword import WORK, documents, queries, vocabulary


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    vocab = vocabulary(50_000)
    unreadable = [d for d in documents(1_000_000, vocab) if "a" not in d.groups]
    kb = KnowledgeBase.open(WORK / "million-full.db")
    actor = Actor("bench", frozenset({"a"}), visibilities=frozenset({"public", "internal"}))
    qs = queries(args.queries, vocab, seed=3)
    for q in qs:
        kb.search(actor, q, mode="keyword", limit=10)
    rng = np.random.default_rng(args.seed)
    times = []
    for i, q in enumerate(qs):
        d = unreadable[int(rng.integers(0, len(unreadable)))]
        kb.ingest([Document(d.id, d.tenant, d.groups, f"u{args.seed}-{i}", d.text + f"\n\nrevision u{i}")])
        t = time.perf_counter()
        kb.search(actor, q, mode="keyword", limit=10)
        times.append((time.perf_counter() - t) * 1000)
    kb.close()
    print(f"queries right after a write the actor cannot read: p50 {np.percentile(times, 50):.2f} ms, "
          f"p95 {np.percentile(times, 95):.2f} ms ({len(times)} queries)")


if __name__ == "__main__":
    main()
