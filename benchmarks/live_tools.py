"""Live tool lookups inside ``ask``: what a lookup adds to an answer, evidex's own work around the
remote call, and how long a failing tool can hold an answer up.

    .venv/bin/python benchmarks/live_tools.py [--rounds 200] [--budget-rounds 20]

Everything is real and local: the shop collection (examples/shop: versions + help centre, as
`make run` loads it) in a SQLite store with the default embedder (vectors from the embedding
cache when computed before), the example order and stock service (examples/tools_service.py) in
its own process, and the tools of examples/knowledge.config.yaml pointing at it.

1. Answer latency: the same questions answered by a handle with the tools and by one without
   (so: passages only), alternating which goes first, per question; p50/p99 of each and of the
   per-round difference.
2. evidex's work around the remote call: per round, one raw GET of the same URL with the same
   HTTP client settings (``evidex.tools._http.fetch``) and one full lookup
   (``Toolbox.asked`` + ``lookup``: parameters, URL, thread hand-off, JSON, fields, rendering,
   scanning, the citation), alternating; p50/p99 of lookup - GET (paired per round).
3. Failing tools: a local server that never answers in time, one that answers 500, and a closed
   port; each tool alone in ``ask`` with several timeout/retry settings; the slowest ``ask`` against
   the budget timeout_ms x (retries + 1) + 50 ms.
4. Credentials: the service's token in any answer, citation, trace or log record of the run.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from _service import free_port
from evidex import Actor, KnowledgeBase
from evidex.config import load_config
from evidex.tools import Toolbox, ToolConfig
from evidex.tools._http import fetch, fill_headers, new_client
from evidex.tools._url import build_url

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SHOP = EXAMPLES / "shop"
EVIDEX = str(Path(sys.executable).with_name("evidex"))
TOKEN_ENV = "ACME_TOOLS_TOKEN"
TOKEN = "bench-token-5f1c0a9e"
CUSTOMER = Actor("acme", frozenset({"customers"}), visibilities=frozenset({"public"}),
                 claims={"customer_id": "C-1001"})
QUESTIONS = {
    "order-status": "Where is my order 12345?",
    "stock": "Is the Stormline jacket JK-1107 in size L in stock in the Hamburg store?",
}



def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def row(name: str, values: list[float]) -> str:
    return (f"| {name} | {len(values)} | {pct(values, 50):.2f} | {pct(values, 99):.2f} | "
            f"{min(values):.2f} | {max(values):.2f} |")


@contextmanager
def tools_service(port: int) -> Iterator[None]:
    proc = subprocess.Popen([sys.executable, str(EXAMPLES / "tools_service.py"), "--port", str(port)],
                            env={**os.environ, TOKEN_ENV: TOKEN}, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("the example tools service did not start") from None
                time.sleep(0.1)
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class _Failing(BaseHTTPRequestHandler):
    """``/slow/...`` answers after 10 s; ``/status500/...`` answers 500 at once."""

    def do_GET(self) -> None:
        if self.path.startswith("/slow/"):
            time.sleep(10)
        body = b'{"error": "down"}'
        try:
            self.send_response(500 if self.path.startswith("/status500/") else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up long ago

    def log_message(self, *args: Any) -> None:
        pass


def build_store(db: Path) -> None:
    for args in (["ingest", str(SHOP / "versions"), "--tenant", "acme", "--split", "heading"],
                 ["ingest", str(SHOP / "site"), "--tenant", "acme", "--groups", "customers,staff",
                  "--visibility", "public", "--language", "en", "--split", "heading"]):
        subprocess.run([EVIDEX, "--db", str(db), *args], check=True, capture_output=True, text=True)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--budget-rounds", type=int, default=20)
    args = ap.parse_args()
    os.environ[TOKEN_ENV] = TOKEN
    seen_logs: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen_logs.append(self.format(record))

    logging.getLogger().addHandler(Keep(logging.DEBUG))
    logging.getLogger().setLevel(logging.DEBUG)
    exposed: list[str] = []

    def check(what: str, data: Any) -> None:
        if TOKEN in json.dumps(data, default=str):
            exposed.append(what)

    print(f"# live tools benchmark — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}\n")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="evidex-live-bench-") as tmp, tools_service(port):
        db = Path(tmp) / "shop.db"
        t_build, _ = timed(lambda: build_store(db))
        config = Path(tmp) / "knowledge.config.yaml"
        config.write_text((EXAMPLES / "knowledge.config.yaml").read_text(encoding="utf-8")
                          .replace("127.0.0.1:8081", f"127.0.0.1:{port}"), encoding="utf-8")
        tools = list(load_config(config).tools)
        live_kb, plain_kb = KnowledgeBase.open(db, tools=tools), KnowledgeBase.open(db)
        print(f"store built in {t_build / 1000:.1f} s ({live_kb.stats()['passages']} passages, "
              f"embedder {live_kb.stats()['embedder']})\n")

        # 1. answers with and without the lookup --------------------------------------------------
        print("## 1. `ask` with a live lookup vs the same question without tools (ms)\n")
        print("| question / handle | n | p50 | p99 | min | max |\n|---|---:|---:|---:|---:|---:|")
        for tool_id, q in QUESTIONS.items():
            for kb in (live_kb, plain_kb):
                for _ in range(5):
                    kb.answer(CUSTOMER, q)
            with_ms: list[float] = []
            without_ms: list[float] = []
            diffs: list[float] = []
            for i in range(args.rounds):
                order = (live_kb, plain_kb) if i % 2 == 0 else (plain_kb, live_kb)
                got: dict[int, float] = {}
                for kb in order:
                    ms, ans = timed(lambda kb=kb, q=q: kb.answer(CUSTOMER, q))
                    got[id(kb)] = ms
                    if kb is live_kb:
                        if ans.status != "answered" or ans.citations[0].get("tool") != tool_id:
                            raise SystemExit(f"no live citation for {q!r}: {ans.as_dict()}")
                        check(f"answer to {q}", ans.as_dict())
                with_ms.append(got[id(live_kb)])
                without_ms.append(got[id(plain_kb)])
                diffs.append(got[id(live_kb)] - got[id(plain_kb)])
            print(row(f"{tool_id}: with the lookup", with_ms))
            print(row(f"{tool_id}: without tools", without_ms))
            print(row(f"{tool_id}: difference (paired)", diffs))
        print()

        # 2. evidex's work around the remote call --------------------------------------------------
        print("## 2. A lookup vs the raw GET of the same URL (ms)\n")
        print("| tool | n | p50 | p99 | min | max |\n|---|---:|---:|---:|---:|---:|")
        box = Toolbox(tools)
        client = new_client()
        for tool_id, q in QUESTIONS.items():
            bound = box.asked(CUSTOMER, q)[0]
            t = bound.tool
            headers, _ = fill_headers(t.headers, None)
            url = build_url(t.url, {**bound.question, **bound.actor})

            def raw(t: ToolConfig = t, url: str = url, headers: dict[str, str] = headers) -> None:
                deadline = time.monotonic() + t.timeout_ms / 1000 * (t.retries + 1)
                got = fetch(client, url, headers, timeout_s=t.timeout_ms / 1000, retries=t.retries,
                            max_bytes=t.max_response_bytes, deadline=deadline)
                assert got.ok, got.detail

            def full(q: str = q) -> None:
                src = box.lookup(box.asked(CUSTOMER, q)[0])
                assert src.ok, src.detail
                check(f"lookup {q}", src.as_dict())

            for _ in range(10):
                raw()
                full()
            raw_ms, full_ms, overhead = [], [], []
            for i in range(args.rounds):
                if i % 2 == 0:
                    a, _ = timed(raw)
                    b, _ = timed(full)
                else:
                    b, _ = timed(full)
                    a, _ = timed(raw)
                raw_ms.append(a)
                full_ms.append(b)
                overhead.append(b - a)
            print(row(f"{tool_id}: raw GET", raw_ms))
            print(row(f"{tool_id}: lookup (asked + lookup)", full_ms))
            print(row(f"{tool_id}: lookup - raw GET (paired)", overhead))
        client.close()
        box.close()
        print()

        # 3. failing tools ------------------------------------------------------------------------
        print("## 3. `ask` with a failing tool: slowest answer vs its budget (ms)\n")
        print("| service | timeout_ms | retries | budget | n | p50 | max | within budget |\n"
              "|---|---:|---:|---:|---:|---:|---:|---|")
        failing = ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
        failing.daemon_threads = True
        threading.Thread(target=failing.serve_forever, daemon=True).start()
        fport = failing.server_address[1]
        closed = free_port()
        order_tool = next(t for t in tools if t.id == "order-status").model_dump(
            by_alias=True, exclude_none=True, mode="json")
        settings = [("never answers in time", f"http://127.0.0.1:{fport}/slow", 200, 0),
                    ("never answers in time", f"http://127.0.0.1:{fport}/slow", 200, 1),
                    ("never answers in time", f"http://127.0.0.1:{fport}/slow", 500, 1),
                    ("never answers in time", f"http://127.0.0.1:{fport}/slow", 2000, 1),
                    ("HTTP 500", f"http://127.0.0.1:{fport}/status500", 500, 1),
                    ("closed port", f"http://127.0.0.1:{closed}/x", 500, 1)]
        for name, base, timeout_ms, retries in settings:
            tool = ToolConfig.model_validate({
                **order_tool, "id": "failing", "timeout_ms": timeout_ms, "retries": retries,
                "url": base + "/customers/{customer_id}/orders/{order_id}"})
            budget = timeout_ms * (retries + 1) + 50
            n = max(3, args.budget_rounds // (4 if timeout_ms >= 2000 else 1))
            with KnowledgeBase.open(db, tools=[tool]) as kb:
                kb.answer(CUSTOMER, QUESTIONS["order-status"])     # warm: client and threads
                times = []
                for _ in range(n):
                    ms, ans = timed(lambda kb=kb: kb.answer(CUSTOMER, QUESTIONS["order-status"]))
                    if ans.reason != "tool_unavailable":
                        raise SystemExit(f"expected tool_unavailable, got {ans.as_dict()}")
                    check(f"failing answer {name}", ans.as_dict())
                    times.append(ms)
            print(f"| {name} | {timeout_ms} | {retries} | {budget} | {n} | {pct(times, 50):.0f} | "
                  f"{max(times):.0f} | {'yes' if max(times) <= budget else 'NO'} |")
        failing.shutdown()
        failing.server_close()
        live_kb.close()
        plain_kb.close()
    for i, line in enumerate(seen_logs):
        if TOKEN in line:
            exposed.append(f"log record {i}")
    print(f"\n## 4. Credentials\n\nlog records seen: {len(seen_logs)}; answers, lookups, traces or "
          f"log records holding the service's token: {len(exposed)} {exposed[:5]}")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
