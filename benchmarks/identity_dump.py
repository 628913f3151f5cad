"""Identity dumps: every answer and every ranked list of a fixed workload, one JSON line each, so
two checkouts (before and after a refactoring) can be compared line by line with ``diff``.

    .venv/bin/python benchmarks/identity_dump.py --out DIR [--parts answers,hybrid,scifact]

* ``answers``: ``kb.answer`` (extractive) for every development question of the encyclopedia
  and shop sets (benchmarks/answers_sets.py): status, reason, text, citations, handoff, detail.
* ``hybrid``: on the same two stores, ``kb.search`` (hybrid, default fusion, k=10) and the
  answer's search (k=6, question limits, second-stage ranker) for every development question:
  the ranked (document, passage, score) lists, and the evidence level with the per-passage
  decision.
* ``scifact``: BEIR SciFact test queries on a keyword store (english analyzer), k=10 and k=100:
  ranked lists and scores; k=10 also with the evidence.

The vector leg's deadline is switched off, so a loaded machine cannot turn a hybrid search
into the keyword fallback in one run and not in the other. Files: ``DIR/<part>-<set>.jsonl``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import tempfile
from pathlib import Path
from typing import Any

from answers_sets import build, load
from evidex import Actor, KnowledgeBase
from evidex.evaluation import EVAL_LIMITS, corpus_documents, load_beir
from evidex.kb import QUESTION_LIMITS
from scifact_hybrid import SCIFACT

#: ``kb.search`` computes the evidence only when asked where it has the keyword (else always).
_ASK = {"evidence": True} if "evidence" in inspect.signature(KnowledgeBase.search).parameters else {}


def _hits(res: Any) -> list[list[Any]]:
    return [[h.document_id, h.passage, round(h.score, 9)] for h in res]


def _evidence(res: Any) -> dict[str, Any]:
    return {"evidence": res.evidence,
            "supported": [bool(p.supported) for p in res.support],
            "signals": res.signals}


def _answers(kb: KnowledgeBase, actor: Actor, questions: list[Any], out: Path) -> None:
    with out.open("w", encoding="utf-8") as f:
        for q in questions:
            a = kb.answer(actor, q.text)
            row = {"id": q.id, "status": a.status, "reason": a.reason, "text": a.text,
                   "citations": a.citations, "handoff": a.handoff, "detail": a.detail}
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def _hybrid(kb: KnowledgeBase, actor: Actor, questions: list[Any], out: Path) -> None:
    with out.open("w", encoding="utf-8") as f:
        for q in questions:
            plain = kb.search(actor, q.text, limit=10, limits=QUESTION_LIMITS)
            asked = kb.search(actor, q.text, limit=6, limits=QUESTION_LIMITS, rerank=True, **_ASK)
            row = {"id": q.id, "k10": _hits(plain), "answer_search": _hits(asked),
                   "answer_evidence": _evidence(asked)}
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def _scifact(out: Path) -> None:
    beir = load_beir(SCIFACT)
    tmp = Path(tempfile.mkdtemp(prefix="evidex-ident-"))
    kb = KnowledgeBase.open(tmp / "s.db", analyzer="english", embedder="none", max_limit=100,
                            query_limits=EVAL_LIMITS)
    kb.ingest(list(corpus_documents(beir)), split="document")
    kb.optimize()
    actor = Actor("eval", frozenset({"eval"}), visibilities=frozenset({"public", "internal"}))
    with out.open("w", encoding="utf-8") as f:
        for qid, text in beir.queries.items():
            k10 = kb.search(actor, text, limit=10, mode="keyword")
            k100 = kb.search(actor, text, limit=100, mode="keyword")
            ev = kb.search(actor, text, limit=10, mode="keyword", **_ASK)
            row = {"id": qid, "k10": _hits(k10), "k100": _hits(k100), "evidence": _evidence(ev)}
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    kb.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--parts", default="answers,hybrid,scifact")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    parts = set(args.parts.split(","))
    if parts & {"answers", "hybrid"}:
        for name in ("encyclopedia", "shop"):
            qset = load(name, "dev")
            kb = build(qset, "multilingual-e5-small-int8")
            kb.vector_timeout_ms = None
            questions = [q for q in qset.questions if q.split == "dev"]
            if "answers" in parts:
                _answers(kb, qset.actor, questions, args.out / f"answers-{name}.jsonl")
            if "hybrid" in parts:
                _hybrid(kb, qset.actor, questions, args.out / f"hybrid-{name}.jsonl")
            kb.close()
    if "scifact" in parts:
        _scifact(args.out / "scifact-keyword.jsonl")


if __name__ == "__main__":
    main()
