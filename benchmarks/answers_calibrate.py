"""Calibrate the answer decision of one embedding model on development data of several kinds.

    .venv/bin/python benchmarks/answers_calibrate.py [--embedder multilingual-e5-small-int8]

For the dev split of every set (benchmarks/answers_sets.py: encyclopedia wh/keyword/
cross-language/near-miss questions, SQuAD 2.0 train wh-questions and left-out articles, MLQA dev
German questions and left-out paragraphs, SciFact train claims and off-topic questions) it runs
the answer's search (second-stage ranker, top 6) once and keeps each passage's evidence
(``PassageSupport``). Then it searches a grid of decision values (``EvidenceThresholds``: the
threshold and coverage weight, then the cross-language offset) and keeps the values that
maximise

    mean over (set, answerable kind) of "a supporting passage among the top 3 is an expected one"
    + 2 * mean over sets of "an out-of-collection question has no supporting passage"

so that no single kind of question decides the values, and a wrong answer costs twice a missed
one. The ranker's cosine scale and cross-language offset are the model's current values (set
by hand on the same data, see retrieve/_rerank.py). It prints the best values, the rates per
set and kind they give, and the runners-up.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import time

import numpy as np

from answers_sets import build, load
from evidex.decide import DECIDE_DEPTH, EVIDENCE_THRESHOLDS, EvidenceThresholds
from evidex.kb import QUESTION_LIMITS

SETS = ("encyclopedia", "squad", "mlqa", "scifact")


def collect(embedder: str, sets: tuple[str, ...], texts: list | None = None
            ) -> list[tuple[str, str, frozenset[str], list]]:
    """Per dev question: (set, kind, expected document ids, [(document id, PassageSupport)] of
    the answer's search). ``texts``, when given, receives per question (question, [(passage
    text, (title, *heading path), language)] of the ``DECIDE_DEPTH`` best), for features read
    from the text."""
    rows = []
    for name in sets:
        qset = load(name, "dev")
        kb = build(qset, embedder)
        for q in qset.questions:
            if q.split != "dev" or q.kind == "ooc_adversarial":
                continue
            res = kb.search(qset.actor, q.text, limit=6, limits=QUESTION_LIMITS, rerank=True)
            rows.append((name, q.kind, q.expected,
                         [(h.document_id, p) for h, p in zip(res, res.support, strict=False)]))
            if texts is not None:
                texts.append((q, [(h.quote, (h.title or "", *h.heading_path), h.language)
                                  for h in list(res)[:DECIDE_DEPTH]]))
        kb.close()
    return rows


class Table:
    """The top-3 passages' evidence of every question as arrays, for fast grid search."""

    def __init__(self, rows: list, k: int = 3) -> None:
        n = len(rows)
        self.keys = [(name, kind) for name, kind, _, _ in rows]
        self.ooc = np.array([kind == "ooc" for _, kind, _, _ in rows])
        self.sim = np.full((n, k), np.nan)
        self.ssim = np.full((n, k), np.nan)
        self.cov = np.zeros((n, k))
        self.cross = np.zeros((n, k), dtype=bool)
        self.expected = np.zeros((n, k), dtype=bool)
        self.present = np.zeros((n, k), dtype=bool)
        self.typed = np.zeros((n, k), dtype=bool)
        for i, (_, _, expected, ranked) in enumerate(rows):
            for j, (doc, p) in enumerate(ranked[:k]):
                self.present[i, j] = True
                self.sim[i, j] = np.nan if p.similarity is None else p.similarity
                self.ssim[i, j] = (self.sim[i, j] if p.sentence_similarity is None
                                   else p.sentence_similarity)
                self.cov[i, j] = p.sentence_coverage
                self.cross[i, j] = p.cross_language
                self.expected[i, j] = doc in expected
                self.typed[i, j] = p.typed
        groups = sorted(set(self.keys))
        self.group = np.array([groups.index(key) for key in self.keys])
        self.groups = groups

    def passing(self, t: EvidenceThresholds) -> np.ndarray:
        """``supports`` for every passage at once (kept equal to it by test_answers_decision)."""
        if np.isnan(self.sim).all():
            return self.present & self.typed & (self.cov >= t.keyword_coverage)
        score = ((1 - t.sentence_weight) * self.sim + t.sentence_weight * self.ssim
                 + t.coverage_weight * self.cov)
        own = np.where(self.present & ~self.cross & ~np.isnan(self.sim), score, -np.inf)
        best_own = own.max(axis=1, keepdims=True)
        cross = (score + t.cross_answer_offset >= t.answer_similarity) & (score > best_own)
        passed = np.where(self.cross, cross, score >= t.answer_similarity)
        return self.present & self.typed & passed


def rates(table: Table, t: EvidenceThresholds, first: bool = False) -> dict[tuple[str, str], float]:
    """Per (set, kind): answerable questions with an expected supporting passage (``first``:
    the first supporting passage is an expected one); out-of-collection questions without one."""
    ok_pass = table.passing(t)
    if first:
        j = np.argmax(ok_pass, axis=1)
        hit = ok_pass.any(axis=1) & table.expected[np.arange(len(j)), j]
    else:
        hit = (ok_pass & table.expected).any(axis=1)
    ok = np.where(table.ooc, ~ok_pass.any(axis=1), hit).astype(float)
    sums = np.bincount(table.group, weights=ok, minlength=len(table.groups))
    counts = np.bincount(table.group, minlength=len(table.groups))
    return {key: float(sums[g] / counts[g]) for g, key in enumerate(table.groups)}


def objective(r: dict[tuple[str, str], float]) -> float:
    answered = [v for (_, kind), v in r.items() if kind != "ooc"]
    declined = [v for (_, kind), v in r.items() if kind == "ooc"]
    return float(np.mean(answered)) + 2 * float(np.mean(declined))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedder", default="multilingual-e5-small-int8")
    ap.add_argument("--sets", default=",".join(SETS))
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = collect(args.embedder, tuple(args.sets.split(",")))
    base = EVIDENCE_THRESHOLDS[args.embedder]
    table = Table(rows)
    grid: list[tuple[EvidenceThresholds, dict]] = []
    if args.embedder == "none":
        for kc in np.arange(0.3, 0.95, 0.05):
            t = dataclasses.replace(base, keyword_coverage=round(float(kc), 3))
            grid.append((t, rates(table, t)))
    else:
        # Coordinate search: same-language values, then cross-language ones, then again.
        best = base
        for _ in range(2):
            same = [dataclasses.replace(best, answer_similarity=round(float(th), 3), coverage_weight=a)
                    for th, a in itertools.product(np.arange(0.40, 1.0, 0.005), (0.1, 0.15, 0.2, 0.3, 0.4))]
            best = max(same, key=lambda t: objective(rates(table, t)))
            cross = [dataclasses.replace(best, cross_answer_offset=round(float(off), 3))
                     for off in np.arange(-0.05, 0.15, 0.005)]
            best = max(cross, key=lambda t: objective(rates(table, t)))
            grid = [(t, rates(table, t)) for t in same + cross]
        grid.append((best, rates(table, best)))
    grid.sort(key=lambda g: -objective(g[1]))
    best, r = grid[0]
    print(json.dumps({
        "embedder": args.embedder, "questions": len(rows), "seconds": round(time.perf_counter() - t0),
        "current": dataclasses.asdict(base), "current_rates": _fmt(rates(table, base)),
        "best": dataclasses.asdict(best), "best_rates": _fmt(r), "objective": round(objective(r), 4),
        "runners_up": [{"values": dataclasses.asdict(t), "objective": round(objective(x), 4)}
                       for t, x in grid[1:6]],
    }, indent=2))


def _fmt(r: dict[tuple[str, str], float]) -> dict[str, float]:
    return {f"{s}/{k}": round(v, 3) for (s, k), v in sorted(r.items())}


if __name__ == "__main__":
    main()
