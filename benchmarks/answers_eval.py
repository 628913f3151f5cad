"""Answers end to end on one question set: cite the expected passage, or decline.

    .venv/bin/python benchmarks/answers_eval.py --set encyclopedia --split dev [--embedder ID]

Sets and splits: see benchmarks/answers_sets.py (development data only). For every question it
runs ``kb.answer`` (extractive) and reports, per kind and in total:

* answerable questions answered with a citation of an expected passage (any of the citations);
* out-of-collection questions declined (``ooc``; ``ooc_adversarial`` is reported apart);
* invalid citations: a released citation that does not resolve now, or whose
  ``sentence_start``/``sentence_end`` is not a span of its quote;
* citation precision: released sentences (three words or more) supported by the passage they
  cite, by the support check of the answer pipeline (``evidex.answer.supporting_span``), and
  quoted verbatim inside the cited span as the answer shows it (``evidex.decide.shown``:
  Markdown marks removed);
* answer span quoted: for questions with a known answer span, how often the answer text
  contains it;
* ``ask`` overhead: answer time minus the time of the same search (the answer's search with
  the ranker and the decision: what the answer does after it), p50 and p90 in ms; and answer
  time minus a plain search of the same question (ranking only, k=6: everything after
  retrieval, the decision included), p50 and p90.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections import defaultdict

from answers_sets import WORK, build, load
from evidex.answer import DISAGREE_TEXT, markers, sentences, supporting_span
from evidex.decide import shown
from evidex.kb import QUESTION_LIMITS


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", required=True)
    ap.add_argument("--split", choices=("dev", "test"), required=True)
    ap.add_argument("--embedder", default="multilingual-e5-small-int8")
    ap.add_argument("--limit", type=int, default=0, help="at most this many questions (0: all)")
    ap.add_argument("--failures", type=int, default=0, help="write this many failures per kind")
    args = ap.parse_args(argv)
    qset = load(args.set, args.split)
    kb = build(qset, args.embedder)
    actor = qset.actor
    questions = [q for q in qset.questions if q.split == args.split]
    if args.limit:
        questions = questions[: args.limit]
    per_kind: dict[str, list[bool]] = defaultdict(list)
    failures: dict[str, list[dict]] = defaultdict(list)
    invalid = released = supported = verbatim = 0
    span_total = span_hit = 0
    overhead: list[float] = []
    after_ranking: list[float] = []
    an = kb._analyzer
    for q in questions:
        t = time.perf_counter()
        kb.search(actor, q.text, limit=6, limits=QUESTION_LIMITS)
        t0 = time.perf_counter()
        kb.search(actor, q.text, limit=6, limits=QUESTION_LIMITS, rerank=True)
        t1 = time.perf_counter()
        ans = kb.answer(actor, q.text)
        t2 = time.perf_counter()
        overhead.append(((t2 - t1) - (t1 - t0)) * 1000)
        after_ranking.append(((t2 - t1) - (t0 - t)) * 1000)
        cited = {c["document_id"] for c in ans.citations}
        if ans.status == "answered":
            by_n = {c["n"]: c for c in ans.citations}
            for c in ans.citations:
                ok = kb.resolve(actor, {k: v for k, v in c.items()
                                        if k not in ("n", "sentence_start", "sentence_end")}).ok
                s, e = c.get("sentence_start"), c.get("sentence_end")
                if not ok or s is None or not (0 <= s < e <= len(c["quote"])):
                    invalid += 1
            for sent in sentences(ans.text):
                if sent == DISAGREE_TEXT or len(sent.split()) < 3:
                    continue
                released += 1
                refs = [n for n in markers(sent) if n in by_n]
                bare = sent
                for n in refs:
                    bare = bare.replace(f" [{n}]", "")
                if any(supporting_span(sent, by_n[n]["quote"], an.terms) for n in refs):
                    supported += 1
                # As the answer shows it: Markdown marks out, one line per source line.
                if any(bare in shown(by_n[n]["quote"][by_n[n]["sentence_start"]:by_n[n]["sentence_end"]])
                       for n in refs):
                    verbatim += 1
        if q.answerable:
            ok = ans.status == "answered" and bool(cited & q.expected)
            spans = [q.answers[d] for d in cited & q.expected if d in q.answers]
            if ok and spans:
                span_total += 1
                span_hit += any(sp in ans.text for sp in spans)
        else:
            ok = ans.status == "declined"
        per_kind[q.kind].append(ok)
        if not ok and len(failures[q.kind]) < args.failures:
            failures[q.kind].append({"question": q.text, "expected": sorted(q.expected),
                                     "status": ans.status, "reason": ans.reason,
                                     "cited": sorted(cited), "text": ans.text[:300]})
    answerable = [ok for k, v in per_kind.items() if not k.startswith("ooc") for ok in v]
    ooc = per_kind.get("ooc", [])
    rate = lambda v: round(sum(v) / len(v), 4) if v else None  # noqa: E731
    report = {
        "set": args.set, "split": args.split, "embedder": args.embedder,
        "questions": len(questions),
        "per_kind": {k: {"n": len(v), "ok": sum(v), "rate": rate(v)} for k, v in sorted(per_kind.items())},
        "answered_with_expected_citation": rate(answerable),
        "ooc_declined": rate(ooc),
        "released_sentences": released,
        "support_precision": round(supported / released, 4) if released else None,
        "verbatim_in_cited_span": round(verbatim / released, 4) if released else None,
        "invalid_citations": invalid,
        "answer_span_quoted": round(span_hit / span_total, 4) if span_total else None,
        "ask_overhead_ms_p50": round(statistics.median(overhead), 2) if overhead else None,
        "ask_overhead_ms_p90": (round(sorted(overhead)[int(0.9 * (len(overhead) - 1))], 2)
                                if overhead else None),
        "ask_after_ranking_ms_p50": (round(statistics.median(after_ranking), 2)
                                     if after_ranking else None),
        "ask_after_ranking_ms_p90": (round(sorted(after_ranking)[int(0.9 * (len(after_ranking) - 1))], 2)
                                     if after_ranking else None),
        "machine": f"{platform.node()} {platform.machine()}",
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    print(json.dumps(report, indent=2, ensure_ascii=False))
    if args.failures:
        path = WORK / f"failures-{args.set}-{args.split}.json"
        path.write_text(json.dumps(failures, indent=2, ensure_ascii=False), encoding="utf-8")
        print(f"failures: {path}", file=sys.stderr)
    kb.close()
    return report


if __name__ == "__main__":
    main()
