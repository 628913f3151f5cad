"""A simulated day of the scheduler over the shipped example configuration (issue 24).

    .venv/bin/python benchmarks/ops_schedule.py

Loads examples/knowledge.config.yaml, gives its sources schedules (help-centre hourly,
returns-policy daily, ops-handbook every six hours; the drift check stays daily), serves the
example shop's help centre (examples/site_server.py: pages under /help/, a sitemap) for the web
source, and runs the
scheduler from a Sunday 00:00 UTC for 24 simulated hours (injected clock and sleep) against a
temporary SQLite store with the default embedder. Prints, as JSON, the runs per (kind,
source), the expected counts, problems, and the wall time the simulated day took.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from evidex import KnowledgeBase
from evidex.config import load_config
from evidex.sources import Scheduler

ROOT = Path(__file__).resolve().parents[1]
START = datetime(2026, 12, 6, 0, 0, tzinfo=UTC)
SCHEDULES = {"help-centre": "hourly", "returns-policy": "daily", "ops-handbook": "0 */6 * * *"}
EXPECTED = {"sync help-centre": 24, "sync returns-policy": 1, "sync ops-handbook": 4,
            "drift help-centre": 1, "drift returns-policy": 1, "drift ops-handbook": 1}


def site_server(port: int):  # type: ignore[no-untyped-def]
    """examples/site_server.py's server (examples/ is no package)."""
    spec = importlib.util.spec_from_file_location("site_server", ROOT / "examples" / "site_server.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.server(port)


def first_syncs(runs: list) -> dict[str, object]:  # type: ignore[type-arg]
    """Counts of each source's first sync (runs come newest first)."""
    first: dict[str, object] = {}
    for r in reversed(runs):
        if r.kind == "sync":
            first.setdefault(r.source, {"at": r.scheduled_for, **r.counts})
    return first


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="evidex-ops-schedule-"))
    server = site_server(8765)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    cfg = load_config(ROOT / "examples" / "knowledge.config.yaml")
    cfg = cfg.model_copy(update={"sources": tuple(
        s.model_copy(update={"schedule": SCHEDULES[s.id]}) for s in cfg.sources)})
    now = [START]
    stop = threading.Event()

    def sleep(seconds: float) -> None:
        now[0] += timedelta(seconds=seconds)
        if now[0] > START + timedelta(days=1):
            stop.set()

    scheduler = Scheduler(lambda: KnowledgeBase.open(work / "kb.db"), cfg, clock=lambda: now[0],
                          sleep=sleep, after_drift=[])
    t0 = time.perf_counter()
    scheduler.run_forever(stop)
    wall = time.perf_counter() - t0
    server.shutdown()
    with KnowledgeBase.open(work / "kb.db") as kb:
        runs = kb.runs(10_000)
        docs = len(kb.documents())
    counts = Counter(f"{r.kind} {r.source}" for r in runs)
    print(json.dumps({
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d %H:%M"), "load_average": os.getloadavg()[0],
        "runs": dict(sorted(counts.items())), "expected": EXPECTED,
        "exactly_expected": dict(counts) == EXPECTED, "total_runs": len(runs),
        "runs_with_problems": sum(not r.ok for r in runs),
        "problems": sorted({p for r in runs for p in r.problems})[:5],
        "first_sync_counts": first_syncs(runs),
        "documents": docs, "wall_seconds_for_24h": round(wall, 1),
    }, indent=2))


if __name__ == "__main__":
    main()
