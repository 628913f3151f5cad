"""Calibrate the decision to answer or decline (``retrieve.supports``) of one embedding model on
development data of several kinds, and report it per set and kind of question.

    .venv/bin/python benchmarks/answers_decide.py collect [--embedder multilingual-e5-small-int8]
    .venv/bin/python benchmarks/answers_decide.py fit [--embedder multilingual-e5-small-int8]

``collect`` runs the answer's search (second-stage ranker, top 6) for every dev question of the
sets below and keeps each passage's ``PassageSupport`` (``answers_calibrate.collect``; pickled
under benchmarks/.work/answers/).
Sets (development data only; benchmarks/answers_sets.py): encyclopedia dev (wh, keyword,
German->English, English->German, near-miss out-of-collection), SciFact *train* claims + the
calibration half of benchmarks/data/off-topic-questions.txt.

``fit`` runs the real decision (``supports`` on the ``DECIDE_DEPTH`` best passages) over the
collected evidence for a grid of values (same-language similarity threshold and coverage weight,
then the cross-language ones) and keeps the values that maximise

    mean over (set, answerable kind) of "the first supporting passage is an expected one"
    + 2 x mean over sets of "an out-of-collection question has no supporting passage"

so that no single kind of question decides the values, and a wrong answer costs twice a missed
one. It prints the rates per set and kind of the current values and of the best ones, and the
runners-up.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import time
from pathlib import Path

import numpy as np

from answers_calibrate import collect as calibrate_collect
from answers_sets import WORK
from evidex.retrieve import DECIDE_DEPTH, EVIDENCE_THRESHOLDS, EvidenceThresholds, supports

SETS = ("encyclopedia", "scifact")


def _path(embedder: str, name: str) -> Path:
    return WORK / f"decide-{name}-{embedder}.pkl"


def collect(embedder: str, sets: tuple[str, ...]) -> None:
    for name in sets:
        rows = [{"set": s, "kind": kind, "expected": expected, "hits": hits}
                for s, kind, expected, hits in calibrate_collect(embedder, (name,))]
        _path(embedder, name).write_bytes(pickle.dumps(rows))
        print(f"{len(rows)} questions -> {_path(embedder, name)}")


def rates(rows: list[dict], t: EvidenceThresholds) -> dict[tuple[str, str], float]:
    """Per (set, kind): answerable questions whose first supporting passage is an expected one;
    out-of-collection questions without a supporting passage."""
    out: dict[tuple[str, str], list[bool]] = {}
    for r in rows:
        first = next((doc for doc, p in r["hits"][:DECIDE_DEPTH] if supports(p, t)), None)
        ok = first is None if r["kind"] == "ooc" else first in r["expected"]
        out.setdefault((r["set"], r["kind"]), []).append(ok)
    return {k: float(np.mean(v)) for k, v in out.items()}


def objective(r: dict[tuple[str, str], float]) -> float:
    answered = [v for (_, kind), v in r.items() if kind != "ooc"]
    declined = [v for (_, kind), v in r.items() if kind == "ooc"]
    return float(np.mean(answered)) + 2 * float(np.mean(declined))


def _fmt(r: dict[tuple[str, str], float]) -> dict[str, float]:
    return {f"{s}/{k}": round(v, 3) for (s, k), v in sorted(r.items())}


def fit(embedder: str, sets: tuple[str, ...]) -> None:
    t0 = time.perf_counter()
    rows = [r for name in sets for r in pickle.loads(_path(embedder, name).read_bytes())]
    base = EVIDENCE_THRESHOLDS[embedder]
    best = base
    scored: list[tuple[EvidenceThresholds, dict]] = []
    for _ in range(2):  # coordinate search: same-language values, then cross-language ones
        same = [dataclasses.replace(best, answer_similarity=round(float(th), 3), coverage_weight=w)
                for th in np.arange(0.80, 1.0, 0.005) for w in (0.05, 0.1, 0.15, 0.2, 0.3)]
        scored = [(t, rates(rows, t)) for t in same]
        best = max(scored, key=lambda g: objective(g[1]))[0]
        cross = [dataclasses.replace(best, cross_similarity=round(float(th), 3), cross_coverage_weight=w)
                 for th in np.arange(0.78, 0.95, 0.005) for w in (0.0, 0.05, 0.1)]
        scored += [(t, rates(rows, t)) for t in cross]
        best = max(scored, key=lambda g: objective(g[1]))[0]
    scored.sort(key=lambda g: -objective(g[1]))
    keys = ("answer_similarity", "coverage_weight", "cross_similarity", "cross_coverage_weight")
    print(json.dumps({
        "embedder": embedder, "questions": len(rows), "seconds": round(time.perf_counter() - t0),
        "current": {k: getattr(base, k) for k in keys}, "current_rates": _fmt(rates(rows, base)),
        "current_objective": round(objective(rates(rows, base)), 4),
        "best": {k: getattr(scored[0][0], k) for k in keys}, "best_rates": _fmt(scored[0][1]),
        "objective": round(objective(scored[0][1]), 4),
        "runners_up": [{"values": {k: getattr(t, k) for k in keys}, "objective": round(objective(x), 4)}
                       for t, x in scored[1:6]],
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
