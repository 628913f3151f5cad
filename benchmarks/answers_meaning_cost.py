"""What comparing the question with candidate sentences by meaning costs (``decide._meaning``),
on the shop collection as `make run` loads it (examples/shop), with the default embedder.

    .venv/bin/python benchmarks/answers_meaning_cost.py [--embedder multilingual-e5-small-int8]

* ingest: the time to embed every passage of the collection with an empty embedding cache, and
  the time it would add to embed every sentence that may be quoted (read with its title and
  heading path, as the decision embeds it) with an empty cache, i.e. precomputing at ingest;
* ask, lazily: for each question of examples/eval/cases.yaml, the answer's search (second-stage
  ranker, top 6) with an empty sentence cache ("cold": the candidate sentences of the top 3 are
  embedded), then again ("warm": read from the cache); the time spent in the sentence-vector
  call, p50 / p95 / max, and how many sentences were embedded.

Passages come from the persistent cache for the ask part (their cost is the ingest figure).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from evidex import Actor, KnowledgeBase
from evidex.decide import in_context
from evidex.decide._support import passage_support
from evidex.embed import EmbeddingCache, default_cache_path, get_embedder
from evidex.ingest import load_paths
from evidex.kb import QUESTION_LIMITS
from evidex.query import get_analyzer

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "examples" / "eval" / "cases.yaml"
CUSTOMER = Actor("acme", frozenset({"customers"}), visibilities=frozenset({"public"}))


def _shop(db: Path, embedder: str, cache: Path | EmbeddingCache) -> tuple[KnowledgeBase, float]:
    spec = yaml.safe_load(CASES.read_text(encoding="utf-8"))["collection"]["ingest"]
    kb = KnowledgeBase.open(db, embedder=embedder, embed_cache=cache)
    t0 = time.perf_counter()
    for entry in spec:
        meta = {k: v for k, v in entry.items() if k != "path"}
        loaded = load_paths([(CASES.parent / entry["path"]).resolve()], meta)
        kb.ingest(loaded.documents, split="heading")
    return kb, time.perf_counter() - t0


def _pct(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"p50": round(statistics.median(xs), 2), "p95": round(xs[int(0.95 * (len(xs) - 1))], 2),
            "max": round(xs[-1], 2)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedder", default="multilingual-e5-small-int8")
    args = ap.parse_args()
    e = get_embedder(args.embedder)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        kb, ingest_cold = _shop(work / "cold.db", args.embedder, work / "cold-cache.sqlite")
        analyze = get_analyzer(kb.analyzer).terms
        pids = [pid for pid, _ in kb.store.live_passages()]
        with kb.store.read() as view:
            rows = view.passages(pids)
            docs = view.documents({p.dkey for p in rows.values()})
            texts = [(p.text, (docs[p.dkey].title or "", *p.heading_path)) for p in rows.values()]
        sentences = [in_context(t[m.start:m.end], ctx) for t, ctx in texts
                     for m in passage_support(t, ctx, analyze, {}, similarity=None,
                                              cross_language=False, keyword=0.0).sentences]
        fresh = EmbeddingCache(work / "sentences.sqlite")
        t0 = time.perf_counter()
        fresh.embed(e.model_id, e.dimension, sentences, e.embed_passages)
        sentence_ingest = time.perf_counter() - t0
        kb.close()

        kb, _ = _shop(work / "ask.db", args.embedder, default_cache_path())
        spent: list[float] = []
        embedded: list[int] = []
        lazy = EmbeddingCache(work / "lazy.sqlite")

        def vectors(batch: list[str]) -> np.ndarray:
            t = time.perf_counter()
            before = lazy.misses
            out = lazy.embed(e.model_id, e.dimension, batch, e.embed_passages)
            spent.append((time.perf_counter() - t) * 1000)
            embedded.append(lazy.misses - before)
            return out

        kb.embed_passages = vectors  # type: ignore[method-assign]
        questions = [c["question"] for c in yaml.safe_load(CASES.read_text(encoding="utf-8"))["cases"]]
        rounds = {}
        for name in ("cold", "warm"):
            spent.clear()
            embedded.clear()
            for q in questions:
                kb.search(CUSTOMER, q, limit=6, limits=QUESTION_LIMITS, rerank=True)
            rounds[name] = {"ms": _pct(spent), "sentences_embedded": sum(embedded),
                            "calls": len(spent)}
        kb.close()
    print(json.dumps({
        "embedder": args.embedder, "passages": len(texts), "quotable_sentences": len(sentences),
        "ingest_seconds_passages_cold": round(ingest_cold, 1),
        "ingest_seconds_all_sentences_cold": round(sentence_ingest, 1),
        "questions": len(questions), "ask_sentence_vectors": rounds,
    }, indent=1))


if __name__ == "__main__":
    main()
