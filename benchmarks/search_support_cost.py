"""SciFact keyword search per query (ms) through ``KnowledgeBase.search`` at limits 10 and 50,
for the evidex tree on ``PYTHONPATH`` (run it once per tree, alternating):

    PYTHONPATH=<tree>/src .venv/bin/python benchmarks/search_support_cost.py TAG ROUNDS

Builds ``/tmp/evidex-search-cost-TAG.db`` once (english analyzer, whole abstracts, no
embedder). The first round runs in a fresh process (cold caches); later rounds are warm.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

from evidex import Actor, Document, KnowledgeBase

SCIFACT = "/work/shared/data/beir/scifact"


def main() -> None:
    tag, rounds = sys.argv[1], int(sys.argv[2])
    path = f"/tmp/evidex-search-cost-{tag}.db"
    if not os.path.exists(path):
        kb = KnowledgeBase.open(path, analyzer="english", embedder="none")
        with open(f"{SCIFACT}/corpus.jsonl") as f:
            docs = [Document(id=d["_id"], version="1", text=d["title"] + "\n\n" + d["text"],
                             tenant="t", groups=("g",), visibility="public")
                    for d in map(json.loads, f)]
        kb.ingest(docs, split="document")
        kb.close()
    kb = KnowledgeBase.open(path)
    with open(f"{SCIFACT}/queries.jsonl") as f:  # the first 8 words: the query contract's limit
        queries = [" ".join(json.loads(line)["text"].split()[:8]) for line in f][:300]
    try:
        actor = Actor("t", frozenset({"g"}), visibilities=frozenset({"public"}))
    except TypeError:  # trees before visibilities were an Actor argument
        actor = Actor("t", frozenset({"g"}))
    out: dict[int, list[float]] = {}
    for limit in (10, 50):
        out[limit] = []
        for _ in range(rounds):
            t = time.perf_counter()
            for q in queries:
                kb.search(actor, q, mode="keyword", limit=limit)
            out[limit].append((time.perf_counter() - t) / len(queries) * 1000)
    print(json.dumps({"tree": tag,
                      "first_round_ms": {k: round(v[0], 3) for k, v in out.items()},
                      "later_rounds_median_ms": {k: round(statistics.median(v[1:]), 3)
                                                 for k, v in out.items()}}))


if __name__ == "__main__":
    main()
