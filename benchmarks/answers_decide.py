"""Calibrate the decision to answer or decline (``decide.supports``) of one embedding model on
development data of several kinds, and report it per set and kind of question.

    .venv/bin/python benchmarks/answers_decide.py collect [--embedder multilingual-e5-small-int8]
    .venv/bin/python benchmarks/answers_decide.py fit [--embedder multilingual-e5-small-int8]

``collect`` runs the answer's search (second-stage ranker, top 6) for every dev question of the
sets below and keeps each passage's ``PassageSupport`` (``answers_calibrate.collect``; pickled
under benchmarks/.work/answers/).
Sets (development data only; benchmarks/answers_sets.py): encyclopedia dev (wh, keyword,
German->English, English->German, near-miss out-of-collection), SciFact *train* claims + the
calibration half of benchmarks/data/off-topic-questions.txt, and the help-centre questions of
benchmarks/data/shop-dev over examples/shop (wh, keyword, cross-language, near misses; the
shipped case file examples/eval/cases.yaml is the held-out set of that collection).

``collect`` runs with the code's own search, so each passage's sentence similarity
(``decide._meaning``) is computed and cached as an ``ask`` would.

``fit`` runs the decision (``supports`` on the ``DECIDE_DEPTH`` best passages, as arrays:
``answers_calibrate.Table``, kept equal to it by tests/test_answers_decision.py) over the
collected evidence for a full grid of values (share of the sentence similarity in the score,
coverage weight, threshold, cross-language offset), one rule for every kind of question, and
keeps the values that maximise

    mean over (set, answerable kind) of "the first supporting passage is an expected one"
    + 2 x mean over sets of "an out-of-collection question has no supporting passage"

so that no single kind of question decides the values, and a wrong answer costs twice a missed
one. It prints the rates per set and kind of the current values and of the best ones, the
runners-up, and per share of sentence similarity the best answered mean reachable at a given
out-of-collection decline rate.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import time
from pathlib import Path

import numpy as np

from answers_calibrate import Table, rates
from answers_calibrate import collect as calibrate_collect
from answers_sets import WORK
from evidex.decide import EVIDENCE_THRESHOLDS, EvidenceThresholds

SETS = ("encyclopedia", "scifact", "shop")


def _path(embedder: str, name: str) -> Path:
    return WORK / f"decide-{name}-{embedder}.pkl"


def collect(embedder: str, sets: tuple[str, ...]) -> None:
    for name in sets:
        texts: list = []
        rows = [{"set": s, "kind": kind, "expected": expected, "hits": hits,
                 "question": dataclasses.asdict(q), "texts": top}
                for (s, kind, expected, hits), (q, top)
                in zip(calibrate_collect(embedder, (name,), texts), texts, strict=True)]
        _path(embedder, name).write_bytes(pickle.dumps(rows))
        print(f"{len(rows)} questions -> {_path(embedder, name)}")


def _rates(table: Table, t: EvidenceThresholds) -> dict[tuple[str, str], float]:
    return rates(table, t, first=True)


def objective(r: dict[tuple[str, str], float]) -> float:
    answered = [v for (_, kind), v in r.items() if kind != "ooc"]
    declined = [v for (_, kind), v in r.items() if kind == "ooc"]
    return float(np.mean(answered)) + 2 * float(np.mean(declined))


def _fmt(r: dict[tuple[str, str], float]) -> dict[str, float]:
    return {f"{s}/{k}": round(v, 3) for (s, k), v in sorted(r.items())}


def _rows(embedder: str, sets: tuple[str, ...]) -> list[tuple[str, str, frozenset[str], list]]:
    return [(r["set"], r["kind"], r["expected"], r["hits"])
            for name in sets for r in pickle.loads(_path(embedder, name).read_bytes())]


def fit(embedder: str, sets: tuple[str, ...]) -> None:
    t0 = time.perf_counter()
    table = Table(_rows(embedder, sets))
    base = EVIDENCE_THRESHOLDS[embedder]
    grid = [dataclasses.replace(base, sentence_weight=lam, coverage_weight=w,
                                answer_similarity=round(float(th), 4),
                                cross_answer_offset=round(float(off), 3))
            for lam in (0.0, 0.25, 0.5, 0.75, 1.0) for w in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)
            for th in np.arange(0.80, 1.0, 0.0025) for off in np.arange(0.0, 0.201, 0.02)]
    scored = sorted(((t, _rates(table, t)) for t in grid), key=lambda g: -objective(g[1]))
    keys = ("answer_similarity", "coverage_weight", "sentence_weight", "cross_answer_offset")

    def declined(r: dict) -> float:
        return float(np.mean([v for (_, kind), v in r.items() if kind == "ooc"]))

    def answered(r: dict) -> float:
        return float(np.mean([v for (_, kind), v in r.items() if kind != "ooc"]))

    # The trade-off each way of scoring reaches: the best answered mean at a decline rate.
    frontier = {}
    for lam in (0.0, 0.25, 0.5, 0.75, 1.0):
        mine = [(t, r) for t, r in scored if t.sentence_weight == lam]
        frontier[str(lam)] = {str(floor): round(max((answered(r) for _, r in mine
                                                     if declined(r) >= floor), default=0.0), 3)
                              for floor in (0.7, 0.8, 0.9, 0.95)}
    print(json.dumps({
        "embedder": embedder, "questions": len(table.keys), "grid": len(grid),
        "seconds": round(time.perf_counter() - t0),
        "current": {k: getattr(base, k) for k in keys}, "current_rates": _fmt(_rates(table, base)),
        "current_objective": round(objective(_rates(table, base)), 4),
        "best": {k: getattr(scored[0][0], k) for k in keys}, "best_rates": _fmt(scored[0][1]),
        "objective": round(objective(scored[0][1]), 4),
        "runners_up": [{"values": {k: getattr(t, k) for k in keys}, "objective": round(objective(x), 4)}
                       for t, x in scored[1:8]],
        "answered_mean_at_declined": frontier,
    }, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("collect", "fit"))
    ap.add_argument("--embedder", default="multilingual-e5-small-int8")
    ap.add_argument("--sets", default=",".join(SETS))
    args = ap.parse_args()
    if args.what == "collect":
        collect(args.embedder, tuple(args.sets.split(",")))
    else:
        fit(args.embedder, tuple(args.sets.split(",")))


if __name__ == "__main__":
    main()
