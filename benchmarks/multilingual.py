"""Cross-language retrieval and adaptive fusion (issue 28): figures, and the data the rule is fitted on.

    .venv/bin/python benchmarks/multilingual.py report [--work DIR] [--splits dev,test]
    .venv/bin/python benchmarks/multilingual.py dump --out legs.pkl [--work DIR]
    .venv/bin/python benchmarks/multilingual.py overhead [--work DIR] [--rounds 3]

Collections (stores kept in --work, default /tmp/evidex-multilingual, rebuilt when missing; the
default embedder's vectors come from the persistent embedding cache):

* the encyclopedia set (benchmarks/data/encyclopedia) in three views: ``en`` (English paragraphs
  only: every German question becomes German-to-English, XQuAD-style), ``de`` (German paragraphs
  only: every English question becomes English-to-German) and ``mixed`` (both); passages carry
  their document's language;
* SciFact (train for fitting, test for reporting) and the German question set
  (benchmarks/data/german-qa, test only, never fitted on).

``report`` prints nDCG@10 per group for keyword, vector, hybrid convex 0.5 (the old default),
RRF, weighted RRF (RRF with the adaptive leg weights) and adaptive (the default), alternating
nothing: quality does not depend on the machine.
``dump`` writes, per query, both legs' windows and the signals adaptive fusion reads, so the
rule's constants can be fitted offline (fit_fusion.py). ``overhead`` times hybrid searches with
adaptive and convex fusion alternately on the same queries (cached query vectors).
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import statistics
import time
from collections.abc import Iterable
from pathlib import Path

import qa_sets
from evidex import Actor, Document, KnowledgeBase
from evidex.evaluation import EVAL_LIMITS, load_beir
from evidex.retrieve import _search as _hybrid
from scifact_hybrid import GERMAN, SCIFACT

ACTOR = Actor("eval", frozenset({"eval"}), visibilities=frozenset({"public", "internal"}))
DEPTH = 100


def _store(path: Path, passages: Iterable[tuple[str, str, str | None]], analyzer: str,
           embedder: str | None = None) -> KnowledgeBase:
    """A store of (id, text, language) documents, one passage each; built once per path."""
    fresh = not path.exists()
    kb = KnowledgeBase.open(path, analyzer=analyzer if fresh else None, max_limit=DEPTH,
                            query_limits=EVAL_LIMITS, embedder=embedder if fresh else None)
    if fresh:
        docs = [Document(i, "eval", {"eval"}, "1", text, language=lang) for i, text, lang in passages]
        for k in range(0, len(docs), 1000):
            kb.ingest(docs[k:k + 1000], split="document")
        kb.optimize()
    return kb


def _text(title: str, text: str) -> str:
    return f"{title}\n\n{text}" if title else text


VIEWS = {"en": {"en"}, "de": {"de"}, "mixed": {"en", "de"}}


def encyclopedia_view(work: Path, enc: qa_sets.QASet, view: str,
                      analyzer: str) -> tuple[KnowledgeBase, dict[str, list]]:
    """The store of one view of the encyclopedia set (``VIEWS``) and its answerable questions by
    group ("cross de->en dev", "wh en test", ...): {group: [(query id, text, relevant ids)]}."""
    qs = enc.only_languages(VIEWS[view]) if view != "mixed" else enc
    kb = _store(work / f"enc-{view}-{analyzer}.db",
                ((p.id, _text(p.title, p.text), p.language) for p in qs.passages.values()), analyzer)
    groups: dict[str, list] = {}
    for q in qs.queries.values():
        if not q.answerable:
            continue
        cross = qs.is_cross_language(q.id)
        other = "en" if q.language == "de" else "de"
        kind = f"cross {q.language}->{other}" if cross else f"{q.kind} {q.language}"
        groups.setdefault(f"{kind} {q.split}", []).append((q.id, q.text, set(qs.relevant(q.id))))
    return kb, groups


def collections(work: Path, analyzer: str = "exact") -> list[tuple[str, KnowledgeBase, dict]]:
    """(name, store, {group: [(query id, text, relevant ids)]}) for every collection."""
    work.mkdir(parents=True, exist_ok=True)
    enc = qa_sets.load(qa_sets.ENCYCLOPEDIA)
    out = []
    for view in VIEWS:
        kb, groups = encyclopedia_view(work, enc, view, analyzer)
        out.append((f"encyclopedia[{view}]", kb, groups))
    for name, folder, splits, lang in (("scifact", SCIFACT, ("train", "test"), "en"),
                                       ("german-qa", GERMAN, ("test",), "de")):
        beir = load_beir(folder, splits[0])
        # SciFact (English only) was measured with the english analyzer beside the exact
        # stores; under auto its passages, all English, get the english analysis themselves.
        chosen = "english" if name == "scifact" and analyzer == "exact" else analyzer
        kb = _store(work / f"{name}-{chosen}.db",
                    ((i, _text(t, x), lang) for i, t, x in beir.corpus if (t + x).strip()), chosen)
        groups = {}
        for split in splits:
            b = load_beir(folder, split)
            groups[split] = [(q, text, {d for d, g in b.qrels[q].items() if g > 0})
                             for q, text in b.queries.items()]
        out.append((name, kb, groups))
    return out


def ndcg10(ranked: list[str], relevant: set[str]) -> float:
    dcg = sum(1 / math.log2(r + 2) for r, d in enumerate(ranked[:10]) if d in relevant)
    ideal = sum(1 / math.log2(r + 2) for r in range(min(len(relevant), 10)))
    return dcg / ideal if ideal else 0.0


SETTINGS = {
    "keyword": {"mode": "keyword"},
    "vector": {"mode": "vector"},
    "convex 0.5": {"mode": "hybrid", "fusion": "convex", "alpha": 0.5},
    "rrf": {"mode": "hybrid", "fusion": "rrf"},
    "weighted rrf": {"mode": "hybrid", "fusion": "weighted_rrf"},
    "adaptive": {"mode": "hybrid", "fusion": "adaptive"},
}


def report(work: Path, splits: set[str], analyzer: str) -> None:
    for name, kb, groups in collections(work, analyzer):
        for group, queries in sorted(groups.items()):
            if group.split()[-1] not in splits:
                continue
            row = {}
            for setting, kw in SETTINGS.items():
                scores = [ndcg10([h.document_id for h in kb.search(ACTOR, text, limit=DEPTH,
                                                                    max_per_document=1, **kw)], rel)
                          for _, text, rel in queries]
                row[setting] = round(statistics.fmean(scores), 4)
            print(json.dumps({"collection": name, "analyzer": kb.analyzer, "group": group,
                              "n": len(queries), **row}), flush=True)
        kb.close()


def dump(work: Path, out: Path, analyzer: str) -> None:
    """Per query: both legs (document ids, scores) and the signals, via the real search path."""
    seen: dict[str, object] = {}
    real_fuse, real_weights = _hybrid.fuse, _hybrid.leg_weights

    def fuse(legs, fusion, weights=None):  # type: ignore[no-untyped-def]
        seen["legs"] = [(leg.name, leg.pids.copy(), leg.scores.copy()) for leg in legs]
        return real_fuse(legs, fusion, weights)

    def weights(signals, *a):  # type: ignore[no-untyped-def]
        seen["signals"] = signals
        return real_weights(signals, *a)

    _hybrid.fuse, _hybrid.leg_weights = fuse, weights
    rows = []
    try:
        for name, kb, groups in collections(work, analyzer):
            with kb.store.read() as view:
                all_pids = [p for p, _ in kb.store.live_passages()]
                dkeys = {int(p): int(view.dkey[p]) for p in all_pids}
                doc_of = view.doc_ids(set(dkeys.values()))
                doc_of_pid = {p: doc_of[d] for p, d in dkeys.items()}
            for group, queries in groups.items():
                for qid, text, rel in queries:
                    seen.clear()
                    kb.search(ACTOR, text, limit=DEPTH, max_per_document=1, mode="hybrid", fusion="adaptive")
                    legs = {n: ([doc_of_pid[int(p)] for p in pids], s) for n, pids, s in seen.get("legs", [])}
                    rows.append({"collection": name, "group": group, "qid": qid, "text": text,
                                 "relevant": rel, "legs": legs, "signals": seen.get("signals")})
            kb.close()
    finally:
        _hybrid.fuse, _hybrid.leg_weights = real_fuse, real_weights
    out.write_bytes(pickle.dumps(rows))
    print(f"{len(rows)} queries -> {out}")


def overhead(work: Path, rounds: int, analyzer: str) -> None:
    """The weighting step itself (language identification, signals, rule: ``_hybrid._weigh``,
    timed inside real searches), and whole hybrid searches with adaptive and convex fusion on
    the same queries, alternating which goes first (cached query vectors)."""
    spent: list[float] = []
    real = _hybrid._weigh

    def timed(*a, **kw):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        out = real(*a, **kw)
        spent.append((time.perf_counter() - t) * 1000)
        return out

    for name, kb, groups in collections(work, analyzer):
        queries = [text for qs in groups.values() for _, text, _ in qs][:300]
        for q in queries:  # warm the query-vector cache and the language model
            kb.search(ACTOR, q, limit=10)
        times: dict[str, list[float]] = {"adaptive": [], "convex": []}
        spent.clear()
        _hybrid._weigh = timed
        try:
            for r in range(rounds):
                for i, q in enumerate(queries):
                    order = ("adaptive", "convex") if (i + r) % 2 == 0 else ("convex", "adaptive")
                    for method in order:
                        t = time.perf_counter()
                        kb.search(ACTOR, q, limit=10, fusion=method)
                        times[method].append((time.perf_counter() - t) * 1000)
        finally:
            _hybrid._weigh = real
        diffs = [a - c for a, c in zip(times["adaptive"], times["convex"], strict=True)]
        print(json.dumps({"collection": name, "queries": len(queries), "rounds": rounds,
                          "weighting_p50_ms": round(statistics.median(spent), 3),
                          "weighting_p95_ms": round(sorted(spent)[int(0.95 * len(spent))], 3),
                          **{f"search_{m}_p50_ms": round(statistics.median(v), 3) for m, v in times.items()},
                          "paired_difference_p50_ms": round(statistics.median(diffs), 3)}), flush=True)
        kb.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=("report", "dump", "overhead"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/evidex-multilingual"))
    ap.add_argument("--out", type=Path, default=Path("/tmp/evidex-multilingual/legs.pkl"))
    ap.add_argument("--splits", default="dev,test,train")
    ap.add_argument("--analyzer", default="exact")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if args.command == "report":
        report(args.work, set(args.splits.split(",")), args.analyzer)
    elif args.command == "dump":
        dump(args.work, args.out, args.analyzer)
    else:
        overhead(args.work, args.rounds, args.analyzer)


if __name__ == "__main__":
    main()
