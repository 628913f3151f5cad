"""The default embedder of two source trees of evidex side by side (e.g. main and a branch).

    mkdir -p /tmp/peer && git archive main src | tar -x -C /tmp/peer
    .venv/bin/python benchmarks/embedder_trees.py --tree main=/tmp/peer/src --tree branch=src \
        [--rounds 3] [--passages 16] [--queries 50]

Each measurement is a fresh process whose ``PYTHONPATH`` puts one tree's ``src`` first (same
virtualenv, same packages, same graph cache); the trees alternate within every round and the
order flips from round to round, so both see the same load on a shared machine. Per round and
tree:

* memory: a process that imports evidex, loads SciFact, loads the default embedder with the
  default thread count, embeds 50 abstracts as one batch and 50 queries one at a time; its
  VmHWM (peak resident set). A process that stops after loading SciFact is the baseline.
* speed, ``EVIDEX_EMBED_THREADS`` 1 and 2: passages/s of ``embed_passages`` on this round's
  slice of SciFact abstracts (title + text, as ingest embeds them; no vector cache involved),
  wall and CPU time; then this round's slice of SciFact queries one at a time on the query
  session (one thread): wall and CPU ms per query, also for the 15-20-token questions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
_DATA = Path("shared") / "data" / "beir" / "scifact"
SCIFACT = next((up / _DATA for up in HERE.parents if (up / _DATA).is_dir()), HERE.parents[1] / _DATA)

_WORKER = """
import json, sys, time
from pathlib import Path
task = json.loads(sys.argv[1])
import evidex
from evidex.evaluation import corpus_documents, load_beir
beir = load_beir(Path(task["scifact"]))
texts = [d.text for d in corpus_documents(beir)]
queries = list(beir.queries.values())
out = {"evidex": evidex.__file__}

def peak_mb():
    # VmHWM, not ru_maxrss: the latter keeps the parent's high-water mark across fork and exec.
    status = open("/proc/self/status").read().splitlines()
    return {k: int(next(ln for ln in status if ln.startswith(k + ":")).split()[1]) // 1024
            for k in ("VmHWM", "VmRSS")}

if task["kind"] == "baseline":
    out.update(peak_mb())
else:
    from evidex.embed import DEFAULT_EMBEDDER, get_embedder
    model = get_embedder(DEFAULT_EMBEDDER)
    out["model"] = DEFAULT_EMBEDDER
    if task["kind"] == "memory":
        model.embed_passages(texts[:50])
        for q in queries[:50]:
            model.embed_queries([q])
        out.update(peak_mb())
    else:
        model.embed_passages(texts[-2:])  # load outside the clock
        model.embed_queries(["warm up"])
        chunk = texts[task["p0"]:task["p1"]]
        t, c = time.perf_counter(), time.process_time()
        model.embed_passages(chunk)
        out["passages"] = len(chunk)
        out["passages_wall_s"] = time.perf_counter() - t
        out["passages_cpu_s"] = time.process_time() - c
        asked = queries[task["q0"]:task["q1"]]
        tokenizer = model._load().tokenizer
        out["query_tokens"] = [len(ids) + 2 for ids in tokenizer.encode(["query: " + q for q in asked])]
        out["query_wall_ms"], out["query_cpu_ms"] = [], []
        for q in asked:
            t, c = time.perf_counter(), time.process_time()
            model.embed_queries([q])
            out["query_wall_ms"].append((time.perf_counter() - t) * 1000)
            out["query_cpu_ms"].append((time.process_time() - c) * 1000)
        out.update(peak_mb())
print(json.dumps(out))
"""


def run(tree: Path, task: dict[str, object], threads: int | None) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(tree), "EVIDEX_QUERY_THREADS": "1"}
    env.pop("EVIDEX_EMBED_THREADS", None)
    if threads is not None:
        env["EVIDEX_EMBED_THREADS"] = str(threads)
    done = subprocess.run([sys.executable, "-c", _WORKER, json.dumps(task)], env=env, check=True,
                          capture_output=True, text=True)
    out: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    expected = tree.resolve() / "evidex" / "__init__.py"
    if Path(str(out["evidex"])).resolve() != expected:
        raise SystemExit(f"the worker imported {out['evidex']}, not {expected}")
    return out


def pcts(values: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(values), 2),
            "p95": round(float(np.percentile(values, 95)), 2), "n": len(values)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", action="append", required=True, help="name=path of a tree's src folder")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--passages", type=int, default=16, help="abstracts per tree, round and thread count")
    ap.add_argument("--queries", type=int, default=50, help="queries per tree and round")
    args = ap.parse_args()
    trees = {name: Path(path).resolve() for name, path in (t.split("=", 1) for t in args.tree)}
    names = list(trees)
    runs: dict[str, dict[str, list[dict[str, object]]]] = {
        n: {"baseline": [], "memory": [], "speed1": [], "speed2": []} for n in names}
    report: dict[str, object] = {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "cores": os.cpu_count(),
                                 "load_average_before": os.getloadavg(),
                                 "trees": {n: str(p) for n, p in trees.items()}}
    for r in range(args.rounds):
        order = names if r % 2 == 0 else names[::-1]
        for kind, threads in (("baseline", None), ("memory", None), ("speed1", 1), ("speed2", 2)):
            for name in order:
                p0 = (2 * r + (kind == "speed2")) * args.passages
                task = {"kind": kind.rstrip("12"), "scifact": str(SCIFACT), "p0": p0,
                        "p1": p0 + args.passages, "q0": r * args.queries, "q1": (r + 1) * args.queries}
                runs[name][kind].append(run(trees[name], task, threads))
        print(json.dumps({"round": r, "load": os.getloadavg()[0],
                          "memory": {n: runs[n]["memory"][-1]["VmHWM"] for n in names}}), flush=True)
    summary: dict[str, dict[str, object]] = {}
    for name in names:
        s: dict[str, object] = {
            "baseline_vmhwm_mb": [o["VmHWM"] for o in runs[name]["baseline"]],
            "embedder_process_vmhwm_mb": [o["VmHWM"] for o in runs[name]["memory"]],
        }
        for kind in ("speed1", "speed2"):
            rows = runs[name][kind]
            done = sum(int(o["passages"]) for o in rows)  # type: ignore[call-overload]
            wall = sum(float(o["passages_wall_s"]) for o in rows)  # type: ignore[arg-type]
            cpu = sum(float(o["passages_cpu_s"]) for o in rows)  # type: ignore[arg-type]
            s[f"passages_per_s_{kind[-1]}_thread"] = {"wall": round(done / wall, 2),
                                                      "cpu": round(done / cpu, 2), "passages": done}
            if kind == "speed1":
                lat: dict[str, list[float]] = {"wall": [], "cpu": [], "wall_15_20": [], "cpu_15_20": []}
                for o in rows:
                    for n, w, c in zip(o["query_tokens"], o["query_wall_ms"], o["query_cpu_ms"], strict=True):  # type: ignore[call-overload]
                        lat["wall"].append(w)
                        lat["cpu"].append(c)
                        if 15 <= n <= 20:
                            lat["wall_15_20"].append(w)
                            lat["cpu_15_20"].append(c)
                s["query_ms_1_thread"] = {k: pcts(v) for k, v in lat.items() if v}
        summary[name] = s
    report["summary"] = summary
    report["load_average_after"] = os.getloadavg()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
