"""Which fusion should be the default? nDCG@10 / Recall@100 / MRR@10 of RRF and convex
combinations (alpha 0.3-0.6) for each embedder, on SciFact (english analyzer) and on the German
question set (exact and german analyzers).

    .venv/bin/python benchmarks/fusion_sweep.py [--embedders multilingual-e5-small,all-minilm-l6-v2]

Corpus vectors come from the persistent embedding cache (scifact_hybrid.py fills it); prints one
JSON line per (embedder, collection).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from scifact_hybrid import GERMAN, SCIFACT, build, quality

ALPHAS = (0.3, 0.4, 0.5, 0.6)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedders", default="multilingual-e5-small,all-minilm-l6-v2")
    args = ap.parse_args()
    for emb in args.embedders.split(","):
        tmp = Path(tempfile.mkdtemp(prefix="evidex-fusion-sweep-"))
        for name, folder, analyzer in (("scifact", SCIFACT, "english"), ("german", GERMAN, "exact"),
                                       ("german", GERMAN, "german")):
            kb, beir, _ = build(folder, emb, analyzer, tmp)
            runs = {"rrf": quality(kb, beir, mode="hybrid", fusion="rrf")}
            for a in ALPHAS:
                runs[f"convex_{a}"] = quality(kb, beir, mode="hybrid", fusion="convex", alpha=a)
            kb.close()
            print(json.dumps({"embedder": emb, "collection": name, "analyzer": analyzer,
                              **{k: {m: v[m] for m in ("ndcg@10", "recall@100", "mrr@10")}
                                 for k, v in runs.items()}}), flush=True)


if __name__ == "__main__":
    main()
