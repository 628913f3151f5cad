"""What ``/metrics`` costs on the `make run` demo (issue 47): the scrape's p50, and ``/v1/search``
p50 with and without metrics, side by side in one run.

    .venv/bin/python benchmarks/metrics_cost.py [--rounds 600] [--scrapes 200] [--mode keyword]

Builds the demo as `make run` does (the example help centre on a free port, `evidex sync` of
examples/knowledge.config.yaml into a new store with the default embedding model, vectors from
the user's embedding cache), then serves that one store twice: with the configuration as
written (metrics on) and with ``server.metrics: false``. Requests alternate between the two
servers, one at a time from this process, so both see the same machine load; the demo's
questions cycle (query vectors cached after the first round in hybrid mode). The scrape is
timed with the admin key after all searches (its series then hold every route and the run log).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

from _service import free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CUSTOMER, ADMIN = "evidex-demo-customer", "evidex-demo-admin"
QUERIES = ["do my points ever expire", "return a worn jacket", "how long does shipping take",
           "exchange a size", "warranty on boots", "gift card balance", "store opening hours",
           "pay with invoice", "delete my account", "care for a down jacket"]


def demo_config(tmp: Path, site_port: int, metrics: bool) -> Path:
    text = (ROOT / "examples" / "knowledge.config.yaml").read_text(encoding="utf-8")
    text = text.replace("127.0.0.1:8765", f"127.0.0.1:{site_port}")
    text = text.replace("path: shop/", f"path: {ROOT / 'examples' / 'shop'}/")
    data = yaml.safe_load(text)
    data["server"]["metrics"] = metrics
    data["server"]["rate_limit_per_minute"] = 1_000_000  # the load is the benchmark's, not abuse
    path = tmp / f"config-{'on' if metrics else 'off'}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def serve(db: Path, config: Path, log: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(BIN / "evidex"), "--db", str(db), "--config", str(config), "serve",
                                 "--port", str(port), "--no-schedule"], env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, url, log)
    return proc, url


def p50_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=600, help="searches per server")
    ap.add_argument("--scrapes", type=int, default=200)
    ap.add_argument("--mode", default="keyword", choices=["keyword", "hybrid"])
    ap.add_argument("--off-first", action="store_true",
                    help="start the server without metrics first (the two processes differ a little "
                         "on their own: run both ways to tell that from the metrics' cost)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="evidex-metrics-"))
    env = {**os.environ, "ACME_TOOLS_TOKEN": "t", "ACME_INBOX_SECRET": "s"}
    site_port = free_port()
    site = subprocess.Popen([sys.executable, str(ROOT / "examples" / "site_server.py"), "--port",
                             str(site_port)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        subprocess.run([sys.executable, str(ROOT / "examples" / "wait_for.py"),
                        f"http://127.0.0.1:{site_port}/sitemap.xml", "30"], check=True)
        on, off = demo_config(tmp, site_port, True), demo_config(tmp, site_port, False)
        db = tmp / "evidex.db"
        t0 = time.perf_counter()
        subprocess.run([str(BIN / "evidex"), "--db", str(db), "--config", str(on), "sync"], env=env,
                       check=True, stdout=subprocess.DEVNULL)
        print(f"demo synced in {time.perf_counter() - t0:.1f} s")
        servers = {}
        pairs = [("metrics on", on), ("metrics off", off)]
        for name, config in (reversed(pairs) if args.off_first else pairs):
            proc, url = serve(db, config, tmp / f"{name.replace(' ', '-')}.log", env)
            procs.append(proc)
            servers[name] = url
        times: dict[str, list[float]] = {name: [] for name in servers}
        with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {CUSTOMER}"}) as c:
            for url in servers.values():  # warm-up: every query once on each
                for q in QUERIES:
                    c.post(url + "/v1/search", json={"query": q, "mode": args.mode}).raise_for_status()
            for i in range(args.rounds):
                q = QUERIES[i % len(QUERIES)]
                order = list(servers.items()) if i % 2 == 0 else list(reversed(servers.items()))
                for name, url in order:
                    t = time.perf_counter()
                    c.post(url + "/v1/search", json={"query": q, "mode": args.mode}).raise_for_status()
                    times[name].append(time.perf_counter() - t)
        scrapes: list[float] = []
        with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {ADMIN}"}) as c:
            for _ in range(args.scrapes):
                t = time.perf_counter()
                r = c.get(servers["metrics on"] + "/metrics")
                r.raise_for_status()
                scrapes.append(time.perf_counter() - t)
        on_p50, off_p50 = p50_ms(times["metrics on"]), p50_ms(times["metrics off"])
        load = os.getloadavg()[0]
        print(f"load average {load:.1f}; {args.rounds} {args.mode} searches per server, alternating; "
              f"{'metrics off' if args.off_first else 'metrics on'} started first")
        print(f"/v1/search p50: metrics on {on_p50:.2f} ms, metrics off {off_p50:.2f} ms, "
              f"difference {100 * (on_p50 - off_p50) / off_p50:+.1f} %")
        print(f"/metrics scrape p50 {p50_ms(scrapes):.2f} ms, p95 "
              f"{statistics.quantiles(scrapes, n=20)[-1] * 1000:.2f} ms over {args.scrapes} scrapes; "
              f"exposition {len(r.content)} bytes, {r.text.count(chr(10))} lines")
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=15)
        site.terminate()
        site.wait(timeout=15)


if __name__ == "__main__":
    main()
