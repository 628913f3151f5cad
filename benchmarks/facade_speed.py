"""``KnowledgeBase.search`` speed of two evidex trees in one process, alternating, on SciFact.

    .venv/bin/python benchmarks/facade_speed.py --base-src /tmp/base/src [--rounds 9]
        [--embedder all-minilm-l6-v2] [--beir /work/shared/data/beir/scifact]

On a shared, noisy machine two processes run minutes apart see different machines. Here the
other tree (``--base-src``) is copied into a temporary folder as the package ``evidex_base``
(its absolute imports and resource lookups renamed), imported next to this tree's ``evidex``,
and both are timed query set by query set, in ABBA order per round, on stores each tree built
itself from the same documents:

* keyword: every test query through ``search`` (one passage per document, as ``evidex eval``)
  at limit 10 and 100: queries per second per round;
* hybrid: every test query through ``search`` with the default settings (hybrid, convex
  fusion, limit 10), query vectors already cached (filled by a warm-up pass), so the figure is
  the retrieval around the model: p50 and p95 milliseconds per round.

Reports per-round figures, their medians and the median of the per-round new/base ratios.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_BEIR = next((p / "shared" / "data" / "beir" / "scifact" for p in HERE.parents
                     if (p / "shared" / "data" / "beir" / "scifact").is_dir()), HERE)


def twin(src: Path, into: Path) -> ModuleType:
    """Import the tree at ``src`` as the package ``evidex_base``."""
    target = into / "evidex_base"
    shutil.copytree(src / "evidex", target, ignore=shutil.ignore_patterns("__pycache__"))
    for path in target.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        text = re.sub(r"\bevidex\.(?=[a-z_])", "evidex_base.", text)
        text = text.replace('resources.files("evidex")', 'resources.files("evidex_base")')
        path.write_text(text, encoding="utf-8")
    sys.path.insert(0, str(into))
    import evidex_base

    return evidex_base


def build(pkg: ModuleType, beir: Any, folder: Path, embedder: str) -> Any:
    ev = importlib.import_module(f"{pkg.__name__}.evaluation")
    kb = pkg.KnowledgeBase.open(folder / f"{pkg.__name__}-{embedder}.db", analyzer="english",
                                embedder=embedder, max_limit=100, query_limits=ev.EVAL_LIMITS)
    docs = list(ev.corpus_documents(beir))
    for i in range(0, len(docs), 1000):
        kb.ingest(docs[i : i + 1000], split="document")
    kb.optimize()
    return kb


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-src", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--embedder", default="all-minilm-l6-v2")
    ap.add_argument("--beir", type=Path, default=DEFAULT_BEIR)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="evidex-speed-"))
    base = twin(args.base_src, tmp)
    import evidex
    import evidex.evaluation

    trees = {"base": base, "new": evidex}
    beir = evidex.evaluation.load_beir(args.beir)
    queries = list(beir.queries.values())
    report: dict[str, Any] = {
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d %H:%M"), "load_average_before": os.getloadavg()[0],
        "trees": {k: v.__file__ for k, v in trees.items()}, "rounds": args.rounds,
    }
    actors = {k: v.Actor("eval", frozenset({"eval"}), visibilities=frozenset({"public", "internal"}))
              for k, v in trees.items()}
    keyword = {k: build(v, beir, tmp, "none") for k, v in trees.items()}
    hybrid = {k: build(v, beir, tmp, args.embedder) for k, v in trees.items()}
    for name, kb in hybrid.items():  # warm-up: query vectors and caches of both trees
        for q in queries:
            kb.search(actors[name], q, limit=10)
    for name, kb in keyword.items():
        for q in queries:
            kb.search(actors[name], q, limit=100, max_per_document=1, mode="keyword")

    qps: dict[str, dict[str, list[float]]] = {f"k{k}": {"base": [], "new": []} for k in (10, 100)}
    lat: dict[str, dict[str, list[float]]] = {p: {"base": [], "new": []} for p in ("p50", "p95")}
    for r in range(args.rounds):
        order = ["base", "new", "new", "base"] if r % 2 == 0 else ["new", "base", "base", "new"]
        for k in (10, 100):
            runs: dict[str, list[float]] = {"base": [], "new": []}
            for name in order:
                kb, actor = keyword[name], actors[name]
                t = time.perf_counter()
                for q in queries:
                    kb.search(actor, q, limit=k, max_per_document=1, mode="keyword")
                runs[name].append(len(queries) / (time.perf_counter() - t))
            for name, vals in runs.items():
                qps[f"k{k}"][name].append(max(vals))
        times: dict[str, list[float]] = {"base": [], "new": []}
        for name in order:
            kb, actor = hybrid[name], actors[name]
            for q in queries[::2] if len(times[name]) else queries[1::2]:
                t = time.perf_counter()
                kb.search(actor, q, limit=10)
                times[name].append((time.perf_counter() - t) * 1000)
        for name, vals in times.items():
            lat["p50"][name].append(statistics.median(vals))
            lat["p95"][name].append(float(np.percentile(vals, 95)))

    def summary(table: dict[str, list[float]], digits: int) -> dict[str, Any]:
        ratios = [n / b for b, n in zip(table["base"], table["new"], strict=True)]
        return {"base": [round(v, digits) for v in table["base"]],
                "new": [round(v, digits) for v in table["new"]],
                "median_base": round(statistics.median(table["base"]), digits),
                "median_new": round(statistics.median(table["new"]), digits),
                "median_ratio_new_over_base": round(statistics.median(ratios), 3)}

    report["keyword_search_qps"] = {k: summary(v, 0) for k, v in qps.items()}
    report[f"hybrid_search_ms_cached_vector_{args.embedder}"] = {p: summary(v, 3) for p, v in lat.items()}
    report["load_average_after"] = os.getloadavg()[0]
    for kb in [*keyword.values(), *hybrid.values()]:
        kb.close()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
