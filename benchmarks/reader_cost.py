"""What the reader costs an answer (issue 44's target: ``ask`` overhead after retrieval p50 <= 200 ms,
p95 <= 400 ms on 2 cores for the default top 6 passages; plain ``search`` pays nothing).

    .venv/bin/python benchmarks/reader_cost.py [--questions 120]

On the shop collection (the store ``evidex eval --cases`` builds, the default embedder, vectors
from the embedding cache) and the help-centre development questions (examples/eval/shop-dev),
each question is asked once to warm the caches every answer shares (the query vector, the quote
vectors: what a repeated question finds), then timed three ways, interleaved per question so
machine noise hits all three alike:

* ``search``: the answer's own search (``kb.search`` with the ranker and the decision, top 6);
* ``answer``: ``kb.answer`` (search, decision, reader, generation, verification, release);
* ``reader``: the reader alone on the spans it read for that question.

The overhead after retrieval is ``answer - search`` per question. Plain search (no ``evidence``)
never calls the reader: ``--check-search`` asserts it by counting reader calls.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

from answers_sets import SHOP_CASES, case_store, load
from evidex.answer import AnswerSettings
from evidex.embed import DEFAULT_EMBEDDER, get_reader
from evidex.kb import QUESTION_LIMITS

#: The reader on (it is off by default); its threshold does not change what it reads.
ON = AnswerSettings(reader=True)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def main() -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=120)
    args = ap.parse_args()
    qs = load("shop", "dev")
    questions = [q.text for q in qs.questions][: args.questions]
    reader = get_reader()
    calls: list[list[str]] = []
    score = reader.score

    def counted(question: str, spans: list[str]):
        calls.append(list(spans))
        return score(question, spans)

    reader.score = counted  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as folder:
        kb = case_store(SHOP_CASES, Path(folder) / "store.db", DEFAULT_EMBEDDER)
        actor = qs.actor
        for q in questions:  # warm: query and quote vectors into the caches
            kb.answer(actor, q, settings=ON)
        plain_before = len(calls)
        for q in questions:
            kb.search(actor, q, limit=6, limits=QUESTION_LIMITS)
        plain_calls = len(calls) - plain_before
        search, answer, alone, spans = [], [], [], []
        for q in questions:
            t = time.perf_counter()
            kb.search(actor, q, limit=6, limits=QUESTION_LIMITS, rerank=True, evidence=True)
            search.append(time.perf_counter() - t)
            before = len(calls)
            t = time.perf_counter()
            kb.answer(actor, q, settings=ON)
            answer.append(time.perf_counter() - t)
            read = calls[before:]
            spans.append(sum(len(r) for r in read))
            t = time.perf_counter()
            for r in read:
                score(q, r)
            alone.append(time.perf_counter() - t)
        kb.close()
    over = [a - s for a, s in zip(answer, search, strict=True)]
    out = {"questions": len(questions), "cpu": platform.processor() or platform.machine(),
           "plain_search_reader_calls": plain_calls,
           "spans_read_mean": round(statistics.mean(spans), 2),
           **{f"{name}_ms": {"p50": round(1000 * _pct(xs, 0.5), 1), "p95": round(1000 * _pct(xs, 0.95), 1)}
              for name, xs in (("search", search), ("answer", answer), ("overhead", over),
                               ("reader", alone))}}
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
