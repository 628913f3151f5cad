"""BM25's k1 and b for the keyword leg and the default hybrid search (issue 28, SciFact target).

    .venv/bin/python benchmarks/bm25_sweep.py [--work DIR] [--analyzer auto] [--splits dev,train]
        [--k1 0.6,0.9,1.2,1.5,2.0] [--b 0.3,0.5,0.75,0.9,1.0] [--points 1.2:0.75,0.9:0.5]
        [--modes keyword,adaptive]

The collections and question groups are ``multilingual.py``'s (the encyclopedia's three views,
SciFact, german-qa; stores in --work, built once per analyzer) plus the French questions of
``cross_french.py`` on the English and mixed views. Every (k1, b) gets its own
``KnowledgeBase`` handle over the same open store: the parameters belong to the handle's
``BM25``, whose weights cache lives and dies with it, so no weight computed under one pair is
reused under another. The vector leg does not depend on BM25, and query vectors come from the
process-wide cache (embedded on the first pass only).

Choosing uses development data only: ``--splits dev,train`` (encyclopedia and French ``dev``,
SciFact ``train``); german-qa has only a ``test`` split and is a check set. Each line printed is
one (k1, b, collection, group) with nDCG@10 per mode (real search path, limit 100, one passage
per document); the table at the end gives, per pair and mode, each set's mean over its groups and the mean
over the sets (encyclopedia, French, SciFact, german-qa when asked: one vote each), sorted by the
last mode's.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

import cross_french
import multilingual as ml
from evidex import KnowledgeBase
from evidex.evaluation import EVAL_LIMITS
from evidex.retrieve import BM25Params


def question_sets(work: Path, analyzer: str, splits: set[str]) -> list[tuple[str, KnowledgeBase, dict]]:
    """``multilingual.collections`` with the French questions added to the views holding their
    English paragraphs, restricted to groups of ``splits``."""
    _, french = cross_french.french_questions()
    out = []
    for name, kb, groups in ml.collections(work, analyzer):
        if name in ("encyclopedia[en]", "encyclopedia[mixed]"):
            groups.update({f"cross fr->en {s}": qs for s, qs in french.items()})
        kept = {g: qs for g, qs in groups.items() if g.split()[-1] in splits}
        if kept:
            out.append((name, kb, kept))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, default=Path("/tmp/evidex-bm25fit"))
    ap.add_argument("--analyzer", default="auto")
    ap.add_argument("--splits", default="dev,train")
    ap.add_argument("--k1", default="0.6,0.9,1.2,1.5,2.0")
    ap.add_argument("--b", default="0.3,0.5,0.75,0.9,1.0")
    ap.add_argument("--points", default="", help="k1:b pairs instead of the --k1 x --b grid")
    ap.add_argument("--modes", default="keyword,adaptive")
    args = ap.parse_args()
    if args.points:
        points = [tuple(float(x) for x in p.split(":")) for p in args.points.split(",")]
    else:
        points = [(float(k), float(b)) for k in args.k1.split(",") for b in args.b.split(",")]
    modes = args.modes.split(",")
    sets = question_sets(args.work, args.analyzer, set(args.splits.split(",")))
    table: dict[tuple[float, float], dict[str, dict[str, float]]] = defaultdict(dict)
    for k1, b in points:
        for name, kb, groups in sets:
            handle = KnowledgeBase(kb.store, bm25=BM25Params(k1, b), max_limit=ml.DEPTH,
                                   query_limits=EVAL_LIMITS)
            for group, queries in sorted(groups.items()):
                row = {mode: round(statistics.fmean(
                    ml.ndcg10([h.document_id for h in handle.search(ml.ACTOR, text, limit=ml.DEPTH,
                                                                    max_per_document=1,
                                                                    **ml.SETTINGS[mode])], rel)
                    for _, text, rel in queries), 4) for mode in modes}
                table[(k1, b)][f"{name} {group}"] = row
                print(json.dumps({"k1": k1, "b": b, "collection": name, "analyzer": kb.analyzer,
                                  "group": group, "n": len(queries), **row}), flush=True)
    print_table(table, modes)


def set_of(key: str) -> str:
    """The question set a "collection group" key belongs to (each set one vote in the table)."""
    if key.startswith(("scifact", "german-qa")):
        return key.split()[0]
    return "french" if "fr->" in key else "encyclopedia"


def print_table(table: dict[tuple[float, float], dict[str, dict[str, float]]], modes: list[str]) -> None:
    """Per (k1, b) and mode: the mean over sets, then each set's mean over its groups."""
    names = sorted({set_of(g) for rows in table.values() for g in rows})
    cells: dict[tuple[float, float], list[float]] = {}
    for point, rows in table.items():
        cells[point] = []
        for m in modes:
            per = [statistics.fmean(r[m] for g, r in rows.items() if set_of(g) == s) for s in names]
            cells[point] += [statistics.fmean(per), *per]
    head = [f"{m} {c}" for m in modes for c in ("mean", *names)]
    print("\n| k1 | b | " + " | ".join(head) + " |\n|---|---|" + "---:|" * len(head))
    for (k1, b), row in sorted(cells.items(), key=lambda kv: -kv[1][-len(names) - 1]):
        print(f"| {k1} | {b} | " + " | ".join(f"{x:.4f}" for x in row) + " |")

if __name__ == "__main__":
    main()
