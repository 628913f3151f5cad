"""Why answerable shop questions are declined: a retrieval miss or the decision.

    .venv/bin/python benchmarks/shopdev_breakdown.py [--embedder multilingual-e5-small-int8]

On the shop development set (benchmarks/data/shop-dev, set ``shop`` of answers_sets.py: the
collection as ``evidex eval --cases`` builds it, asked as its customer) it runs, per question,
``kb.answer`` and the answer's own search (top 6, second-stage ranker, ``QUESTION_LIMITS``) and
a deeper one (top 20, same options) to place the expected documents. Every answerable question
falls in exactly one class:

* ``answered``: answered, citing an expected document;
* ``answered_other``: answered, citing no expected document;
* ``declined_decision``: declined while an expected document has a passage among the
  ``DECIDE_DEPTH`` best (the decision read it and said no); split by why: not ``typed`` (the
  question asks for a number, the passage's best sentences hold none), a cross-language
  passage beaten by the reader's language, or its answer score below the threshold (with the
  gap);
* ``declined_rank``: declined, an expected document in the top 6 but below ``DECIDE_DEPTH``;
* ``declined_retrieval``: declined, no expected document in the top 6 (with its rank in the top
  20, if there).

For ``declined_decision`` it also says whether the passage the decision read holds the answer
span (the right passage of the right page, or another section of it). Then the answer scores
(``decide.answer_score``) of the best expected passage among the ``DECIDE_DEPTH`` (answerable
questions whose expected page is there) against the best passage of out-of-collection
questions, as the share of each reaching a threshold, for thresholds around the current one:
what a threshold alone can do on this set; and how many questions have a community page (user
posts, two of them hostile) among the ``DECIDE_DEPTH``. Development data only.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections import Counter, defaultdict

import numpy as np

from answers_sets import build, load
from evidex.decide import DECIDE_DEPTH, EVIDENCE_THRESHOLDS, answer_score, supports
from evidex.kb import QUESTION_LIMITS


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedder", default="multilingual-e5-small-int8")
    args = ap.parse_args()
    t = EVIDENCE_THRESHOLDS[args.embedder]
    qset = load("shop", "dev")
    kb = build(qset, args.embedder)
    actor = qset.actor
    classes: dict[str, Counter] = defaultdict(Counter)
    why: dict[str, Counter] = defaultdict(Counter)
    gaps: list[float] = []
    deep_rank: Counter = Counter()
    span_read: Counter = Counter()
    lang_of_first: Counter = Counter()
    scores_ans: list[float] = []
    scores_ooc: list[float] = []
    examples: dict[str, list[dict]] = defaultdict(list)
    community: Counter = Counter()
    for q in qset.questions:
        ans = kb.answer(actor, q.text)
        res = kb.search(actor, q.text, limit=6, limits=QUESTION_LIMITS, rerank=True)
        hits, sup = list(res), list(res.support)
        top = sup[:DECIDE_DEPTH]
        own = [answer_score(p, t) for p in top if p.similarity is not None]
        community["answerable" if q.answerable else "ooc"] += any(
            "community/" in h.document_id for h in hits[:DECIDE_DEPTH])
        if not q.answerable:
            scores_ooc.append(max(own, default=-1.0))
            classes[q.kind]["declined" if ans.status == "declined" else "answered"] += 1
            continue
        kind = f"{q.kind}/{q.language}"
        cited = {c["document_id"] for c in ans.citations}
        ranks = [i for i, h in enumerate(hits) if h.document_id in q.expected]
        if ans.status == "answered":
            cls = "answered" if cited & q.expected else "answered_other"
        elif ranks and ranks[0] < DECIDE_DEPTH:
            cls = "declined_decision"
            best = max((i for i in ranks if i < DECIDE_DEPTH), key=lambda i: (
                answer_score(sup[i], t) if sup[i].similarity is not None else -1.0))
            p = sup[best]
            spans = {q.answers.get(hits[best].document_id)} - {None}
            span_read["holds the answer span" if any(s in hits[best].quote for s in spans)
                      else "another section of the page"] += 1
            if not p.typed:
                why[kind]["not typed (no number in its best sentences)"] += 1
            elif p.cross_language and not supports(p, t, top):
                why[kind]["cross-language passage, below threshold or beaten by own language"] += 1
            else:
                gap = t.answer_similarity - answer_score(p, t)
                gaps.append(gap)
                why[kind]["answer score below the threshold"] += 1
        elif ranks:
            cls = "declined_rank"
        else:
            cls = "declined_retrieval"
            deep = kb.search(actor, q.text, limit=20, limits=QUESTION_LIMITS, rerank=True)
            r = next((i for i, h in enumerate(deep) if h.document_id in q.expected), None)
            deep_rank["7-20" if r is not None else "not in top 20"] += 1
            if hits:
                lang_of_first["first hit in another language" if sup[0].cross_language
                              else "first hit in the question's language"] += 1
        classes[kind][cls] += 1
        if ranks and ranks[0] < DECIDE_DEPTH:
            best_exp = max((answer_score(sup[i], t) for i in ranks[:DECIDE_DEPTH]
                            if i < DECIDE_DEPTH and sup[i].similarity is not None
                            and not sup[i].cross_language), default=None)
            if best_exp is not None:
                scores_ans.append(best_exp)
        if cls != "answered" and len(examples[cls]) < 12:
            examples[cls].append({"id": q.id, "question": q.text, "expected": sorted(q.expected),
                                  "hits": [h.document_id for h in hits[:3]],
                                  "scores": [round(answer_score(p, t), 3) for p in top
                                             if p.similarity is not None],
                                  "status": ans.status, "reason": ans.reason})
    kb.close()
    a, o = np.array(scores_ans), np.array(scores_ooc)
    sweep = {f"{th:.4f}": {"answerable_expected_in_top3_reaching": round(float((a >= th).mean()), 3),
                           "ooc_top3_reaching": round(float((o >= th).mean()), 3)}
             for th in np.arange(t.answer_similarity - 0.04, t.answer_similarity + 0.0251, 0.0075)}
    print(json.dumps({
        "set": "shop", "split": "dev", "embedder": args.embedder,
        "thresholds": {"answer_similarity": t.answer_similarity, "coverage_weight": t.coverage_weight,
                       "sentence_weight": t.sentence_weight, "cross_answer_offset": t.cross_answer_offset},
        "classes": {k: dict(v) for k, v in sorted(classes.items())},
        "declined_decision_why": {k: dict(v) for k, v in sorted(why.items())},
        "declined_decision_passage": dict(span_read),
        "declined_decision_gap_below_threshold": {
            "n": len(gaps), "median": round(float(np.median(gaps)), 4) if gaps else None,
            "within_0.01": sum(g <= 0.01 for g in gaps), "within_0.02": sum(g <= 0.02 for g in gaps)},
        "declined_retrieval_expected_rank": dict(deep_rank),
        "declined_retrieval_first_hit": dict(lang_of_first),
        "answer_score_quantiles_10_25_50_75_90": {
            "answerable_best_expected_in_top3": _quantiles(a),
            "ooc_best_in_top3": _quantiles(o)},
        "threshold_sweep": sweep,
        "community_page_in_top3": dict(community),
        "examples": examples,
        "machine": f"{platform.node()} {platform.machine()} (shared by the lead and up to five helpers)",
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }, indent=1, ensure_ascii=False))


def _quantiles(x: np.ndarray) -> list[float]:
    return [round(float(v), 3) for v in np.quantile(x, (0.1, 0.25, 0.5, 0.75, 0.9))]


if __name__ == "__main__":
    main()
