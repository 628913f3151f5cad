"""Syncs and drift checks on their cadences, one at a time, each recorded in the store.

Jobs come from the configuration: a sync per source that sets ``schedule:``, and one drift
check over every source at ``freshness.drift_check``. A job first runs at its first due minute
after the scheduler starts (as cron does), then at each due minute after that; a run that
overruns later due minutes makes up for them once, not once per minute missed. Jobs due at the
same minute run in configuration order (syncs before the drift check, which then sees them).

A run never stops the scheduler: a source that cannot be listed, an item that cannot be read,
even an unexpected exception, becomes the run's ``problems`` and the next job runs. When the
store itself fails (it cannot be opened to claim or record a run), there is nowhere to record
it: that occurrence is lost, as when a process dies while running it, ``on_failure`` is told
(by default one line on stderr), and the scheduler carries on with the next due minute. Each source
gets its own run record (start, end, counts, problems) in the store's run log (``KnowledgeBase.
runs``, ``evidex runs``, ``GET /v1/runs``).

After a drift check, the steps ``Scheduler(after_drift=...)`` names (by default
``after_drift()``: the drift webhook, then ``DRIFT_HOOKS``; see ``_after_drift``) are called once
with the report of every source (so findings can be grouped per owner). A step's failure is a
problem of the drift runs, never the end of the scheduler.

The clock and the sleep are injected (``clock``, ``sleep``), so a test can run a simulated day.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from ..cadence import Cadence, parse_cadence
from ..config import Config
from ..knowledge import Knowledge
from ..store import RunRecord
from ._after_drift import DriftHook, run_after_drift
from ._after_drift import after_drift as after_drift_steps
from ._items import effective
from ._sync import SourceReport, SyncReport, drift, sync

__all__ = ["Job", "Scheduler", "run_records"]
#: How many lost and left-to-others due runs a scheduler remembers (for tests and callers).
KEPT_NOTES = 1000
#: The longest the scheduler sleeps between looks at the clock (a changed wall clock is seen).
MAX_SLEEP_SECONDS = 60.0


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat(timespec="seconds")


def _print_failure(job: Job, due: datetime, exc: Exception) -> None:
    first = str(exc).splitlines()[0] if str(exc) else ""
    print(f"evidex scheduler: {job.name} due {_iso(due)} did not run, the store failed: "
          f"{type(exc).__name__}: {first}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Job:
    kind: Literal["sync", "drift"]
    #: The source a sync job syncs; None for the drift check (every source).
    source: str | None
    cadence: Cadence

    @property
    def name(self) -> str:
        return f"{self.kind} {self.source}" if self.source else self.kind


def jobs_of(config: Config) -> list[Job]:
    out: list[Job] = []
    for s in config.sources:
        cad = parse_cadence(s.schedule) if s.schedule else None
        if cad is not None:
            out.append(Job("sync", s.id, cad))
    cad = parse_cadence(config.freshness.drift_check) if config.sources else None
    if cad is not None:
        out.append(Job("drift", None, cad))
    return out


class Scheduler:
    """Runs the jobs of ``config`` against the store ``open_kb`` opens (a handle per run, closed
    after it, so a long-running scheduler holds nothing open between runs)."""

    def __init__(self, open_kb: Callable[[], Knowledge], config: Config, *,
                 clock: Callable[[], datetime] = _utcnow,
                 sleep: Callable[[float], object] | None = None,
                 after_drift: Sequence[DriftHook] | None = None,
                 on_run: Callable[[RunRecord], object] | None = None,
                 on_failure: Callable[[Job, datetime, Exception], object] | None = None,
                 holder: str | None = None) -> None:
        self.open_kb = open_kb
        self.config = config
        self.clock = clock
        #: How ``run_forever`` waits (default: on its stop event, so stopping is immediate).
        self.sleep = sleep
        #: The steps after each drift check (see ``_after_drift``), fixed when it starts.
        self.after_drift = list(after_drift) if after_drift is not None else after_drift_steps()
        #: Called with each run record once it is stored (e.g. to print it).
        self.on_run = on_run
        #: Called when the store failed a due run (it could not be claimed, run or recorded).
        self.on_failure = on_failure or _print_failure
        #: Due runs lost to a failing store: (due minute, job, the error), the latest
        #: ``KEPT_NOTES`` (a scheduler runs for months: it must not grow with them).
        self.failures: deque[tuple[datetime, Job, Exception]] = deque(maxlen=KEPT_NOTES)
        self.jobs = jobs_of(config)
        #: Names this scheduler in its claims on due runs (see ``run_pending``).
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        #: Due runs another scheduler on the same store claimed first, and so ran instead (the
        #: latest ``KEPT_NOTES``).
        self.left_to_others: deque[tuple[datetime, Job]] = deque(maxlen=KEPT_NOTES)
        start = clock()
        self.next_due: dict[Job, datetime] = {j: j.cadence.next_after(start) for j in self.jobs}

    def pending(self, now: datetime) -> list[tuple[datetime, Job]]:
        """Jobs due at or before ``now``: by due time, then configuration order."""
        order = {j: i for i, j in enumerate(self.jobs)}
        due = [(t, j) for j, t in self.next_due.items() if t <= now]
        return sorted(due, key=lambda tj: (tj[0], order[tj[1]]))

    def run_pending(self) -> list[RunRecord]:
        """Run every job due now, one at a time; returns the records written. Each due run is
        claimed in the store first: of several schedulers on one store (two ``evidex serve``
        processes on one PostgreSQL database), only the first to claim it runs it."""
        done: list[RunRecord] = []
        for due, job in self.pending(self.clock()):
            try:
                with self.open_kb() as kb:
                    mine = kb.store.claim_run(job.kind, job.source or "*", _iso(due), self.holder)
                if mine:
                    done += self._run(job, due)
                else:
                    self.left_to_others.append((due, job))
            except Exception as exc:  # the store, not a source: see the module docstring
                self.failures.append((due, job, exc))
                self.on_failure(job, due, exc)
            # From the later of the due minute and the end of the run: an overrun catches up once.
            self.next_due[job] = job.cadence.next_after(max(due, self.clock()))
        return done

    def run_forever(self, stop: threading.Event | None = None) -> None:
        """Run due jobs until ``stop`` is set (at once when there are no jobs)."""
        stop = stop or threading.Event()
        pause = self.sleep or stop.wait
        while not stop.is_set() and self.next_due:
            self.run_pending()
            wait = (min(self.next_due.values()) - self.clock()).total_seconds()
            if wait > 0 and not stop.is_set():
                pause(min(wait, MAX_SLEEP_SECONDS))

    # -- one job --------------------------------------------------------------------------------
    def _run(self, job: Job, due: datetime) -> list[RunRecord]:
        if job.kind == "sync":
            assert job.source is not None
            return [self._source_run("sync", job.source, due)[0]]
        records, reports = [], []
        for s in self.config.sources:
            record, rep = self._source_run("drift", s.id, due)
            records.append(record)
            if rep is not None:
                reports.append(rep)
        problems = run_after_drift(self.after_drift, SyncReport("drift", reports), self.config)
        if problems:
            records = [self._amend(r, problems) for r in records]
        with self.open_kb() as kb:
            return [self._store(kb, r) for r in records]

    def _source_run(self, kind: Literal["sync", "drift"], source: str, due: datetime
                    ) -> tuple[RunRecord, SourceReport | None]:
        started = self.clock()
        src = effective(self.config.source(source), self.config.defaults)
        rep: SourceReport | None = None
        try:
            with self.open_kb() as kb:
                report = (sync if kind == "sync" else drift)(kb, self.config, source)
            rep = report.sources[0]
            counts, problems = report.totals(), _problems(rep)
            ok = report.ok
        except Exception as exc:  # a run never ends the scheduler; the record says what failed
            counts, ok = {}, False
            problems = [f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"]
        record = RunRecord(kind=kind, source=source, tenant=src.tenant, scheduled_for=_iso(due),
                           started_at=_iso(started), ended_at=_iso(self.clock()), ok=ok,
                           counts=counts, problems=tuple(problems))
        if kind == "sync":
            with self.open_kb() as kb:
                record = self._store(kb, record)
        return record, rep

    @staticmethod
    def _amend(record: RunRecord, problems: list[str]) -> RunRecord:
        return dataclasses.replace(record, ok=False, problems=record.problems + tuple(problems))

    def _store(self, kb: Knowledge, record: RunRecord) -> RunRecord:
        stored = dataclasses.replace(record, id=kb.record_run(record))
        if self.on_run is not None:
            self.on_run(stored)
        return stored


def _problems(rep: SourceReport) -> list[str]:
    out = [f"source could not be read: {rep.failed}"] if rep.failed else []
    out += [f"{e.item}: {e.reason}" for e in rep.errors]
    out += [f"skipped {s.item}: {s.reason}" for s in rep.skipped]
    return out


def run_records(config: Config, report: SyncReport, started: datetime, ended: datetime) -> list[RunRecord]:
    """One run record per source of a sync or drift run on request (``evidex sync --record``),
    as the scheduler writes them for its own runs (``scheduled_for`` None: not scheduled), so an
    operator's view shows a run made by hand like a scheduled one."""
    out = []
    for rep in report.sources:
        one = SyncReport(report.kind, [rep])
        src = effective(config.source(rep.source), config.defaults)
        out.append(RunRecord(kind=report.kind, source=rep.source, tenant=src.tenant, started_at=_iso(started),
                             ended_at=_iso(ended), ok=one.ok, counts=one.totals(),
                             problems=tuple(_problems(rep))))
    return out
