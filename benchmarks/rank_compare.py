"""The ranking core of two evidex trees side by side in one process: identical rankings, speed,
cache memory.

    .venv/bin/python benchmarks/rank_compare.py --base-src /tmp/base/src \\
        --million-store benchmarks/.work/million-full.db [--rounds 3] [--scratch /tmp]

The other tree (``--base-src``) is imported as ``evidex_base`` (``facade_speed.twin``). Every
query runs through both trees' ``KnowledgeBase.search`` (keyword mode) one after the other, in
alternating order, so both see the same machine; each pair of hit lists (document id, passage,
score as ``float.hex``) is compared, so "bit-identical" is counted, not assumed.

* SciFact (BEIR layout): each tree builds its own keyword store from the corpus (english
  analyzer, whole documents, as ``evidex eval``); every test query in four settings (limit 10
  and 100 with one passage per document, ``match="all"``, limit 50 uncapped), ``--rounds``
  times (the first round meets empty caches).
* million_keyword's store (``million_keyword.py --keep`` builds it; the store code of both
  trees must read it): copied to ``--scratch``, read by one handle of each tree while a third
  (this tree) writes. Zipf and uniform queries first and warm, limit 100, ``match="all"``,
  after rounds of 100 supersedes of readable documents (kept parts, deaths, frequency arrays
  in play), after ``optimize``; then a handle of this tree with a small cache budget
  (``--small-budget-mib``) against the base, to show the budget holds and evicting changes
  no result.

Reports per phase: differing hit lists, p50/p95 ms per tree, and the median over queries of
the per-query new/base time ratio; the caches' bytes against their budgets; line counts.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from facade_speed import DEFAULT_BEIR, twin
from million_keyword import queries, vocabulary, zipf_ids

#: The ranking files of each tree (the base has only _bm25.py of these).
RANKING = ("_bm25.py", "_prune.py", "_postings.py", "_cache.py", "_accumulate.py", "_tuning.py")
SCIFACT = {
    "k10_cap1": {"limit": 10, "max_per_document": 1},
    "k100_cap1": {"limit": 100, "max_per_document": 1},
    "k10_all": {"limit": 10, "match": "all"},
    "k50_nocap": {"limit": 50, "max_per_document": None},
}


class Pair:
    """Both trees' handles and actors; ``run`` times one query on both, alternating order."""

    def __init__(self, kbs: dict[str, Any], actors: dict[str, Any]) -> None:
        self.kbs, self.actors = kbs, actors
        self.flip = False

    def run(self, q: str, **kw: Any) -> tuple[bool, dict[str, float]]:
        lists, ms = {}, {}
        self.flip = not self.flip
        for side in ("new", "base") if self.flip else ("base", "new"):
            t = time.perf_counter()
            hits = self.kbs[side].search(self.actors[side], q, mode="keyword", **kw)
            ms[side] = (time.perf_counter() - t) * 1000
            lists[side] = [(h.document_id, h.passage, h.score.hex()) for h in hits]
        return lists["base"] == lists["new"], ms


def phase(pair: Pair, qs: list[str], **kw: Any) -> dict[str, Any]:
    diffs, times = 0, {"base": [], "new": []}
    for q in qs:
        same, ms = pair.run(q, **kw)
        diffs += not same
        for side, v in ms.items():
            times[side].append(v)
    ratios = [n / b for b, n in zip(times["base"], times["new"], strict=True) if b > 0]
    out: dict[str, Any] = {"queries": len(qs), "differing_lists": diffs}
    for side, v in times.items():
        out[side] = {"p50": round(statistics.median(v), 3), "p95": round(float(np.percentile(v, 95)), 3)}
    out["median_ratio_new_over_base"] = round(statistics.median(ratios), 3)
    out["sum_ratio_new_over_base"] = round(sum(times["new"]) / sum(times["base"]), 3)
    print(json.dumps(out), file=sys.stderr, flush=True)
    return out


def scifact(trees: dict[str, ModuleType], beir_dir: Path, folder: Path, rounds: int) -> dict[str, Any]:
    beir = trees["new"].evaluation.load_beir(beir_dir)
    qs = list(beir.queries.values())
    kbs = {}
    for name, pkg in trees.items():
        ev = pkg.evaluation
        kb = pkg.KnowledgeBase.open(folder / f"scifact-{name}.db", analyzer="english", embedder="none",
                                    max_limit=100, query_limits=ev.EVAL_LIMITS)
        docs = list(ev.corpus_documents(beir))
        for i in range(0, len(docs), 1000):
            kb.ingest(docs[i : i + 1000], split="document")
        kb.optimize()
        kbs[name] = kb
    pair = Pair(kbs, {k: v.Actor("eval", frozenset({"eval"}), visibilities=frozenset({"public", "internal"}))
                      for k, v in trees.items()})
    out: dict[str, Any] = {"queries": len(qs)}
    for r in range(rounds):
        for setting, kw in SCIFACT.items():
            print(f"scifact round {r} {setting}", file=sys.stderr)
            out[f"round{r}/{setting}"] = phase(pair, qs, **kw)
    for kb in kbs.values():
        kb.close()
    return out


def cache_bytes(kb: Any) -> dict[str, float]:
    """The BM25 caches' counted bytes and budgets, in MiB (base: three caches, counted apart)."""
    bm, mib = kb._bm25, 1 << 20
    if hasattr(bm, "_cache_bytes"):  # the old core
        return {"weights_mib": round(bm._cache_bytes / mib, 1),
                "weights_budget_mib": round(bm._max_cache_bytes / mib, 1),
                "parts_mib": round(bm._parts_bytes / mib, 1), "tfs_mib": round(bm._tfs_bytes / mib, 1),
                "counted_mib": round((bm._cache_bytes + bm._parts_bytes + bm._tfs_bytes) / mib, 1)}
    return {"counted_mib": round(bm._cache.nbytes / mib, 1), "budget_mib": round(bm._cache.budget / mib, 1),
            "entries": len(bm._cache)}


def supersede(writer: Any, pkg: ModuleType, vocab: np.ndarray, rng: np.random.Generator, n: int,
              tag: str) -> None:
    """``n`` supersedes of readable documents (group "a": even numbers) with new Zipf text."""
    for i in range(n):
        d = 2 * int(rng.integers(0, 50_000))
        groups = {"a", "x"} if d % 3 == 0 else {"a"}
        paras = [" ".join(vocab[zipf_ids(rng, int(rng.integers(40, 81)), len(vocab))]) for _ in range(10)]
        writer.ingest([pkg.Document(f"doc{d:07d}", "bench", groups, f"{tag}-{i}", "\n\n".join(paras))])
    writer.store.settle()


def million(trees: dict[str, ModuleType], store: Path, folder: Path, small_mib: int) -> dict[str, Any]:
    db = folder / "million.db"
    shutil.copyfile(store, db)
    vocab = vocabulary(50_000)
    zipf, uniform = queries(500, vocab), queries(500, vocab, seed=4, uniform=True)
    both = zipf + uniform
    kbs = {name: pkg.KnowledgeBase.open(db, max_limit=100) for name, pkg in trees.items()}
    writer = trees["new"].KnowledgeBase.open(db)
    pair = Pair(kbs, {k: v.Actor("bench", frozenset({"a"}), visibilities=frozenset({"public", "internal"}))
                      for k, v in trees.items()})
    out: dict[str, Any] = {}
    peak = {"base": 0.0, "new": 0.0}

    def step(name: str, qs: list[str], **kw: Any) -> None:
        print(f"million {name}", file=sys.stderr)
        out[name] = phase(pair, qs, **kw)
        for side, kb in pair.kbs.items():
            peak[side] = max(peak[side], cache_bytes(kb)["counted_mib"])

    step("first_use", both, limit=10)
    step("warm", both, limit=10)
    step("l100_cap1", both, limit=100, max_per_document=1)
    step("all_l20", both, limit=20, match="all")
    rng = np.random.default_rng(11)
    for r in range(3):
        supersede(writer, trees["new"], vocab, rng, 100, f"r{r}")
        step(f"after_100_supersedes_{r}", zipf[:300] + uniform[:100], limit=10)
    writer.optimize()
    step("optimized", zipf[:300] + uniform[:100], limit=10)
    out["cache_at_end"] = {side: cache_bytes(kb) for side, kb in kbs.items()}
    out["cache_peak_counted_mib_after_a_phase"] = peak
    kbs["new"].close()

    # A small budget: the cache must stay within it and evicting must change no result.
    core = sys.modules["evidex.retrieve._bm25"]
    saved = core.TUNING
    core.TUNING = replace(saved, cache_bytes=small_mib << 20)
    try:
        small = trees["new"].KnowledgeBase.open(db, max_limit=100)
    finally:
        core.TUNING = saved
    pair.kbs["new"] = small
    most = 0
    out["small_budget_differing_lists"] = 0
    for q in both:
        same, _ = pair.run(q, limit=10)
        out["small_budget_differing_lists"] += not same
        most = max(most, small._bm25._cache.nbytes)
    out["small_budget"] = {"budget_mib": small_mib, "queries": len(both),
                           "largest_counted_mib_after_a_query": round(most / (1 << 20), 1),
                           "entries_at_end": len(small._bm25._cache)}
    for kb in (small, kbs["base"], writer):
        kb.close()
    return out


def lines(src: Path) -> dict[str, int]:
    folder = src / "evidex" / "retrieve"
    got = {f: sum(1 for _ in (folder / f).open(encoding="utf-8")) for f in RANKING if (folder / f).exists()}
    got["total"] = sum(got.values())
    return got


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-src", type=Path, required=True)
    ap.add_argument("--million-store", type=Path)
    ap.add_argument("--beir", type=Path, default=DEFAULT_BEIR)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--small-budget-mib", type=int, default=64)
    ap.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--skip-scifact", action="store_true")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="evidex-rank-", dir=args.scratch))
    try:
        base = twin(args.base_src, folder)
        import evidex
        import evidex.evaluation

        importlib.import_module(f"{base.__name__}.evaluation")
        trees = {"base": base, "new": evidex}
        report: dict[str, Any] = {
            "date": time.strftime("%Y-%m-%d %H:%M %Z"), "cores": os.cpu_count(),
            "load_average_before": os.getloadavg()[0], "trees": {k: v.__file__ for k, v in trees.items()},
            "lines": {"base": lines(args.base_src), "new": lines(Path(evidex.__file__).parent.parent)},
        }
        if not args.skip_scifact:
            report["scifact"] = scifact(trees, args.beir, folder, args.rounds)
        if args.million_store is not None:
            report["million"] = million(trees, args.million_store, folder, args.small_budget_mib)
        report["load_average_after"] = os.getloadavg()[0]
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
