"""Load test of ``POST /v1/search`` on SciFact through the real service (uvicorn, N workers).

    .venv/bin/python benchmarks/service_search.py [--workers 2] [--handles 2] [--seconds 20]
        [--rate 300] [--concurrency 8] [--modes keyword,hybrid] [--embedder multilingual-e5-small]
        [--cold-only] [--cold-seconds 10]

Builds (once, in benchmarks/.work/) a SciFact store (english analyzer, passage vectors from the
persistent embedding cache), starts ``evidex serve --workers N`` on 127.0.0.1 and drives it from
this process with an asyncio + httpx load generator over keep-alive connections on loopback.
The load generator shares the 2 cores with the server: its own CPU time is reported.

For each mode:
* warm-up: every query once (fills BM25 weight and query-vector caches);
* closed loop: ``--concurrency`` requests always in flight for ``--seconds``: the throughput the
  service sustains and its latency at that load;
* open loop: requests sent at a fixed ``--rate`` for ``--seconds``; latency counted from the
  scheduled send time (no coordinated omission): the p99 at the target rate.
For hybrid also a cold run: every request's text is unique (a counter word in front), so no
request finds its query vector in the cache and each one embeds its query; the server's CPU
seconds over that loop give requests per server CPU-second, which a shared machine distorts
less than the wall rate. ``--cold-only``: after a short warm-up, only the cold run.

The 300 SciFact test queries are cut to the API's query contract (at most 12 words and 200
characters): 131 of them are longer, and the service answers those with 422 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from _service import free_port, wait_healthy
from evidex import KnowledgeBase
from evidex.evaluation import corpus_documents, load_beir
from evidex.query import DEFAULT_LIMITS, parse_query

HERE = Path(__file__).resolve().parent
_DATA = Path("shared") / "data" / "beir" / "scifact"
SCIFACT = next((up / _DATA for up in HERE.parents if (up / _DATA).is_dir()), HERE.parents[1] / _DATA)
WORK = HERE / ".work"
KEY = "bench-key-" + "0" * 16



def api_query(text: str) -> str:
    """The longest prefix of whole words the API's query contract accepts."""
    words: list[str] = []
    for w in text.split():
        cand = " ".join([*words, w])
        try:
            parse_query(cand, DEFAULT_LIMITS)
        except ValueError:
            break
        words.append(w)
    return " ".join(words)


def build_store(embedder: str) -> Path:
    db = WORK / f"scifact-service-{embedder}.db"
    if db.exists():
        return db
    WORK.mkdir(exist_ok=True)
    beir = load_beir(SCIFACT)
    kb = KnowledgeBase.open(db.with_suffix(".tmp"), analyzer="english", embedder=embedder)
    docs = list(corpus_documents(beir))
    for i in range(0, len(docs), 1000):
        kb.ingest(docs[i : i + 1000], split="document")
    kb.optimize()
    kb.close()
    db.with_suffix(".tmp").rename(db)
    return db


def start(db: Path, workers: int, handles: int) -> tuple[subprocess.Popen[bytes], str]:
    config = WORK / "service-bench.yaml"
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    config.write_text(json.dumps({"server": {
        "api_keys": [{"key_sha256": digest, "tenant": "eval", "groups": ["eval"],
                      "visibilities": ["internal"], "name": "bench"}],
        "rate_limit_per_minute": 10_000_000, "store_handles": handles}}))
    port = free_port()
    env = {**os.environ, "EVIDEX_EMBED_THREADS": "1"}  # one embedding thread per worker: 2 workers, 2 cores
    log_path = WORK / "service-bench.log"
    log = log_path.open("wb")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "evidex"), "--db", str(db), "serve",
                             "--config", str(config), "--workers", str(workers), "--port", str(port)],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, url, log_path)
    return proc, url


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def summary(lat: list[float], errors: int, seconds: float, cpu: float) -> dict[str, Any]:
    return {"requests": len(lat), "errors": errors, "req_per_s": round(len(lat) / seconds, 1),
            "p50_ms": round(pct(lat, 50) * 1000, 1), "p90_ms": round(pct(lat, 90) * 1000, 1),
            "p99_ms": round(pct(lat, 99) * 1000, 1), "max_ms": round(max(lat) * 1000, 1) if lat else None,
            "loadgen_cpu_share_of_one_core": round(cpu / seconds, 2)}


def server_cpu(pid: int) -> float:
    """CPU seconds (user + system) of the server process and all its descendants (the workers)."""
    stats = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except (OSError, ValueError):
            continue
        fields = raw[raw.rindex(")") + 2 :].split()  # after "pid (comm) "
        stats[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])))
    tree = {pid}
    while True:
        more = {p for p, (ppid, _) in stats.items() if ppid in tree} - tree
        if not more:
            break
        tree |= more
    total = sum(stats[p][1] for p in tree if p in stats)
    return total / os.sysconf("SC_CLK_TCK")


def cpu_now() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def closed_loop(url: str, bodies: list[dict[str, Any]], concurrency: int, seconds: float,
                      total: int | None = None) -> dict[str, Any]:
    """``concurrency`` requests in flight until ``seconds`` passed (or ``total`` were sent)."""
    lat: list[float] = []
    errors = 0
    counter = 0
    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30,
                                 limits=httpx.Limits(max_connections=concurrency)) as client:
        stop = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal errors, counter
            while time.perf_counter() < stop and (total is None or counter < total):
                body = bodies[counter % len(bodies)]
                counter += 1
                t = time.perf_counter()
                r = await client.post("/v1/search", json=body)
                if r.status_code == 200:
                    lat.append(time.perf_counter() - t)
                else:
                    errors += 1

        c0, t0 = cpu_now(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        took = time.perf_counter() - t0
    return summary(lat, errors, took, cpu_now() - c0)


async def open_loop(url: str, bodies: list[dict[str, Any]], rate: float, seconds: float) -> dict[str, Any]:
    lat: list[float] = []
    errors = 0
    headers = {"Authorization": f"Bearer {KEY}"}
    n = int(rate * seconds)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30,
                                 limits=httpx.Limits(max_connections=256)) as client:
        async def one(i: int, scheduled: float) -> None:
            nonlocal errors
            r = await client.post("/v1/search", json=bodies[i % len(bodies)])
            if r.status_code == 200:
                lat.append(time.perf_counter() - scheduled)  # from the scheduled send time
            else:
                errors += 1

        c0, t0 = cpu_now(), time.perf_counter()
        tasks: list[asyncio.Task[None]] = []
        sustained = True
        for i in range(n):
            scheduled = t0 + i / rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if sum(not t.done() for t in tasks[-600:]) >= 500:
                sustained = False  # the service fell behind by 500 requests: stop piling on
                break
            tasks.append(asyncio.create_task(one(i, scheduled)))
        await asyncio.gather(*tasks)
        took = time.perf_counter() - t0
    out = summary(lat, errors, took, cpu_now() - c0)
    out.update(target_rate=rate, sustained=sustained)
    return out


WRK_SCRIPT = """
local bodies = {}
for line in io.lines(os.getenv("EVIDEX_BODIES")) do bodies[#bodies + 1] = line end
local i = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("EVIDEX_KEY")
request = function()
  i = i % #bodies + 1
  return wrk.format(nil, "/v1/search", nil, bodies[i])
end
"""


def run_wrk(url: str, bodies: list[dict[str, Any]], connections: int, seconds: float) -> dict[str, Any]:
    """Closed loop driven by wrk (C, epoll: a small CPU share, so the server gets the cores)."""
    import re
    import shutil

    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("--wrk needs the wrk binary (Debian package wrk)")
    (WORK / "bodies.jsonl").write_text("\n".join(json.dumps(b) for b in bodies) + "\n")
    (WORK / "search.lua").write_text(WRK_SCRIPT)
    env = {**os.environ, "EVIDEX_BODIES": str(WORK / "bodies.jsonl"), "EVIDEX_KEY": KEY}
    def children_cpu() -> float:  # wrk is a child that has exited and been waited for
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    c0 = children_cpu()
    out = subprocess.run([wrk, "-t1", f"-c{connections}", f"-d{int(seconds)}s", "--latency",
                          "-s", str(WORK / "search.lua"), url], env=env, capture_output=True, text=True,
                         check=True).stdout
    def ms(label: str) -> float:
        m = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        assert m, out
        return float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]

    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors:(.*)", out)
    return {"req_per_s": float(rps.group(1)) if rps else 0.0, "p50_ms": ms("50"), "p90_ms": ms("90"),
            "p99_ms": ms("99"), "non_2xx": int(bad.group(1)) if bad else 0,
            "socket_errors": errors.group(1).strip() if errors else "none", "connections": connections,
            "loadgen_cpu_share_of_one_core": round((children_cpu() - c0) / seconds, 2)}


def cold_loop(pid: int, url: str, queries: list[str], mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """Closed loop where every request's text is new (a counter word in front), so each one
    embeds its query; with the server's CPU seconds over the loop."""
    cold = [{"query": api_query(f"n{i} {q}"), "mode": mode, "top_k": 6}
            for i, q in enumerate(queries * 40)]
    s0 = server_cpu(pid)
    out = asyncio.run(closed_loop(url, cold, args.concurrency, args.cold_seconds))
    # Requests per CPU-second of the server: on a shared machine, what 2 idle cores would serve
    # is about 2 x this (the wall rate depends on others' load).
    used = server_cpu(pid) - s0
    out["server_cpu_s"] = round(used, 2)
    out["requests_per_server_cpu_s"] = round(out["requests"] / used, 1) if used else None
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--handles", type=int, default=2, help="server.store_handles per worker")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rate", type=float, default=300.0)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--modes", default="keyword,hybrid")
    ap.add_argument("--embedder", default="multilingual-e5-small")
    ap.add_argument("--cold-seconds", type=float, default=10.0)
    ap.add_argument("--cold-only", action="store_true",
                    help="for the vector modes only the closed loop of never-seen questions")
    ap.add_argument("--wrk", action="store_true", help="also drive a closed loop with wrk (C load generator)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # so the server is stopped in `finally`
    beir = load_beir(SCIFACT)
    queries = [api_query(q) for q in beir.queries.values()]
    db = build_store(args.embedder)
    proc, url = start(db, args.workers, args.handles)
    report: dict[str, Any] = {
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M"), "workers": args.workers, "store_handles": args.handles,
        "embedder": args.embedder, "queries": len(queries),
        "load_average_before": os.getloadavg()[0],
        "cut_to_contract": sum(q != " ".join(t.split())
                               for q, t in zip(queries, beir.queries.values(), strict=True)),
    }
    try:
        for mode in args.modes.split(","):
            bodies = [{"query": q, "mode": mode, "top_k": 6} for q in queries]
            r: dict[str, Any] = {}
            if args.cold_only and mode != "keyword":
                # Each worker loads its model on its first request: not part of the loop.
                warm = [{"query": api_query(f"w{i} {q}"), "mode": mode, "top_k": 6}
                        for i, q in enumerate(queries)]
                r["warmup"] = asyncio.run(closed_loop(url, warm, args.concurrency, 600,
                                                      total=8 * args.concurrency))
                r["cold_closed_loop"] = cold_loop(proc.pid, url, queries, mode, args)
                report[mode] = r
                print(json.dumps({mode: r}, indent=1), flush=True)
                continue
            # Query vectors are cached per worker process (shared by its handles); BM25 weights per
            # handle. Every query 2 x handles x workers times leaves a given (query, worker) pair
            # uncached with probability 2^-8, i.e. ~1 of the 600 pairs.
            r["warmup"] = asyncio.run(closed_loop(url, bodies, 4, 600,
                                                  total=len(bodies) * 2 * args.handles * args.workers))
            r["closed_loop"] = asyncio.run(closed_loop(url, bodies, args.concurrency, args.seconds))
            r["open_loop"] = asyncio.run(open_loop(url, bodies, args.rate, args.seconds))
            if args.wrk:
                for conns in (4, 8, 16):
                    r[f"wrk_closed_loop_c{conns}"] = run_wrk(url, bodies, conns, args.seconds)
            if mode != "keyword":
                r["cold_closed_loop"] = cold_loop(proc.pid, url, queries, mode, args)
            report[mode] = r
            print(json.dumps({mode: r}, indent=1), flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    report["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(report, indent=1))
    (WORK / "service_search.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
