"""The second-stage ranker's effect on search: the same searches with and without it.

    .venv/bin/python benchmarks/answers_ranker.py --set scifact --split test [--embedder ID]

For every answerable question of the set (benchmarks/answers_sets.py) it runs the default
hybrid search for 10 hits with ``rerank=False`` and ``rerank=True``, alternating per question
(the machine is shared and noisy), and reports nDCG@10 (binary relevance), recall@10, MRR@10
and hit@1 per kind and overall, with the search latency p50 of each.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections import defaultdict

from answers_sets import build, load
from evidex.kb import QUESTION_LIMITS


def scores(ranked: list[str], relevant: frozenset[str]) -> dict[str, float]:
    gains = [1.0 if d in relevant else 0.0 for d in ranked[:10]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    first = next((i for i, g in enumerate(gains) if g), None)
    return {"ndcg@10": dcg / ideal if ideal else 0.0,
            "recall@10": sum(gains) / len(relevant) if relevant else 0.0,
            "mrr@10": 1 / (first + 1) if first is not None else 0.0,
            "hit@1": gains[0] if gains else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", required=True)
    ap.add_argument("--split", choices=("dev", "test"), required=True)
    ap.add_argument("--embedder", default="multilingual-e5-small-int8")
    args = ap.parse_args()
    qset = load(args.set, args.split)
    kb = build(qset, args.embedder)
    per: dict[tuple[bool, str], list[dict[str, float]]] = defaultdict(list)
    times: dict[bool, list[float]] = defaultdict(list)
    questions = [q for q in qset.questions if q.split == args.split and q.answerable]
    for i, q in enumerate(questions):
        for rerank in ((False, True) if i % 2 == 0 else (True, False)):
            t = time.perf_counter()
            hits = kb.search(qset.actor, q.text, limit=10, limits=QUESTION_LIMITS, rerank=rerank,
                             max_per_document=1)
            times[rerank].append((time.perf_counter() - t) * 1000)
            s = scores([h.document_id for h in hits], q.expected)
            per[(rerank, q.kind)].append(s)
            per[(rerank, "all")].append(s)
    out = {"set": args.set, "split": args.split, "embedder": args.embedder, "questions": len(questions),
           "date": time.strftime("%Y-%m-%d %H:%M")}
    for rerank in (False, True):
        name = "ranker" if rerank else "fused"
        out[name] = {kind: {m: round(statistics.mean(s[m] for s in v), 4) for m in v[0]}
                     for (r, kind), v in sorted(per.items()) if r == rerank}
        out[name]["search_ms_p50"] = round(statistics.median(times[rerank]), 2)
    print(json.dumps(out, indent=2))
    kb.close()


if __name__ == "__main__":
    main()
