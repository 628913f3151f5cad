"""SciFact keyword quality and speed, side by side with bm25s on the same tokens, in one run.

    .venv/bin/python benchmarks/scifact_keyword.py [--beir ../shared/data/beir/scifact] [--rounds 3]

Quality: nDCG@10 / Recall@100 / MRR@10 through `evidex.evaluation` (the same code as
`evidex eval`) for the english and exact analyzers.

Speed, measured in the same process, interleaved round by round so machine noise hits both:
* bm25s (global statistics, Lucene idf, k1=1.2, b=0.75) indexed on evidex's english-analyzer
  tokens, queried one query at a time (k=10 and k=100) and as one batch;
* evidex's ranking core on the same tokens: permission-exact BM25 (statistics summed over the
  actor's signatures, postings masked per query, MaxScore pruning for the window k with one
  passage per document, as `search` ranks) plus selection with deterministic ties, k=10 and
  k=100, one query at a time;
* evidex's full `KnowledgeBase.search` (query parsing, snapshot, ranking, citation data), k=10
  and k=100: a plain search, which ranks only; and k=10 with ``evidence=True``, which also runs
  the answer decision over the best passages (``evidex.decide``).
Both engines return identical top-10 document lists for most queries; the count is reported.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import bm25s
import numpy as np

from evidex import Actor, KnowledgeBase
from evidex.evaluation import EVAL_LIMITS, corpus_documents, evaluate_beir, load_beir
from evidex.model import Filters
from evidex.query import words
from evidex.retrieve import access, keyword_candidates, select_top

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--beir", type=Path, default=DEFAULT)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    report: dict[str, object] = {
        "machine": f"{platform.node()} {platform.machine()}",
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    for analyzer in ("english", "exact"):
        report[f"quality_{analyzer}"] = evaluate_beir(args.beir, analyzer=analyzer)

    beir = load_beir(args.beir)
    tmp = tempfile.mkdtemp(prefix="evidex-bench-")
    kb = KnowledgeBase.open(Path(tmp) / "s.db", analyzer="english", embedder="none", max_limit=100,
                            query_limits=EVAL_LIMITS)
    docs = list(corpus_documents(beir))
    kb.ingest(docs, split="document")
    kb.optimize()
    an = kb._analyzer
    actor = Actor("eval", frozenset({"eval"}), visibilities=frozenset({"public", "internal"}))
    texts = list(beir.queries.values())
    q_terms = [an.query_terms(words(q)) for q in texts]

    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    retriever.index([an.terms(d.text) for d in docs], show_progress=False)
    vocab = retriever.vocab_dict
    bm_q = [[t for t in q if t in vocab] for q in q_terms]
    bm_ids = [d.id for d in docs]

    def bm25s_single(k: int) -> tuple[float, list[list[str]]]:
        out = []
        t = time.perf_counter()
        for q in bm_q:
            idx, _ = retriever.retrieve([q], k=k, show_progress=False)
            out.append(idx[0])
        dt = time.perf_counter() - t
        return len(bm_q) / dt, [[bm_ids[i] for i in r] for r in out]

    def bm25s_batch(k: int) -> float:
        t = time.perf_counter()
        retriever.retrieve(bm_q, k=k, show_progress=False, n_threads=1)
        return len(bm_q) / (time.perf_counter() - t)

    flt = Filters()

    def core(k: int) -> tuple[float, list[list[str]]]:
        out = []
        bm = kb._bm25
        t = time.perf_counter()
        with kb.store.read() as view:
            for terms in q_terms:
                # As `search` ranks: the actor's access worked out once per search, the window
                # (k, one passage per document) lets BM25 prune.
                cand = keyword_candidates(view, bm, access(view, actor, flt), terms, "any", k, 1)
                # As `search` selects (`hits_from`): document keys and numbers by passage id.
                sel = select_top(cand.scores, view.dkey, view.number, k, 1, view.doc_ids, cand.pids)
                out.append(cand.pids.take(sel))  # bm25s's side keeps its arrays as well
            dt = time.perf_counter() - t
            keys = [view.dkey.take(p).tolist() for p in out]
            names = view.doc_ids({d for r in keys for d in r})
        return len(q_terms) / dt, [[names[d] for d in r] for r in keys]

    def full(k: int, **ask: bool) -> float:
        t = time.perf_counter()
        for q in texts:
            kb.search(actor, q, limit=k, max_per_document=1, mode="keyword", **ask)
        return len(texts) / (time.perf_counter() - t)

    # Warm-up: the first touch of each term fills evidex's weighted-postings cache; bm25s
    # computed its weights at index time. Cold figures are reported separately below.
    kb2 = KnowledgeBase.open(Path(tmp) / "s.db", max_limit=100, query_limits=EVAL_LIMITS)
    t = time.perf_counter()
    with kb2.store.read() as view:
        for terms in q_terms:
            cand = keyword_candidates(view, kb2._bm25, access(view, actor, flt), terms, "any", 10, 1)
            select_top(cand.scores, view.dkey, view.number, 10, 1, view.doc_ids, cand.pids)
    report["evidex_core_cold_qps_k10"] = round(len(q_terms) / (time.perf_counter() - t))
    kb2.close()

    rounds: dict[str, list[float]] = {}
    same = 0
    for _ in range(args.rounds):
        for k in (10, 100):
            qps, bm_lists = bm25s_single(k)
            rounds.setdefault(f"bm25s_single_qps_k{k}", []).append(qps)
            qps, ev_lists = core(k)
            rounds.setdefault(f"evidex_core_qps_k{k}", []).append(qps)
            if k == 10:
                same = sum(a == b for a, b in zip(bm_lists, ev_lists, strict=True))
            rounds.setdefault(f"bm25s_batch_qps_k{k}", []).append(bm25s_batch(k))
        rounds.setdefault("evidex_search_qps_k10", []).append(full(10))
        rounds.setdefault("evidex_search_qps_k100", []).append(full(100))
        rounds.setdefault("evidex_search_with_evidence_qps_k10", []).append(full(10, evidence=True))
    for key, vals in rounds.items():
        report[key] = round(float(np.median(vals)))
    report["identical_top10_lists_vs_bm25s"] = f"{same}/{len(q_terms)}"
    report["evidex_search_vs_bm25s_single_k10"] = round(
        report["evidex_search_qps_k10"] / report["bm25s_single_qps_k10"], 2)  # type: ignore[operator]
    report["rounds"] = args.rounds
    kb.close()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
