"""Answers on SciFact plus off-topic questions: cite an expected passage, or decline.

    .venv/bin/python benchmarks/scifact_answers.py [--embedder multilingual-e5-small]

The question set is written to benchmarks/.work/scifact-qa.jsonl: the 300 SciFact test claims
(answerable; expected = their relevant documents, passage 1 since each abstract is one passage)
and the held-out half of benchmarks/data/off-topic-questions.txt (unanswerable). It then runs
`evaluate_qa` (the code behind `evidex eval --qa`) with the extractive generator, and measures
the answer latency on top of retrieval (answer time minus the time of the same search).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

from evidex import Actor
from evidex.evaluation import evaluate_qa, load_beir
from evidex.kb import QUESTION_LIMITS
from scifact_hybrid import OFF_TOPIC, SCIFACT, build

WORK = Path(__file__).resolve().parent / ".work"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedder", default="multilingual-e5-small")
    args = ap.parse_args()
    WORK.mkdir(exist_ok=True)
    beir = load_beir(SCIFACT)
    off = [ln.strip() for ln in OFF_TOPIC.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    qa_path = WORK / "scifact-qa.jsonl"
    with qa_path.open("w", encoding="utf-8") as fh:
        for qid, text in beir.queries.items():
            expected = [{"document_id": d, "passage": 1} for d, rel in beir.qrels[qid].items() if rel > 0]
            fh.write(json.dumps({"question": text, "expected": expected}) + "\n")
        for q in off[60:]:
            fh.write(json.dumps({"question": q, "unanswerable": True}) + "\n")
    tmp = Path(tempfile.mkdtemp(prefix="evidex-answers-"))
    kb, _, _ = build(SCIFACT, args.embedder, "english", tmp)
    actor = Actor("eval", frozenset({"eval"}), visibilities=frozenset({"public", "internal"}))
    result = evaluate_qa(kb, qa_path, actor, generator="extractive")
    extra = []
    for item in [json.loads(line) for line in qa_path.read_text().splitlines()][:100]:
        q = item["question"]
        t0 = time.perf_counter()
        kb.search(actor, q, limit=6, mode="hybrid", limits=QUESTION_LIMITS)
        t1 = time.perf_counter()
        kb.answer(actor, q)
        t2 = time.perf_counter()
        extra.append(((t2 - t1) - (t1 - t0)) * 1000)
    result["answer_overhead_ms_p50"] = round(statistics.median(extra), 2)
    result["machine"] = f"{platform.node()} {platform.machine()}"
    result["date"] = time.strftime("%Y-%m-%d %H:%M")
    result["embedder"] = args.embedder
    result.pop("failures", None)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
