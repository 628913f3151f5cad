"""The scheduler over a simulated day (injected clock and sleep) on a real SQLite store: exactly
the expected syncs and drift checks run, one at a time, a failing source and a failing hook do
not stop anything, and every run is recorded (start, end, counts, problems) for ``evidex runs``
and ``GET /v1/runs``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli_runner import EVIDEX, run_cli
from evidex import KnowledgeBase
from evidex.config import load_config
from evidex.sources import Scheduler, SyncReport
from service_helpers import Server, auth, write_config

#: A Sunday: the day ends at Monday 00:00, when daily and weekly cadences are due.
START = datetime(2026, 12, 6, 0, 0, tzinfo=UTC)
END = START + timedelta(days=1)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def setup(tmp_path: Path, trusted_stamps: None) -> Path:
    write(tmp_path / "faq" / "returns.md", "# Returns\n\nBoots can be returned within 30 days.\n")
    write(tmp_path / "faq" / "shipping.md", "# Shipping\n\nParcels take three days.\n")
    write(tmp_path / "wiki" / "Ops" / "escalation.md", "# Escalation\n\nCall the shift lead.\n")
    write(tmp_path / "catalogue.jsonl", '{"id": "boot-1", "text": "Trail boot, sizes 38-47"}\n')
    return write(tmp_path / "k.yaml", """\
defaults: {tenant: acme, groups: [staff]}
sources:
  - {id: faq, type: files, path: ./faq, schedule: hourly}
  - {id: broken, type: files, path: ./no-such-folder, schedule: "*/20 9-10 * * *"}
  - {id: handbook, type: wiki, path: ./wiki, schedule: weekly}
  - {id: catalogue, type: records, path: ./catalogue.jsonl, schedule: daily}
  - {id: manual, type: files, path: ./faq, include: ["returns.md"]}
freshness: {drift_check: "30 6 * * *"}
""")


def simulated_day(tmp_path: Path, config: Path, hooks: list[Any]
                  ) -> tuple[list[Any], list[tuple[str, datetime]]]:
    """Run the scheduler from START until the clock passes END; returns (records, the time
    each run started as seen by the sources' sync)."""
    now = [START]
    stop = threading.Event()

    def sleep(seconds: float) -> None:
        assert seconds > 0
        now[0] += timedelta(seconds=seconds)
        if now[0] > END:
            stop.set()

    cfg = load_config(config)
    printed = []
    scheduler = Scheduler(lambda: KnowledgeBase.open(tmp_path / "kb.db"), cfg, clock=lambda: now[0],
                          sleep=sleep, after_drift=hooks, on_run=printed.append)
    scheduler.run_forever(stop)
    return printed, [(j.name, t) for j, t in scheduler.next_due.items()]


def test_a_simulated_day_runs_exactly_the_expected_runs(tmp_path: Path, setup: Path) -> None:
    seen: list[SyncReport] = []

    def failing_hook(report: SyncReport, config: object) -> None:
        raise RuntimeError("owner route down")

    def recording_hook(report: SyncReport, config: object) -> None:
        seen.append(report)

    printed, next_due = simulated_day(tmp_path, setup, [recording_hook, failing_hook])
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        runs = list(reversed(kb.runs(1000)))
    assert [r.as_dict() for r in runs] == [r.as_dict() for r in printed]
    assert Counter((r.kind, r.source) for r in runs) == {
        ("sync", "faq"): 24,  # 01:00 .. 24:00
        ("sync", "broken"): 6,  # 09:00, 09:20, 09:40, 10:00, 10:20, 10:40
        ("sync", "handbook"): 1,  # Monday 00:00
        ("sync", "catalogue"): 1,  # 00:00
        **{("drift", s): 1 for s in ("faq", "broken", "handbook", "catalogue", "manual")},  # 06:30
    }
    assert len(runs) == 37
    # One at a time, in due order (configuration order within a minute), at the due minute.
    due = [r.scheduled_for for r in runs]
    assert due == sorted(due)
    faq = [r for r in runs if r.kind == "sync" and r.source == "faq"]
    assert [r.scheduled_for for r in faq] == [(START + timedelta(hours=h)).isoformat() for h in range(1, 25)]
    assert all(r.started_at == r.scheduled_for and r.ended_at >= r.started_at for r in runs)
    last_minute = [(r.kind, r.source) for r in runs if r.scheduled_for == END.isoformat()]
    assert last_minute == [("sync", "faq"), ("sync", "handbook"), ("sync", "catalogue")]
    # Counts: the first sync added, the others found nothing new.
    assert faq[0].counts["added"] == 2 and faq[0].ok and faq[0].problems == ()
    assert all(r.counts["added"] == 0 and r.counts["unchanged"] == 2 for r in faq[1:])
    # The failing source failed every time, with its reason, and stopped nothing.
    broken = [r for r in runs if r.source == "broken" and r.kind == "sync"]
    assert all(not r.ok and "does not exist" in r.problems[0] for r in broken)
    # The drift check ran once over every source; the hooks got one report of all of them;
    # the failing hook is a problem of those runs.
    assert len(seen) == 1 and [s.source for s in seen[0].sources] == ["faq", "broken", "handbook",
                                                                       "catalogue", "manual"]
    drift = [r for r in runs if r.kind == "drift"]
    assert all(r.scheduled_for == "2026-12-06T06:30:00+00:00" for r in drift)
    assert all(r.problems == ("drift hook failing_hook failed: RuntimeError: owner route down",)
               for r in drift if r.source != "broken")
    manual = next(r for r in drift if r.source == "manual")
    assert manual.counts["new"] == 1  # no schedule: never synced, so the drift check finds it new
    # Next due after the day: the scheduler carries on from there.
    assert dict(next_due)["sync faq"] == END + timedelta(hours=1)


def test_a_failing_store_loses_its_due_runs_and_stops_nothing(tmp_path: Path, setup: Path) -> None:
    """The store itself failing (it cannot be opened to claim or record a run: a database
    restarting) is not a source's failure, and it does not end the scheduler either: in `evidex
    serve` that was a dead scheduler thread under a running service. The runs due meanwhile are
    lost and reported; the next due minutes run."""
    import sqlite3

    def store() -> KnowledgeBase:
        if START + timedelta(hours=9) <= now[0] < START + timedelta(hours=10):
            raise sqlite3.OperationalError("unable to open database file")
        return KnowledgeBase.open(tmp_path / "kb.db")

    now = [START]
    stop = threading.Event()

    def sleep(seconds: float) -> None:
        now[0] += timedelta(seconds=seconds)
        if now[0] > END:
            stop.set()

    told: list[tuple[str, datetime, str]] = []
    scheduler = Scheduler(store, load_config(setup), clock=lambda: now[0], sleep=sleep,
                          after_drift=[], on_failure=lambda job, due, exc: told.append(
                              (job.name, due, type(exc).__name__)))
    scheduler.run_forever(stop)
    lost = [(j.name, due) for due, j, _ in scheduler.failures]
    assert lost == [("sync faq", START + timedelta(hours=9)), *[
        ("sync broken", START + timedelta(hours=9, minutes=m)) for m in (0, 20, 40)]]
    assert [(n, d) for n, d, _ in told] == lost and {e for *_, e in told} == {"OperationalError"}
    # Months of a failing store must not grow the scheduler: it keeps the latest few.
    assert scheduler.failures.maxlen == scheduler.left_to_others.maxlen == 1000
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        faq = [r for r in kb.runs(1000) if r.kind == "sync" and r.source == "faq"]
    assert len(faq) == 23 and faq[0].scheduled_for == END.isoformat()  # every hour but 09:00


def test_an_overrun_skips_its_own_missed_minutes_and_others_catch_up_once(
        tmp_path: Path, setup: Path,
        scheduled_sync: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """The faq sync (hourly) takes 90 minutes: its 02:00 is skipped (next: 03:00, the first due
    minute after it ended). The catalogue's half-hourly sync due at 01:00 waits for it and runs
    at 02:30; its 01:30, 02:00 and 02:30, which passed meanwhile, are not run one by one."""
    setup.write_text(setup.read_text(encoding="utf-8").replace(
        "schedule: daily}", 'schedule: "*/30 * * * *"}'), encoding="utf-8")
    now = [START]

    def slow_faq(kb: KnowledgeBase, config: Any, source: str) -> SyncReport:
        if source == "faq":
            now[0] += timedelta(minutes=90)
        return real(kb, config, source)

    real = scheduled_sync(slow_faq)
    cfg = load_config(setup)
    scheduler = Scheduler(lambda: KnowledgeBase.open(tmp_path / "kb.db"), cfg, clock=lambda: now[0],
                          after_drift=[])
    while now[0] < START + timedelta(hours=4):
        scheduler.run_pending()
        now[0] = max(now[0], min(scheduler.next_due.values()))
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        runs = [(r.source, r.scheduled_for[11:16], r.started_at[11:16])
                for r in reversed(kb.runs(1000)) if r.source in ("faq", "catalogue")]
    assert runs == [("catalogue", "00:30", "00:30"), ("faq", "01:00", "01:00"),
                    ("catalogue", "01:00", "02:30"), ("faq", "03:00", "03:00"),
                    ("catalogue", "03:00", "04:30")]


def test_runs_are_listed_by_the_cli_and_by_admins_of_their_tenant(tmp_path: Path, setup: Path) -> None:
    simulated_day(tmp_path, setup, [])
    db = str(tmp_path / "kb.db")
    out = run_cli("runs", "--json", "--limit", "5", "--source", "broken", db=db, check=True).stdout
    listed = json.loads(out)["runs"]
    assert len(listed) == 5 and all(r["source"] == "broken" and not r["ok"] for r in listed)
    assert listed[0]["scheduled_for"] == "2026-12-06T10:40:00+00:00"
    assert set(listed[0]) == {"id", "kind", "source", "tenant", "scheduled_for", "started_at",
                              "ended_at", "ok", "counts", "problems"}
    text = run_cli("runs", "--limit", "1", db=db, check=True).stdout
    assert "sync  catalogue: ok" in text
    config = write_config(tmp_path / "server.yaml")
    server = Server([str(EVIDEX), "--db", db, "--config", str(config), "serve", "--no-schedule"],
                    {"EVIDEX_CACHE_DIR": str(tmp_path / "cache")}, tmp_path / "server.log")
    try:
        mine = httpx.get(f"{server.url}/v1/runs?limit=3", headers=auth("acme-admin-key"), timeout=30)
        assert mine.status_code == 200, mine.text
        assert [r["source"] for r in mine.json()["runs"]] == ["catalogue", "handbook", "faq"]
        assert httpx.get(f"{server.url}/v1/runs", headers=auth("globex-admin-key"),
                         timeout=30).json() == {"runs": []}
        assert httpx.get(f"{server.url}/v1/runs", headers=auth("acme-staff-key"),
                         timeout=30).status_code == 403
    finally:
        server.stop()


def test_nothing_scheduled_is_a_clear_error(tmp_path: Path) -> None:
    config = write(tmp_path / "k.yaml", "freshness: {drift_check: daily}\n")
    done = run_cli("--config", config, "schedule", db=tmp_path / "kb.db", timeout=60)
    assert done.returncode == 1 and "error: nothing is scheduled" in done.stderr


def test_schedule_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    """A service manager stops the scheduler with SIGTERM: exit 0 once the run in progress ended,
    not death by the signal (143)."""
    write(tmp_path / "faq" / "a.md", "# A\n\nSomething to sync.\n")
    config = write(tmp_path / "k.yaml", "sources:\n  - {id: faq, type: files, path: ./faq, "
                   "tenant: acme, schedule: hourly}\n")
    proc = subprocess.Popen([str(EVIDEX), "--db", str(tmp_path / "kb.db"), "--config", str(config),
                             "schedule"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "EVIDEX_EMBEDDER": "none"})
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().startswith("scheduled: sync faq")  # waiting for its minute
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, (out, err)
    assert "Traceback" not in err


def test_the_run_log_on_every_backend(any_kb: KnowledgeBase) -> None:
    from evidex.store import RunRecord

    def generation() -> object:
        with any_kb.store.read() as view:
            return view.generation

    assert any_kb.runs() == []  # no table yet: an empty log, nothing created by reading
    before = generation()
    rows = (("faq", "acme", True, 2, ()), ("web", "globex", False, 0, ("HTTP 500",)))
    ids = [any_kb.record_run(RunRecord("sync", s, t, "2026-12-06T01:00:00+00:00",
                                       "2026-12-06T01:00:02+00:00", ok, {"added": n}, problems,
                                       "2026-12-06T01:00:00+00:00"))
           for s, t, ok, n, problems in rows]
    assert ids[1] > ids[0]
    assert [r.source for r in any_kb.runs()] == ["web", "faq"]
    (web,) = any_kb.runs(source="web")
    assert (web.id, web.ok, web.problems, web.counts) == (ids[1], False, ("HTTP 500",), {"added": 0})
    assert web.tenant == "globex" and web.started_at == "2026-12-06T01:00:00+00:00"
    assert [r.source for r in any_kb.runs(tenant="acme")] == ["faq"]
    assert len(any_kb.runs(1)) == 1
    assert before is not None and generation() == before  # a run record is not a content change


def test_serve_starts_the_scheduler_only_when_something_is_scheduled(tmp_path: Path, setup: Path) -> None:
    from evidex.server import start_scheduler
    nothing = load_config(write(tmp_path / "none.yaml", "{}\n"))
    assert start_scheduler(str(tmp_path / "kb.db"), nothing) is None
    stop = start_scheduler(str(tmp_path / "kb.db"), load_config(setup))
    assert stop is not None
    stop.set()
    worker = next(t for t in threading.enumerate() if t.name == "evidex-scheduler")
    worker.join(timeout=10)
    assert not worker.is_alive()


def test_the_service_scheduler_calls_the_registered_drift_hooks(tmp_path: Path, setup: Path) -> None:
    """README: after each drift check every hook in ``evidex.sources.DRIFT_HOOKS`` is called;
    the service's scheduler (and `evidex schedule`) call them besides telling the owners."""
    import evidex.sources
    from evidex.server import service_scheduler

    seen: list[list[str]] = []

    def hook(report: SyncReport, config: object) -> None:
        seen.append([s.source for s in report.sources])

    evidex.sources.DRIFT_HOOKS.append(hook)  # registered as an extension would
    try:
        scheduler = service_scheduler(str(tmp_path / "kb.db"), load_config(setup))
    finally:
        evidex.sources.DRIFT_HOOKS.remove(hook)
    job = next(j for j in scheduler.jobs if j.kind == "drift")
    scheduler.next_due = {job: datetime.now(UTC) - timedelta(minutes=1)}  # the drift check is due
    scheduler.run_pending()
    assert seen == [["faq", "broken", "handbook", "catalogue", "manual"]]


def test_two_schedulers_on_one_store_run_each_due_job_once(
    tmp_path: Path, setup: Path, locate: Any
) -> None:
    """Two `evidex serve` processes on one store: each due run is claimed in the store first,
    and only the scheduler that claimed it runs it (on both backends)."""
    url = locate("kb")
    cfg = load_config(setup)
    now = [START]
    pair = [Scheduler(lambda: KnowledgeBase.open(url), cfg, clock=lambda: now[0], after_drift=[],
                      holder=name) for name in ("a", "b")]
    while now[0] <= END:
        for s in (pair if now[0].hour % 2 else reversed(pair)):  # either may come first
            s.run_pending()
        now[0] = min(min(s.next_due.values()) for s in pair)
    with KnowledgeBase.open(url) as kb:
        runs = kb.runs(1000)
    keys = Counter((r.kind, r.source, r.scheduled_for) for r in runs)
    assert len(runs) == 37 and set(keys.values()) == {1}  # as one scheduler's day, no run twice
    left = [*pair[0].left_to_others, *pair[1].left_to_others]
    assert len(left) == 24 + 6 + 1 + 1 + 1 and pair[0].left_to_others and pair[1].left_to_others


def test_a_due_run_is_claimed_by_exactly_one_of_two_racing_schedulers(locate: Any) -> None:
    url = locate("kb")
    handles = [KnowledgeBase.open(url), KnowledgeBase.open(url)]
    try:
        for minute in range(10):
            due = f"2026-12-06T01:{minute:02d}:00+00:00"
            start = threading.Barrier(2)
            won: list[bool] = []

            def claim(kb: KnowledgeBase, name: str, start: threading.Barrier = start,
                      won: list[bool] = won, due: str = due) -> None:
                start.wait()
                won.append(kb.store.claim_run("sync", "faq", due, name))

            threads = [threading.Thread(target=claim, args=(kb, n))
                       for kb, n in zip(handles, "ab", strict=True)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert sorted(won) == [False, True], due
        # Another source or kind due at the same minute is a claim of its own.
        assert handles[0].store.claim_run("drift", "*", due, "a")
    finally:
        for kb in handles:
            kb.close()
