"""Answers of two checkouts side by side on one question set, alternating per question.

    .venv/bin/python benchmarks/answers_compare.py --set encyclopedia --split test \
        --old /tmp/base-answers/src [--new src] [--embedder multilingual-e5-small-int8]

Each checkout runs in its own process (``PYTHONPATH=<src>``, its own stores under
``benchmarks/.work/answers/<label>/``, since the checkouts may split documents differently), and
the parent hands every question to the old and the new process in turn (which goes first
alternates), so both see the same machine load. Each answer comes back as its status, text and
citations; the parent scores both with the same rules (this checkout's code):

* answerable questions answered with a citation of an expected passage;
* out-of-collection questions declined (``ooc``; ``ooc_adversarial`` apart);
* invalid citations released: a citation that does not resolve now (checked by the process that
  released it), or whose ``sentence_start``/``sentence_end`` (when given) is no span of its quote;
* citation precision: released sentences (three words or more) supported by a passage they cite
  (``evidex.answer.supporting_span``);
* ``ask`` overhead: answer time minus the time of the answer's own search, p50 in ms; and the
  search's own time (p50), and that of the first search of each question (p50, p95), which
  embeds what is not cached yet (the question; with the sentence decision, the candidate
  sentences).

Test splits are for reporting only: nothing here feeds a threshold.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(set_name: str, split: str, embedder: str) -> None:
    """Answer the questions whose indices arrive on stdin, one JSON line each on stdout."""
    from answers_sets import build, load
    from evidex.kb import QUESTION_LIMITS

    qset = load(set_name, split)
    questions = [q for q in qset.questions if q.split == split]
    kb = build(qset, embedder)
    actor = qset.actor
    rerank = "rerank" in inspect.signature(kb.search).parameters
    extra = {"rerank": True} if rerank else {}
    import evidex

    print(json.dumps({"ready": len(questions), "evidex": evidex.__file__}), flush=True)
    for line in sys.stdin:
        q = questions[int(line)]
        # First: the question's embedding and (new decision) its candidate sentences' vectors
        # when not cached yet, which the answer's own search then reuses.
        tf = time.perf_counter()
        kb.search(actor, q.text, limit=6, limits=QUESTION_LIMITS, **extra)
        t0 = time.perf_counter()
        kb.search(actor, q.text, limit=6, limits=QUESTION_LIMITS, **extra)
        t1 = time.perf_counter()
        ans = kb.answer(actor, q.text)
        t2 = time.perf_counter()
        cites = []
        for c in ans.citations:
            ref = {k: v for k, v in c.items() if k not in ("n", "sentence_start", "sentence_end")}
            cites.append({"n": c["n"], "document_id": c["document_id"], "quote": c["quote"],
                          "sentence_start": c.get("sentence_start"),
                          "sentence_end": c.get("sentence_end"),
                          "resolves": kb.resolve(actor, ref).ok})
        print(json.dumps({"status": ans.status, "reason": ans.reason, "text": ans.text,
                          "citations": cites, "overhead_ms": ((t2 - t1) - (t1 - t0)) * 1000,
                          "search_ms": (t1 - t0) * 1000, "first_search_ms": (t0 - tf) * 1000}),
              flush=True)
    kb.close()


class Side:
    def __init__(self, label: str, src: str, args: argparse.Namespace) -> None:
        env = dict(os.environ, PYTHONPATH=f"{Path(src).resolve()}{os.pathsep}{HERE}",
                   EVIDEX_ANSWERS_WORK=str(HERE / ".work" / "answers" / label))
        self.label = label
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--child", "--set", args.set, "--split", args.split,
             "--embedder", args.embedder], env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        hello = json.loads(self.proc.stdout.readline())  # type: ignore[union-attr]
        self.ready, self.evidex = hello["ready"], hello["evidex"]

    def ask(self, i: int) -> dict:
        self.proc.stdin.write(f"{i}\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        return json.loads(self.proc.stdout.readline())  # type: ignore[union-attr]

    def close(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        self.proc.wait()


def score(questions: list, answers: list[dict]) -> dict:
    from evidex import KnowledgeBase
    from evidex.answer import DISAGREE_TEXT, markers, sentences, supporting_span

    terms_of = KnowledgeBase.open(":memory:", analyzer="exact")._analyzer.terms
    per_kind: dict[str, list[bool]] = defaultdict(list)
    invalid = released = supported = 0
    for q, a in zip(questions, answers, strict=True):
        cited = {c["document_id"] for c in a["citations"]}
        if a["status"] == "answered":
            by_n = {c["n"]: c for c in a["citations"]}
            for c in a["citations"]:
                s, e = c["sentence_start"], c["sentence_end"]
                if not c["resolves"] or (s is not None and not (0 <= s < e <= len(c["quote"]))):
                    invalid += 1
            for sent in sentences(a["text"]):
                if sent == DISAGREE_TEXT or len(sent.split()) < 3:
                    continue
                released += 1
                refs = [n for n in markers(sent) if n in by_n]
                supported += any(supporting_span(sent, by_n[n]["quote"], terms_of) for n in refs)
        if q.answerable:
            ok = a["status"] == "answered" and bool(cited & q.expected)
        else:
            ok = a["status"] == "declined"
        per_kind[q.kind].append(ok)
    rate = lambda v: round(sum(v) / len(v), 4) if v else None  # noqa: E731
    answerable = [ok for k, v in per_kind.items() if not k.startswith("ooc") for ok in v]
    return {
        "per_kind": {k: f"{sum(v)}/{len(v)}" for k, v in sorted(per_kind.items())},
        "answered_with_expected_citation": rate(answerable),
        "answerable": f"{sum(answerable)}/{len(answerable)}",
        "ooc_declined": rate(per_kind.get("ooc", [])),
        "invalid_citations": invalid,
        "released_sentences": released,
        "support_precision": round(supported / released, 4) if released else None,
        "ask_overhead_ms_p50": round(statistics.median(a["overhead_ms"] for a in answers), 2),
        "search_ms_p50": round(statistics.median(a["search_ms"] for a in answers), 2),
        "first_search_ms_p50": round(statistics.median(a["first_search_ms"] for a in answers), 2),
        "first_search_ms_p95": round(statistics.quantiles(
            [a["first_search_ms"] for a in answers], n=20)[-1], 2) if len(answers) > 1 else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", required=True)
    ap.add_argument("--split", choices=("dev", "test"), required=True)
    ap.add_argument("--embedder", default="multilingual-e5-small-int8")
    ap.add_argument("--old", help="src/ of the old checkout")
    ap.add_argument("--new", default=str(HERE.parent / "src"), help="src/ of the new checkout")
    ap.add_argument("--out", help="also write every answer of both sides here (JSON)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.set, args.split, args.embedder)
        return
    if not args.old:
        ap.error("--old is required")
    from answers_sets import load

    questions = [q for q in load(args.set, args.split).questions if q.split == args.split]
    sides = [Side("old", args.old, args), Side("new", args.new, args)]
    assert all(s.ready == len(questions) for s in sides)
    answers: dict[str, list[dict]] = {"old": [], "new": []}
    t0 = time.time()
    for i in range(len(questions)):
        for s in sides if i % 2 == 0 else sides[::-1]:
            answers[s.label].append(s.ask(i))
    for s in sides:
        s.close()
    report = {"set": args.set, "split": args.split, "embedder": args.embedder,
              "questions": len(questions), "seconds": round(time.time() - t0),
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "old": {"evidex": sides[0].evidex, **score(questions, answers["old"])},
              "new": {"evidex": sides[1].evidex, **score(questions, answers["new"])}}
    print(json.dumps(report, indent=2, ensure_ascii=False))
    if args.out:
        Path(args.out).write_text(json.dumps({"report": report, "questions": [q.text for q in questions],
                                              "answers": answers}, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
