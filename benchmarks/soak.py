"""Soak: does the service stay flat in memory and error-free under a long mixed load?

    nice -n 10 .venv/bin/python benchmarks/soak.py [--minutes 30] [--warmup-minutes 5]
        [--out benchmarks/.work/soak.json]

Builds a store from a copy of the example shop's public site (a configured ``files`` source,
the default embedder) and starts ``evidex serve`` on 127.0.0.1 with one worker. Then, together
for ``--minutes``:

- two clients search (hybrid and keyword, customer and staff keys) back to back;
- one client asks questions (``/v1/answer``) and resolves each citation it gets back;
- one admin client every ``--sync-every`` seconds rewrites a few pages of the source folder
  (new text, so new versions that supersede the indexed ones; one page removed and restored)
  and calls ``POST /v1/sync``, which resyncs the whole source.

The server's resident memory (the uvicorn process and its children) is sampled every 10 s.
Reported: RSS growth after warm-up (median of the last minute over the median of the first
minute after warm-up, and the maximum after warm-up over that baseline), every non-2xx or
failed request (the run expects none), and p50/p99 latency per kind of request. Exit status 1
when there was an error response or the growth reached 5 %.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from _service import free_port, wait_healthy

HERE = Path(__file__).resolve().parent
SITE = HERE.parent / "examples" / "shop" / "site"
KEYS = {"customer": {"tenant": "acme", "groups": ["customers"], "visibilities": ["public"]},
        "staff": {"tenant": "acme", "groups": ["staff"], "visibilities": ["public", "internal"]},
        "admin": {"tenant": "acme", "groups": ["staff"], "visibilities": ["public", "internal"],
                  "admin": True}}
QUERIES = ["return worn boots", "refund how long", "shipping to Austria cost", "ERR-423",
           "warranty on zippers", "gift card expiry", "Rücksendung Kosten", "club points expire",
           "store opening hours Hamburg", "wash down jacket", "pay by invoice", "size chart shoes",
           "delete my account data", "parcel lost", "tent repair service", "Versand nach Österreich"]
QUESTIONS = ["Can I return boots I wore outside?", "How long does a refund take?",
             "How much does shipping to Austria cost?", "What does ERR-423 mean?",
             "Do club points expire?", "How do I wash a down jacket?",
             "Can I pay by invoice?", "What is the capital of Peru?"]
CITATION_FIELDS = ("document_id", "version", "content_sha256", "passage", "quote", "start", "end",
                   "heading_path", "anchor", "title", "source_url")
CHURN = ["returns/returns.md", "shipping/shipping-costs.md", "care/care-down.md"]



def key_of(name: str) -> str:
    return f"soak-{name}-key"


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and its descendants (uvicorn may run workers as children)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError):
            status = Path(f"/proc/{p}/status").read_text()
            total += next(int(x.split()[1]) * 1024 for x in status.splitlines() if x.startswith("VmRSS:"))
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    return total


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = {}
        self.errors: list[str] = []
        self.counts: dict[str, int] = {}

    def call(self, kind: str, fn: Any, *args: Any, **kwargs: Any) -> httpx.Response | None:
        t0 = time.perf_counter()
        try:
            r = fn(*args, **kwargs)
        except httpx.HTTPError as e:
            with self.lock:
                self.errors.append(f"{kind}: {type(e).__name__}: {e}")
            return None
        ms = (time.perf_counter() - t0) * 1000
        with self.lock:
            self.latency.setdefault(kind, []).append(ms)
            self.counts[kind] = self.counts.get(kind, 0) + 1
            if not 200 <= r.status_code < 300:
                self.errors.append(f"{kind}: {r.status_code} {r.text[:300]}")
                return None
        return r


def pick_churn(site: Path) -> list[Path]:
    """Pages rewritten every cycle: the named ones when they exist, else the first Markdown pages."""
    named = [site / p for p in CHURN if (site / p).is_file()]
    return named or sorted(site.rglob("*.md"))[:3]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--warmup-minutes", type=float, default=5.0)
    ap.add_argument("--sync-every", type=float, default=20.0, help="seconds between resyncs")
    ap.add_argument("--pause", type=float, default=0.05, help="seconds each client waits between requests")
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON report here")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="evidex-soak-"))
    site = tmp / "site"
    shutil.copytree(SITE, site)
    churn = pick_churn(site)
    originals = {p: p.read_text(encoding="utf-8") for p in churn}
    removable = next((ln.split(":", 1)[1].strip() for ln in originals[churn[0]].splitlines()
                      if ln.startswith("id:")), None)
    config = tmp / "knowledge.config.yaml"
    config.write_text(yaml.safe_dump({
        "sources": [{"id": "site", "type": "files", "path": str(site),
                     "include": ["**/*.md", "**/*.html"], "split": "heading", "tenant": "acme",
                     "groups": ["customers", "staff"], "visibility": "public", "language": "en",
                     "owner": "web@acme.example"}],
        "server": {"api_keys": [{"key_sha256": hashlib.sha256(key_of(n).encode()).hexdigest(),
                                 "name": n, **v} for n, v in KEYS.items()],
                   "rate_limit_per_minute": 10_000_000},
    }), encoding="utf-8")
    db = tmp / "kb.db"
    evidex = str(Path(sys.executable).parent / "evidex")
    t0 = time.time()
    subprocess.run([evidex, "--db", str(db), "--config", str(config), "sync"], check=True,
                   stdout=subprocess.DEVNULL)
    build_s = time.time() - t0
    port = free_port()
    log = tmp / "server.log"
    server = subprocess.Popen([evidex, "--db", str(db), "--config", str(config), "serve", "--port",
                               str(port)], stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(server, url, log, seconds=120)

    rec = Recorder()
    stop = threading.Event()
    end = time.time() + args.minutes * 60

    def client(name: str) -> httpx.Client:
        return httpx.Client(base_url=url, timeout=120,
                            headers={"Authorization": f"Bearer {key_of(name)}"})

    def searcher(seed: int) -> None:
        r = random.Random(seed)
        with client("customer") as c, client("staff") as s:
            while not stop.is_set():
                mode = r.choice(["hybrid", "hybrid", "keyword"])
                rec.call(f"search-{mode}", r.choice([c, s]).post, "/v1/search",
                         json={"query": r.choice(QUERIES), "mode": mode, "top_k": 6})
                time.sleep(args.pause)

    def answerer(seed: int) -> None:
        r = random.Random(seed)
        with client("customer") as c:
            while not stop.is_set():
                got = rec.call("answer", c.post, "/v1/answer", json={"question": r.choice(QUESTIONS)})
                for cit in (got.json()["citations"] if got is not None else [])[:2]:
                    body = {k: cit[k] for k in CITATION_FIELDS if cit.get(k) is not None}
                    res = rec.call("resolve", c.post, "/v1/resolve", json=body)
                    # A citation may name a version a concurrent resync just superseded, or
                    # the page the resyncs remove every third cycle.
                    expected = [None, "source_changed"]
                    if body["document_id"] == removable:
                        expected.append("unavailable")
                    if res is not None and res.json()["reason"] not in expected:
                        with rec.lock:
                            rec.errors.append(f"resolve: {res.json()}")
                time.sleep(args.pause)

    syncs: list[dict[str, Any]] = []

    def resyncer() -> None:
        cycle = 0
        with client("admin") as a:
            while not stop.wait(args.sync_every):
                cycle += 1
                for i, page in enumerate(churn):
                    if i == 0 and cycle % 3 == 0:
                        page.unlink(missing_ok=True)  # removed this cycle, restored the next
                    else:
                        text = originals[page].replace('version: "2026-01"',
                                                       f'version: "soak-{cycle}"', 1)
                        page.write_text(text + f"\n\nRevision {cycle} of this page.\n",
                                        encoding="utf-8")
                got = rec.call("sync", a.post, "/v1/sync", json={})
                if got is not None:
                    body = got.json()
                    syncs.append(body)
                    if body.get("errors"):
                        with rec.lock:
                            rec.errors.append(f"sync reported errors: {body}")

    samples: list[tuple[float, int]] = []
    threads = [threading.Thread(target=searcher, args=(args.seed + i,), daemon=True) for i in range(2)]
    threads += [threading.Thread(target=answerer, args=(args.seed + 10,), daemon=True),
                threading.Thread(target=resyncer, daemon=True)]
    start = time.time()
    for t in threads:
        t.start()
    try:
        while time.time() < end:
            samples.append((time.time() - start, tree_rss(server.pid)))
            if server.poll() is not None:
                rec.errors.append(f"server exited with {server.returncode}")
                break
            time.sleep(10)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=180)
        server.terminate()
        server.wait(timeout=60)
    warm = args.warmup_minutes * 60
    after = [(t, m) for t, m in samples if t >= warm]
    first = [m for t, m in after if t < warm + 60] or [after[0][1]]
    last_t = after[-1][0] if after else 0
    last = [m for t, m in after if t >= last_t - 60] or [after[-1][1]]
    base = statistics.median(first)
    growth = statistics.median(last) / base - 1
    peak = max(m for _, m in after) / base - 1
    lat = {k: {"n": len(v), "p50_ms": round(statistics.median(v), 1),
               "p99_ms": round(sorted(v)[max(0, int(len(v) * 0.99) - 1)], 1)}
           for k, v in sorted(rec.latency.items())}
    out = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(start)),
        "minutes": args.minutes, "warmup_minutes": args.warmup_minutes,
        "python": platform.python_version(), "cpus": os.cpu_count(),
        "load_avg_at_end": os.getloadavg(), "store_build_s": round(build_s, 1),
        "rss_mb_first_after_warmup": round(base / 2**20, 1),
        "rss_mb_last_minute": round(statistics.median(last) / 2**20, 1),
        "rss_growth_after_warmup_pct": round(growth * 100, 2),
        "rss_peak_over_baseline_pct": round(peak * 100, 2),
        "rss_mb_samples": [[round(t), round(m / 2**20, 1)] for t, m in samples],
        "requests": sum(rec.counts.values()), "by_kind": lat,
        "syncs": len(syncs), "superseded_total": sum(s.get("superseded", 0) for s in syncs),
        "added_total": sum(s.get("added", 0) for s in syncs),
        "removed_total": sum(s.get("removed", 0) for s in syncs),
        "error_responses": len(rec.errors), "errors_first": rec.errors[:20],
    }
    text = json.dumps(out, indent=2, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if rec.errors or growth >= 0.05 else 0)


if __name__ == "__main__":
    main()
