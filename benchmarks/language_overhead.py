"""Keyword-search latency of per-language analysis (``auto``) beside one analyzer per store.

    .venv/bin/python benchmarks/language_overhead.py [--work DIR] [--rounds 3]

Keyword-only stores (no vectors: the keyword leg alone is timed) of the same documents, one per
analyzer: SciFact (English; auto vs english), the mixed encyclopedia (auto vs exact and
english) and german-qa (auto vs german). Each query is searched in every store in turn, the
order rotating per query and round, after one warm-up pass; per store the p50 and p95 of whole
``KnowledgeBase.search`` calls (mode keyword, limit 10) and the p50 of the paired difference
auto - other. What auto adds per query: language identification (py3langid over the query),
one analysis per chosen language, one BM25 run per language part.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import qa_sets
from evidex import Actor
from evidex.evaluation import load_beir
from multilingual import _store
from scifact_hybrid import GERMAN, SCIFACT

ACTOR = Actor("eval", frozenset({"eval"}))


def collections() -> list[tuple[str, list[tuple[str, str, str | None]], list[str], tuple[str, ...]]]:
    """(name, documents, queries, analyzers compared with auto)."""
    out = []
    enc = qa_sets.load(qa_sets.ENCYCLOPEDIA)
    out.append(("encyclopedia[mixed]",
                [(p.id, f"{p.title}\n\n{p.text}", p.language) for p in enc.passages.values()],
                [q.text for q in enc.queries.values()][:300], ("exact", "english")))
    for name, folder, split, lang, other in (("scifact", SCIFACT, "test", "en", "english"),
                                             ("german-qa", GERMAN, "test", "de", "german")):
        beir = load_beir(folder, split)
        docs = [(i, f"{t}\n\n{x}", lang) for i, t, x in beir.corpus if (t + x).strip()]
        out.append((name, docs, list(beir.queries.values())[:300], (other,)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, default=Path("/tmp/evidex-language-overhead"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    for name, docs, queries, others in collections():
        names = ("auto", *others)
        kbs = {a: _store(args.work / f"{name}-{a}.db", docs, a, embedder="none") for a in names}
        for kb in kbs.values():
            for q in queries:  # warm caches and the language model
                kb.search(ACTOR, q, mode="keyword", limit=10)
        times: dict[str, list[float]] = {a: [] for a in names}
        for r in range(args.rounds):
            for i, q in enumerate(queries):
                shift = (i + r) % len(names)
                for a in names[shift:] + names[:shift]:
                    t = time.perf_counter()
                    kbs[a].search(ACTOR, q, mode="keyword", limit=10)
                    times[a].append((time.perf_counter() - t) * 1000)
        row: dict[str, object] = {"collection": name, "queries": len(queries), "rounds": args.rounds}
        for a, v in times.items():
            row[f"{a}_p50_ms"] = round(statistics.median(v), 3)
            row[f"{a}_p95_ms"] = round(sorted(v)[int(0.95 * len(v))], 3)
        for a in others:
            diffs = [x - y for x, y in zip(times["auto"], times[a], strict=True)]
            row[f"auto_minus_{a}_p50_ms"] = round(statistics.median(diffs), 3)
        print(json.dumps(row), flush=True)
        for kb in kbs.values():
            kb.close()


if __name__ == "__main__":
    main()
