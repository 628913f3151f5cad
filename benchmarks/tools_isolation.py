"""A slow or hostile tool service against a running `evidex serve`: does it stall anyone else?

    .venv/bin/python benchmarks/tools_isolation.py [--searches 200] [--peer /work/main/.venv/bin/evidex]
        [--peer-searches 30]

Everything is real and local: `evidex serve` (one worker, the default two store handles) over
a keyword store of the example shop (tenant acme) and one page of another tenant (globex), and
a tools service in this process whose paths answer after 5 s (``/slow``), send their status
line and headers a byte a second (``/drip``), or answer at once (``/instant``).

1. Slow tool (issue 37's target: another tenant's /v1/search p99 within 2x its baseline): globex's
   /v1/search, ``--searches`` requests one after another, first alone, then while six acme
   questions to the 5 s tool are always under way (each asker asks again as soon as answered).
2. Slow drip (target: 0 connections outlive their deadline by more than 1 s): one acme question
   asking 16 tools that drip, each with a 4 s deadline, sent three times, while a globex
   customer asks its instant tool every 0.5 s. The tools service sees each connection open and
   close (closure noticed within 50 ms: it polls the socket between bytes); a connection
   outlives its deadline by ``close - (open + 4 s)``.

With ``--peer``, the same runs against another build's `evidex` (e.g. main's), side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import yaml

from _service import free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "examples" / "shop"
EVIDEX = str(Path(sys.executable).with_name("evidex"))
KEYS = {"acme-customer": {"tenant": "acme", "groups": ["customers"], "visibilities": ["public"],
                          "claims": {"customer_id": "C-1001"}},
        "globex-customer": {"tenant": "globex", "groups": ["customers"], "visibilities": ["public"],
                            "claims": {"customer_id": "G-7"}}}
SLOW_S = 5.0
DRIP_DEADLINE_S = 4.0
ORDER = json.dumps({"order_id": "12345", "status": "shipped", "delivery": "2026-12-03"}).encode()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


class Tools:
    """The tools service: ``/slow``, ``/drip``, ``/instant``; ``drips`` records (opened,
    closed) of every drip connection (``time.monotonic()``)."""

    def __init__(self) -> None:
        self.drips: list[tuple[float, float]] = []
        #: Drip connections open now: id -> opened.
        self.open: dict[int, float] = {}
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.startswith("/drip"):
                    owner.drip(self)
                    return
                if self.path.startswith("/slow"):
                    time.sleep(SLOW_S)
                head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                with contextlib.suppress(OSError):  # the client gave up: what is measured
                    self.wfile.write(head % len(ORDER) + ORDER)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def drip(self, h: BaseHTTPRequestHandler) -> None:
        opened = time.monotonic()
        with self.lock:
            self.open[id(h)] = opened
        sock = h.connection
        reply = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(
            ORDER) + ORDER
        try:
            for byte in reply:
                sock.sendall(bytes([byte]))
                for _ in range(20):  # a byte a second; the client's close seen within 50 ms
                    ready, _, _ = select.select([sock], [], [], 0.05)
                    if ready and sock.recv(1, socket.MSG_PEEK) == b"":
                        raise ConnectionResetError
        except OSError:
            pass
        with self.lock:
            self.drips.append((opened, time.monotonic()))
            del self.open[id(h)]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def build_store(evidex: str, db: Path, tmp: Path) -> None:
    globex = tmp / "globex"
    globex.mkdir()
    (globex / "returns.md").write_text("# Globex returns\n\nZebra widgets may be returned within 90 days "
                                       "with the receipt.\n", encoding="utf-8")
    for args in (["ingest", str(SHOP / "site"), "--tenant", "acme", "--groups", "customers",
                  "--visibility", "public", "--language", "en", "--split", "heading"],
                 ["ingest", str(globex), "--tenant", "globex", "--groups", "customers",
                  "--visibility", "public", "--language", "en"]):
        subprocess.run([evidex, "--db", str(db), "--embedder", "none", *args], check=True,
                       capture_output=True, text=True)


def tool(tools: Tools, tool_id: str, path: str, tenant: str, when: str, timeout_ms: int) -> dict[str, Any]:
    return {"id": tool_id, "description": "An order", "url": tools.base + path + "/{customer_id}/{order_id}",
            "parameters": {"order_id": {"from": "question", "pattern": r"\b\d{5}\b"},
                           "customer_id": {"from": "actor", "claim": "customer_id"}},
            "when": [when], "fields": {"status": "/status"}, "render": "Order {order_id}: {status}.",
            "timeout_ms": timeout_ms, "retries": 0, "tenant": tenant, "groups": ["customers"],
            "visibility": "public"}


def write_config(path: Path, tools: Tools) -> None:
    import hashlib

    keys = [{"key_sha256": hashlib.sha256(k.encode()).hexdigest(), "name": k, **v} for k, v in KEYS.items()]
    entries = [tool(tools, "slow", "/slow", "acme", "order", int(SLOW_S * 1000) + 1000),
               tool(tools, "instant", "/instant", "globex", "order", 2000),
               *(tool(tools, f"drip-{i}", "/drip", "acme", "parcel", int(DRIP_DEADLINE_S * 1000))
                 for i in range(16))]
    path.write_text(yaml.safe_dump({"server": {"api_keys": keys, "tool_hosts": [tools.base],
                                               "rate_limit_per_minute": 1_000_000,
                                               "failed_auth_per_minute": 1_000_000},
                                    "tools": entries}, sort_keys=False), encoding="utf-8")


def ask(url: str, key: str, question: str) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    r = httpx.post(url + "/v1/answer", json={"question": question},
                   headers={"Authorization": f"Bearer {key}"}, timeout=120)
    return time.perf_counter() - t0, r.json() if r.status_code == 200 else {"http": r.status_code}


def slow_tool(url: str, searches: int) -> dict[str, Any]:
    body = {"query": "zebra widgets returned", "top_k": 3}
    headers = {"Authorization": "Bearer globex-customer"}
    with httpx.Client(base_url=url, timeout=120) as c:
        def search() -> float:
            t0 = time.perf_counter()
            r = c.post("/v1/search", json=body, headers=headers)
            assert r.status_code == 200, r.text
            return (time.perf_counter() - t0) * 1000

        for _ in range(20):
            search()
        alone = [search() for _ in range(searches)]
        stop = threading.Event()
        answered: list[str] = []

        def asker() -> None:
            while not stop.is_set():
                _, ans = ask(url, "acme-customer", "Where is my order 12345?")
                answered.append(str(ans.get("status")))

        askers = [threading.Thread(target=asker) for _ in range(6)]
        for t in askers:
            t.start()
        time.sleep(0.5)
        during = [search() for _ in range(searches)]
        stop.set()
        for t in askers:
            t.join()
    return {"alone_p50": pct(alone, 50), "alone_p99": pct(alone, 99), "during_p50": pct(during, 50),
            "during_p99": pct(during, 99), "ratio_p99": pct(during, 99) / pct(alone, 99),
            "answers": len(answered), "answered": answered.count("answered")}


def slow_drip(url: str, tools: Tools, rounds: int = 3) -> dict[str, Any]:
    with tools.lock:
        tools.drips.clear()
    stop = threading.Event()
    instant: list[tuple[float, str]] = []

    def other_tenant() -> None:
        while not stop.is_set():
            took, ans = ask(url, "globex-customer", "Where is my order 12345?")
            instant.append((took, str(ans.get("status"))))
            time.sleep(0.5)

    watcher = threading.Thread(target=other_tenant)
    watcher.start()
    answers = []
    for _ in range(rounds):
        answers.append(ask(url, "acme-customer", "Where is my parcel 12345?"))
    time.sleep(3.0)  # every connection the service left open closes or is seen open
    stop.set()
    watcher.join()
    with tools.lock:  # a connection still open counts as closed now
        drips = list(tools.drips) + [(opened, time.monotonic()) for opened in tools.open.values()]
    late = [closed - (opened + DRIP_DEADLINE_S) for opened, closed in drips]
    return {"connections": len(drips), "still_open": len(drips) - len(tools.drips),
            "outlived_by_more_than_1s": sum(x > 1.0 for x in late),
            "most_outlived_s": max(late) if late else None,
            "answer_s": [round(t, 2) for t, _ in answers],
            "answer_reasons": sorted({str(a.get("reason")) for _, a in answers}),
            "other_tenant_n": len(instant), "other_tenant_max_s": max(t for t, _ in instant),
            "other_tenant_statuses": sorted({s for _, s in instant})}


def run(evidex: str, searches: int, tmp: Path) -> dict[str, Any]:
    tools = Tools()
    db = tmp / "kb.db"
    build_store(evidex, db, tmp)
    config = tmp / "config.yaml"
    write_config(config, tools)
    port = free_port()
    log = tmp / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([evidex, "--db", str(db), "serve", "--config", str(config),
                                 "--port", str(port)], stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(proc, url, log)
        return {"slow_tool": slow_tool(url, searches), "slow_drip": slow_drip(url, tools)}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        tools.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--searches", type=int, default=200)
    ap.add_argument("--peer", default=None, help="another build's evidex, run the same way")
    ap.add_argument("--peer-searches", type=int, default=30,
                    help="searches of each phase for the peer (on main each may wait seconds)")
    args = ap.parse_args()
    print(f"# tools isolation — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, Python "
          f"{platform.python_version()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}\n")
    builds = [("this tree", EVIDEX, args.searches)] + (
        [("peer", args.peer, args.peer_searches)] if args.peer else [])
    results = {}
    for name, evidex, searches in builds:
        with tempfile.TemporaryDirectory(prefix="evidex-isolation-") as tmp:
            results[name] = run(evidex, searches, Path(tmp))
        print(f"{name} ({evidex}): done, load average {os.getloadavg()[0]:.1f}", flush=True)
    print("\n## 1. Another tenant's /v1/search (ms) alone and while six answers wait for a 5 s tool\n")
    print("| build | alone p50 | alone p99 | during p50 | during p99 | p99 ratio | answers (answered) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        s = r["slow_tool"]
        print(f"| {name} | {s['alone_p50']:.1f} | {s['alone_p99']:.1f} | {s['during_p50']:.1f} | "
              f"{s['during_p99']:.1f} | {s['ratio_p99']:.2f} | {s['answers']} ({s['answered']}) |")
    print("\n## 2. Sixteen tools dripping their headers a byte a second, deadline 4 s, three questions\n")
    print("| build | connections | outlived deadline by > 1 s | most outlived (s) | answer (s) | "
          "other tenant: asks, slowest (s), statuses |")
    print("|---|---:|---:|---:|---|---|")
    for name, r in results.items():
        d = r["slow_drip"]
        most = f"{d['most_outlived_s']:.2f}" if d["most_outlived_s"] is not None else "-"
        print(f"| {name} | {d['connections']} | {d['outlived_by_more_than_1s']} | {most} | "
              f"{d['answer_s']} {d['answer_reasons']} | {d['other_tenant_n']}, "
              f"{d['other_tenant_max_s']:.2f}, {d['other_tenant_statuses']} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    print("\n" + json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
