"""BM25's k1 and b for the keyword leg and the default hybrid search (issue 28, SciFact target).

    .venv/bin/python benchmarks/bm25_sweep.py [--work DIR] [--analyzer auto] [--splits dev,train]
        [--k1 0.6,0.9,1.2,1.5,2.0] [--b 0.3,0.5,0.75,0.9,1.0] [--points 1.2:0.75,0.9:0.5]
        [--modes keyword,adaptive]
    .venv/bin/python benchmarks/bm25_sweep.py --titles --points 1.2:0.75,0.9:0.4

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
per document); the table at the end gives, per pair and mode, each set's mean over its groups
and the mean over the sets (encyclopedia, French, SciFact, german-qa when asked: one vote
each), sorted by the last mode's. Results: benchmarks/RESULTS.md.
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
from evidex.evaluation import EVAL_LIMITS, load_beir
from evidex.retrieve import BM25Params
from scifact_hybrid import SCIFACT


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


def mean_ndcg(kb: KnowledgeBase, queries: list, mode: str) -> float:
    """Mean nDCG@10 of [(id, text, relevant ids)] in ``mode`` (a key of ``multilingual.SETTINGS``)."""
    return round(statistics.fmean(
        ml.ndcg10([h.document_id for h in kb.search(ml.ACTOR, text, limit=ml.DEPTH, max_per_document=1,
                                                    **ml.SETTINGS[mode])], rel)
        for _, text, rel in queries), 4)


def title_check(work: Path, points: list[tuple[float, float]]) -> None:
    """SciFact train, keyword leg: a document's title is indexed once, as words of its one passage
    (title, blank line, abstract), weighed like the abstract's. Repeating it 0-2 times shows what
    weighing titles up (or leaving them out) would do (keyword-only stores, no vectors)."""
    beir = load_beir(SCIFACT, "train")
    queries = [(q, text, {d for d, g in beir.qrels[q].items() if g > 0}) for q, text in beir.queries.items()]
    for repeat in (0, 1, 2):
        kb = ml._store(work / f"scifact-title{repeat}.db",
                       (((i, f"{t}\n\n" * repeat + x, "en") for i, t, x in beir.corpus if x.strip())),
                       "auto", embedder="none")
        for k1, b in points:
            handle = KnowledgeBase(kb.store, bm25=BM25Params(k1, b), max_limit=ml.DEPTH,
                                   query_limits=EVAL_LIMITS)
            print(json.dumps({"title_repeat": repeat, "k1": k1, "b": b, "group": "scifact train",
                              "keyword": mean_ndcg(handle, queries, "keyword")}), flush=True)
        kb.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, default=Path("/tmp/evidex-bm25fit"))
    ap.add_argument("--analyzer", default="auto")
    ap.add_argument("--splits", default="dev,train")
    ap.add_argument("--k1", default="0.6,0.9,1.2,1.5,2.0")
    ap.add_argument("--b", default="0.3,0.5,0.75,0.9,1.0")
    ap.add_argument("--points", default="", help="k1:b pairs instead of the --k1 x --b grid")
    ap.add_argument("--modes", default="keyword,adaptive")
    ap.add_argument("--titles", action="store_true", help="the title check instead (SciFact train)")
    args = ap.parse_args()
    if args.points:
        points = [tuple(float(x) for x in p.split(":")) for p in args.points.split(",")]
    else:
        points = [(float(k), float(b)) for k in args.k1.split(",") for b in args.b.split(",")]
    if args.titles:
        title_check(args.work, points)
        return
    modes = args.modes.split(",")
    sets = question_sets(args.work, args.analyzer, set(args.splits.split(",")))
    table: dict[tuple[float, float], dict[str, dict[str, float]]] = defaultdict(dict)
    for k1, b in points:
        for name, kb, groups in sets:
            handle = KnowledgeBase(kb.store, bm25=BM25Params(k1, b), max_limit=ml.DEPTH,
                                   query_limits=EVAL_LIMITS)
            for group, queries in sorted(groups.items()):
                row = {mode: mean_ndcg(handle, queries, mode) for mode in modes}
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
