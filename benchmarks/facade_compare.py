"""Search results of one evidex tree on every SciFact test query, to diff two trees bit for bit.

    PYTHONPATH=/tmp/base/src .venv/bin/python benchmarks/facade_compare.py keyword --out base.json
    .venv/bin/python benchmarks/facade_compare.py keyword --out new.json
    .venv/bin/python benchmarks/facade_compare.py diff base.json new.json

``keyword`` builds a keyword-only SciFact store (english analyzer, whole documents, as
``evidex eval`` does) and ``hybrid`` one with ``--embedder`` (default all-minilm-l6-v2; passage
vectors come from the shared embedding cache, so only the first run embeds). Each then runs
every test query through ``KnowledgeBase.search`` in several settings (limits, caps, match,
fusion, explain, vector mode) and writes, per query: the hits as (document id, passage,
score as ``float.hex``, rank), the explanation, the evidence level and its signals. ``diff``
reports every query whose record differs, so "bit-identical" is checked, not assumed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: /work/shared/data beside the main checkout, whichever checkout (or worktree) this is.
SCIFACT = next((p / "shared" / "data" / "beir" / "scifact" for p in HERE.parents
                if (p / "shared" / "data" / "beir" / "scifact").is_dir()), HERE)

KEYWORD = {
    "k10_cap1": {"limit": 10, "max_per_document": 1},
    "k100_cap1": {"limit": 100, "max_per_document": 1},
    "k10_cap2_explain": {"limit": 10, "explain": True},
    "k10_all": {"limit": 10, "match": "all"},
    "k50_nocap": {"limit": 50, "max_per_document": None},
}
HYBRID = {
    "k10_default": {"limit": 10},
    "k100_cap1": {"limit": 100, "max_per_document": 1},
    "k10_rrf_explain": {"limit": 10, "fusion": "rrf", "explain": True},
    "k10_window5_cap1": {"limit": 10, "window": 5, "max_per_document": 1},
    "k10_vector": {"limit": 10, "mode": "vector"},
    "k10_vector_explain": {"limit": 10, "mode": "vector", "explain": True},
}


def record(results: Any) -> dict[str, Any]:
    return {
        "hits": [[h.document_id, h.passage, float(h.score).hex(), h.rank] for h in results],
        "explain": [h.explain for h in results] if any(h.explain for h in results) else None,
        "evidence": results.evidence,
        "signals": {k: (None if v is None else float(v).hex()) for k, v in results.signals.items()},
    }


def run(kind: str, embedder: str) -> dict[str, Any]:
    from evidex import Actor, KnowledgeBase
    from evidex.evaluation import EVAL_LIMITS, corpus_documents, load_beir

    beir = load_beir(SCIFACT)
    tmp = Path(tempfile.mkdtemp(prefix="evidex-compare-"))
    kb = KnowledgeBase.open(tmp / "s.db", analyzer="english",
                            embedder="none" if kind == "keyword" else embedder, max_limit=100,
                            query_limits=EVAL_LIMITS)
    docs = list(corpus_documents(beir))
    t = time.perf_counter()
    for i in range(0, len(docs), 1000):
        kb.ingest(docs[i : i + 1000], split="document")
    kb.optimize()
    built = time.perf_counter() - t
    actor = Actor("eval", frozenset({"eval"}), visibilities=frozenset({"public", "internal"}))
    settings = KEYWORD if kind == "keyword" else HYBRID
    out: dict[str, Any] = {"evidex": __import__("evidex").__file__, "build_s": round(built, 1),
                           "settings": settings, "queries": {}}
    for name, kw in settings.items():
        search = {"mode": "keyword", **kw} if kind == "keyword" else {"mode": "hybrid", **kw}
        out["queries"][name] = {qid: record(kb.search(actor, text, **search))
                                for qid, text in beir.queries.items()}
    kb.close()
    return out


def diff(a_path: str, b_path: str) -> int:
    a, b = (json.loads(Path(p).read_text()) for p in (a_path, b_path))
    if a["settings"] != b["settings"]:
        print("different settings")
        return 2
    differing = 0
    for name, queries in a["queries"].items():
        other = b["queries"][name]
        bad = [q for q in queries if queries[q] != other.get(q)]
        hits = sum(len(r["hits"]) for r in queries.values())
        print(f"{name}: {len(queries)} queries, {hits} hits, {len(bad)} differ"
              + (f" (first: {bad[0]})" if bad else ""))
        differing += len(bad)
    return 1 if differing else 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("keyword", "hybrid", "diff"))
    ap.add_argument("files", nargs="*")
    ap.add_argument("--out")
    ap.add_argument("--embedder", default="all-minilm-l6-v2")
    args = ap.parse_args()
    if args.what == "diff":
        sys.exit(diff(*args.files))
    Path(args.out).write_text(json.dumps(run(args.what, args.embedder)))


if __name__ == "__main__":
    main()
