"""Can a caller tell an existing document it may not read from one that does not exist, by the
time ``GET /v1/documents/{id}`` (and ``POST /v1/resolve``) takes to say "not available"?

    .venv/bin/python benchmarks/existence_timing.py [--samples 2000] [--old-src /tmp/base/src]

Starts ``evidex serve`` over the bundled example collection (one worker) with this tree's
code, and with ``--old-src`` a second server with another tree's (e.g. before the fix), both on
127.0.0.1. A customer key (public documents of group customers) then asks, in one shuffled
sequence over both servers, for an internal document that exists (``onboarding-checklist``)
and for ids that do not exist (same length), over keep-alive connections; every answer must be
the same 404 (or ``unavailable``). Reported per server and path: median, quartiles, mean of the
middle 90 %, the difference of medians with a bootstrap 95 % interval, and a permutation test
(two-sided p) of the difference of medians.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from _service import free_port, wait_healthy
from evidex import KnowledgeBase
from evidex.ingest import load_paths

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
KEY = "timing-customer-key"
EXISTING = "onboarding-checklist"  # internal, group staff: the customer key may not read it



def build_store(folder: Path) -> Path:
    db = folder / "kb.db"
    kb = KnowledgeBase.open(db, embedder="none")
    for sub in ("versions", "collection"):
        kb.ingest(load_paths([EXAMPLES / sub], {"tenant": "acme"}).documents, split="heading")
    kb.close()
    return db


def start(db: Path, config: Path, src: str | None, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "EVIDEX_EMBEDDER": "none"}
    if src:
        env["PYTHONPATH"] = src
    port = free_port()
    proc = subprocess.Popen([str(Path(sys.executable).parent / "evidex"), "--db", str(db), "serve",
                             "--config", str(config), "--port", str(port)], env=env,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, url, log)
    return proc, url


def stats(a: list[float], b: list[float], rng: np.random.Generator) -> dict[str, Any]:
    x, y = np.array(a), np.array(b)
    diff = float(np.median(x) - np.median(y))
    boot = [np.median(rng.choice(x, len(x))) - np.median(rng.choice(y, len(y))) for _ in range(2000)]
    pooled = np.concatenate([x, y])
    hits = 0
    for _ in range(2000):
        rng.shuffle(pooled)
        hits += abs(np.median(pooled[:len(x)]) - np.median(pooled[len(x):])) >= abs(diff)

    def trimmed(v: np.ndarray) -> float:
        lo, hi = np.percentile(v, [5, 95])
        return float(v[(v >= lo) & (v <= hi)].mean())

    return {
        "existing_median_us": round(float(np.median(x)), 1),
        "missing_median_us": round(float(np.median(y)), 1),
        "existing_q1_q3_us": [round(float(q), 1) for q in np.percentile(x, [25, 75])],
        "missing_q1_q3_us": [round(float(q), 1) for q in np.percentile(y, [25, 75])],
        "existing_trimmed_mean_us": round(trimmed(x), 1),
        "missing_trimmed_mean_us": round(trimmed(y), 1),
        "median_diff_us": round(diff, 1),
        "median_diff_ci95_us": [round(float(q), 1) for q in np.percentile(boot, [2.5, 97.5])],
        "permutation_p": round((hits + 1) / 2001, 4),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=2000, help="requests per server, path and kind")
    ap.add_argument("--old-src", default=None, help="src/ folder of a second tree to compare with")
    ap.add_argument("--seed", type=int, default=27)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = build_store(folder)
        config = folder / "config.yaml"
        config.write_text(json.dumps({"server": {
            "api_keys": [{"key_sha256": hashlib.sha256(KEY.encode()).hexdigest(), "tenant": "acme",
                          "groups": ["customers"], "visibilities": ["public"]}],
            "rate_limit_per_minute": 10_000_000}}))
        trees = {"new": None, **({"old": args.old_src} if args.old_src else {})}
        servers = {name: start(db, config, src, folder / f"{name}.log") for name, src in trees.items()}
        clients = {name: httpx.Client(base_url=url, timeout=30,
                                      headers={"Authorization": f"Bearer {KEY}"})
                   for name, (_, url) in servers.items()}
        try:
            with KnowledgeBase.open(db) as kb:
                doc = next(d for d in kb.documents("acme") if d.id == EXISTING)
            citation = {"version": doc.version, "content_sha256": doc.content_sha256, "passage": 1,
                        "quote": "Welcome to the team."}
            missing = [f"no-such-doc-{i:08d}"[: len(EXISTING)] for i in range(50)]
            plan = [(name, path, kind) for name in clients for path in ("document", "resolve")
                    for kind in ("existing", "missing") for _ in range(args.samples)]
            rng.shuffle(plan)
            for client in clients.values():  # warm-up: connections, caches, code paths
                for _ in range(50):
                    client.get(f"/v1/documents/{EXISTING}")
                    client.get(f"/v1/documents/{missing[0]}")
            times: dict[tuple[str, str, str], list[float]] = {}
            for name, path, kind in plan:
                doc_id = EXISTING if kind == "existing" else rng.choice(missing)
                client = clients[name]
                t0 = time.perf_counter_ns()
                if path == "document":
                    r = client.get(f"/v1/documents/{doc_id}")
                    ok = r.status_code == 404
                else:
                    r = client.post("/v1/resolve", json={**citation, "document_id": doc_id})
                    ok = r.status_code == 200 and r.json()["reason"] == "unavailable"
                elapsed = (time.perf_counter_ns() - t0) / 1000
                if not ok:
                    raise RuntimeError(f"{name} {path} {kind}: {r.status_code} {r.text[:200]}")
                times.setdefault((name, path, kind), []).append(elapsed)
        finally:
            for c in clients.values():
                c.close()
            for proc, _ in servers.values():
                proc.terminate()
                proc.wait(timeout=30)
    nrng = np.random.default_rng(args.seed)
    out = {"samples_per_cell": args.samples, "python": platform.python_version(),
           "cpus": os.cpu_count(), "load_avg": os.getloadavg()}
    for name in trees:
        for path in ("document", "resolve"):
            out[f"{name} {path}"] = stats(times[(name, path, "existing")], times[(name, path, "missing")],
                                          nrng)
    print(json.dumps(out, indent=2))
    for key, value in out.items():
        if isinstance(value, dict):
            print(f"{key}: existing {value['existing_median_us']} us, "
                  f"missing {value['missing_median_us']} us, diff {value['median_diff_us']} us "
                  f"(95% CI {value['median_diff_ci95_us']}), p={value['permutation_p']}", file=sys.stderr)


if __name__ == "__main__":
    main()
