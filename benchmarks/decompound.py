"""German decompounding (issue 28 item 3): does splitting compounds raise German keyword recall?

    python3.12 -m venv /tmp/charsplit && /tmp/charsplit/bin/pip install charsplit-fst==0.1.4
    .venv/bin/python benchmarks/decompound.py quality --splitter-python /tmp/charsplit/bin/python \
        [--work DIR] [--variants base,split1:0.7,...] > quality.jsonl
    .venv/bin/python benchmarks/decompound.py table quality.jsonl   # per-group tables, dev means
    .venv/bin/python benchmarks/decompound.py overhead --splitter-python /tmp/charsplit/bin/python

The splitter is charsplit-fst (PyPI, Rust + FST, its model compiled into the wheel). Its wheels
need Python >= 3.12 while evidex's environment is 3.11, so the splitter runs in its own
interpreter (``--splitter-python``, a 3.12 virtual environment with charsplit-fst installed):
every word of the measured texts, and every part it yields, is split there once, and the German
analyzer variant looks the splits up. The words and splits are exactly what an in-process
splitter would produce (it is deterministic per word), so the figures are the real analyzer's.

Variants (``--variants``): ``base`` is the ``german`` analyzer as shipped; ``split:T`` indexes,
beside each German word's stem, the stems of the parts of its best split when the splitter's
score is above T (parts split again the same way, words of 6 letters or more; ``split1:T``
splits once), for passages and queries alike; ``index:T`` splits once, passages only. Each
variant builds its own stores (``german`` and ``auto``) in --work/<variant> in a process of its
own, so no analyzer cache crosses variants.

Collections: the encyclopedia's German view (wh/keyword German questions, English questions
over German passages), its mixed view (every kind; German questions over English passages too)
and german-qa (test only). Dev groups decide, test groups are reported. Figures per group:
nDCG@10, recall@10, recall@100 and precision@1 (share of questions whose first hit is relevant)
for the keyword leg and adaptive hybrid.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import multilingual as ml
import qa_sets
from evidex.evaluation import load_beir
from evidex.query import _analyzers, words
from scifact_hybrid import GERMAN

_SPLIT_SCRIPT = r"""
import json, sys
from charsplit_fst import Splitter
s = Splitter()
out = {}
for w in json.load(sys.stdin):
    best = s.split_compound(w)[0]
    out[w] = [best[0], best[1].lower(), best[2].lower()]
json.dump(out, sys.stdout)
"""

#: Words shorter than this are never split ("haus", "bau").
MIN_LEN = 6


def split_table(python: str, vocabulary: set[str]) -> dict[str, tuple[float, str, str]]:
    """Best split of every word of ``vocabulary`` and, transitively, of every part long enough."""
    table: dict[str, tuple[float, str, str]] = {}
    todo = {w for w in vocabulary if len(w) >= MIN_LEN and w.isalpha()}
    while todo:
        res = subprocess.run([python, "-c", _SPLIT_SCRIPT], input=json.dumps(sorted(todo)),
                             capture_output=True, text=True, check=True)
        new = {w: (float(s), a, b) for w, (s, a, b) in json.loads(res.stdout).items()}
        table.update(new)
        todo = {p for s, a, b in new.values() for p in (a, b)
                if len(p) >= MIN_LEN and p.isalpha() and p not in table}
    return table


def parts(word: str, table: dict, threshold: float, deep: bool = True) -> list[str]:
    if len(word) < MIN_LEN or word not in table:
        return []
    score, a, b = table[word]
    if score <= threshold or a == word:
        return []
    if not deep:
        return [a, b]
    return [a, b, *parts(a, table, threshold), *parts(b, table, threshold)]


class _IndexOnly(_analyzers.Analyzer):
    """Splits passages' compounds but queries' words as ``german`` does."""

    def query_terms(self, query_words: list[str]) -> list[str]:
        return _analyzers.get_analyzer("exact-german").query_terms(query_words)


def german_variant(table: dict, threshold: float, deep: bool = True,
                   index_only: bool = False) -> Callable[[], _analyzers.Analyzer]:
    def factory() -> _analyzers.Analyzer:
        stop = _analyzers.stopwords("de")
        stem_words = _analyzers.Stemmer.Stemmer("german").stemWords

        def terms_of(ws: list[str]) -> list[str]:
            out: list[str] = []
            for w in ws:
                if w in stop:
                    continue
                out.append(w)
                out.extend(p for p in parts(w, table, threshold, deep) if p not in stop)
            return stem_words(out)

        return (_IndexOnly if index_only else _analyzers.Analyzer)("german", terms_of)

    return factory


def install(variant: str, table: dict) -> None:
    if variant != "base":
        kind, threshold = variant.split(":", 1)
        _analyzers._FACTORIES["exact-german"] = _analyzers._FACTORIES["german"]
        _analyzers._FACTORIES["german"] = german_variant(table, float(threshold), deep=kind == "split",
                                                         index_only=kind == "index")
    _analyzers.get_analyzer.cache_clear()
    _analyzers.analyzer_for.cache_clear()


def vocabulary() -> set[str]:
    enc = qa_sets.load(qa_sets.ENCYCLOPEDIA)
    texts = [f"{p.title} {p.text}" for p in enc.passages.values()] + [q.text for q in enc.queries.values()]
    beir = load_beir(GERMAN, "test")
    texts += [f"{t} {x}" for _, t, x in beir.corpus] + list(beir.queries.values())
    return {w for t in texts for w in words(t)}


def collections(work: Path, analyzer: str) -> list[tuple[str, ml.KnowledgeBase, dict]]:
    work.mkdir(parents=True, exist_ok=True)
    out = []
    enc = qa_sets.load(qa_sets.ENCYCLOPEDIA)
    views = ("de",) if analyzer == "german" else ("de", "mixed")
    for view in views:
        kb, all_groups = ml.encyclopedia_view(work, enc, view, analyzer)
        # The mixed view's English-only groups see no German analysis at all.
        groups = {g: [(text, rel) for _, text, rel in qs] for g, qs in all_groups.items()
                  if view != "mixed" or "de" in g.rsplit(" ", 1)[0]}
        out.append((f"encyclopedia[{view}]", kb, groups))
    beir = load_beir(GERMAN, "test")
    kb = ml._store(work / f"german-qa-{analyzer}.db",
                   ((i, ml._text(t, x), "de") for i, t, x in beir.corpus if (t + x).strip()), analyzer)
    out.append(("german-qa", kb, {"test": [(text, {d for d, g in beir.qrels[q].items() if g > 0})
                                             for q, text in beir.queries.items()]}))
    return out


def _metrics(ranked: list[str], rel: set[str]) -> dict[str, float]:
    return {"ndcg10": ml.ndcg10(ranked, rel), "r10": len(rel & set(ranked[:10])) / len(rel),
            "r100": len(rel & set(ranked)) / len(rel), "p1": float(bool(ranked) and ranked[0] in rel)}


def quality_one(work: Path, variant: str, table: dict) -> None:
    install(variant, table)
    settings = {"keyword": {"mode": "keyword"},
                "adaptive": {"mode": "hybrid", "fusion": "adaptive"}}
    for analyzer in ("german", "auto"):
        for name, kb, groups in collections(work / variant.replace(":", "_"), analyzer):
            for group, queries in sorted(groups.items()):
                row: dict[str, object] = {"variant": variant, "analyzer": analyzer,
                                          "collection": name, "group": group, "n": len(queries)}
                for setting, kw in settings.items():
                    per = [_metrics([h.document_id for h in kb.search(ml.ACTOR, text, limit=ml.DEPTH,
                                                                       max_per_document=1, **kw)], rel)
                           for text, rel in queries]
                    for m in per[0]:
                        row[f"{setting} {m}"] = round(statistics.fmean(p[m] for p in per), 4)
                print(json.dumps(row), flush=True)
            kb.close()


def overhead(python: str, table: dict, rounds: int) -> None:
    """Analysis of German queries (stop words, splits, stems) with and without decompounding,
    alternating query by query in one process; and the splitter's own cost per query, timed in
    its interpreter (the same queries' words, a fresh splitter call each, no cache)."""
    enc = qa_sets.load(qa_sets.ENCYCLOPEDIA)
    queries = [q.text for q in enc.queries.values() if q.language == "de"]
    queries += list(load_beir(GERMAN, "test").queries.values())
    base = _analyzers._FACTORIES["german"]()
    split = german_variant(table, 0.0)()
    times: dict[str, list[float]] = {"base": [], "split": []}
    for r in range(rounds):
        for i, q in enumerate(queries):
            pair = [("base", base), ("split", split)]
            for name, an in (pair if (i + r) % 2 == 0 else pair[::-1]):
                t = time.perf_counter()
                an.query_terms(words(q))
                times[name].append((time.perf_counter() - t) * 1000)
    script = ("import json, sys, time, statistics\nfrom charsplit_fst import Splitter\ns = Splitter()\n"
              "qs = json.load(sys.stdin)\nspent = []\n"
              f"for _ in range({rounds}):\n"
              "    for ws in qs:\n        t = time.perf_counter()\n"
              "        for w in ws:\n            s.split_compound(w)\n"
              "        spent.append((time.perf_counter() - t) * 1000)\n"
              "spent.sort()\n"
              "print(json.dumps({'p50': statistics.median(spent), 'p95': spent[int(.95 * len(spent))]}))")
    qwords = [[w for w in words(q) if len(w) >= MIN_LEN and w.isalpha()] for q in queries]
    res = json.loads(subprocess.run([python, "-c", script], input=json.dumps(qwords),
                                    capture_output=True, text=True, check=True).stdout)
    diffs = [s - b for s, b in zip(times["split"], times["base"], strict=True)]
    print(json.dumps({"queries": len(queries), "rounds": rounds,
                      **{f"analysis_{k}_p50_ms": round(statistics.median(v), 4) for k, v in times.items()},
                      "analysis_paired_difference_p50_ms": round(statistics.median(diffs), 4),
                      "splitter_calls_per_query_p50_ms": round(res["p50"], 4),
                      "splitter_calls_per_query_p95_ms": round(res["p95"], 4)}), flush=True)


def print_table(path: Path) -> None:
    """Per-group figures side by side (one column per variant), then the means over the German
    groups of the encyclopedia per split and analyzer (macro: each group one vote; micro: each
    question)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    by: dict[tuple, dict] = {}
    for r in rows:
        by.setdefault((r["analyzer"], r["collection"], r["group"]), {})[r["variant"]] = r
    metrics = ("keyword ndcg10", "keyword r100", "keyword p1", "adaptive ndcg10", "adaptive p1")
    for m in metrics:
        print(f"\n{m}\n| analyzer | collection | group | n | " + " | ".join(variants) + " |")
        for k in sorted(by, key=lambda k: (k[2].split()[-1] != "dev", k)):
            d = by[k]
            print(f"| {k[0]} | {k[1]} | {k[2]} | {d['base']['n']} | "
                  + " | ".join(f"{d[v][m]:.4f}" if v in d else "" for v in variants) + " |")
    for split in ("dev", "test"):
        for analyzer in ("auto", "german"):
            print(f"\nencyclopedia German groups, {split}, {analyzer}")
            for v in variants:
                sel = [r for r in rows if r["variant"] == v and r["analyzer"] == analyzer
                       and r["collection"] != "german-qa" and r["group"].endswith(split)]
                n = sum(r["n"] for r in sel)
                print(f"  {v:11s} " + "  ".join(
                    f"{m}: macro {statistics.fmean(r[m] for r in sel):.4f} "
                    f"micro {sum(r[m] * r['n'] for r in sel) / n:.4f}" for m in metrics))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=("quality", "overhead", "table"))
    ap.add_argument("results", nargs="?", type=Path, help="table: the quality command's output")
    ap.add_argument("--splitter-python")
    ap.add_argument("--work", type=Path, default=Path("/tmp/evidex-decompound"))
    ap.add_argument("--variants", default="base,split1:0.0,split1:0.5,split1:0.7,split:0.5,split:0.7")
    ap.add_argument("--variant", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    if args.command == "table":
        print_table(args.results)
        return
    if not args.splitter_python:
        ap.error("--splitter-python is required (a Python 3.12 with charsplit-fst installed)")
    args.work.mkdir(parents=True, exist_ok=True)
    cached = args.work / "splits.json"
    if not cached.exists():
        cached.write_text(json.dumps(split_table(args.splitter_python, vocabulary())))
    table = {w: tuple(v) for w, v in json.loads(cached.read_text()).items()}
    if args.command == "overhead":
        overhead(args.splitter_python, table, args.rounds)
    elif args.variant:
        quality_one(args.work, args.variant, table)
    else:
        for v in args.variants.split(","):
            subprocess.run([sys.executable, __file__, "quality", "--splitter-python", args.splitter_python,
                            "--work", str(args.work), "--variant", v], check=True)


if __name__ == "__main__":
    main()
