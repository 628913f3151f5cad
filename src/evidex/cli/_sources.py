"""The configured sources: ``evidex sync``, ``drift`` and ``schedule`` (``sources``), and who is
told after a drift check (``sources.after_drift``)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..model import EvidexError
from ._output import JsonOpt, emit, errors, safe
from ._settings import need_config, open_kb, state

if TYPE_CHECKING:  # the sources layer loads lazily: a fast start for every command
    from ..config import Config
    from ..sources import DriftHook, SourceReport, SyncReport

__all__ = ["COMMANDS"]

SourceOpt = Annotated[
    list[str] | None, typer.Option("--source", help="Only this source id (repeatable).")
]


def _run_sources(kind: str, source: list[str] | None, show: bool) -> SyncReport:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..sources import drift, sync

    config = need_config()
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), disable=not (show and sys.stderr.isatty()), transient=True)
    # The configuration names the store its sources fill: before the first sync, drift
    # reports every source document as new.
    with open_kb(create=True) as kb, bar:
        tasks: dict[str, Any] = {}

        def progress(what: str, done: int, total: int) -> None:
            if what not in tasks:
                tasks[what] = bar.add_task(safe(what), total=total)
            bar.update(tasks[what], completed=done, total=total)

        if kind == "sync":
            return sync(kb, config, source or None, progress=progress, session=state.session)
        return drift(kb, config, source or None, progress=progress)


def _show(report: SyncReport, as_json: bool, lines: Callable[[SourceReport], list[str]], total: str) -> None:
    """``report`` as JSON, or for a reader: per source its ``lines`` (the first after its name
    and owner) and what could not be read, then ``total``."""
    if as_json:
        emit(report.as_dict())
        return
    for rep in report.sources:
        owner = f" (owner {safe(rep.owner)})" if rep.owner else ""
        first, *more = lines(rep)
        typer.echo(f"{safe(rep.source)}{owner}: {first}" + "".join(f"\n{line}" for line in more))
        _print_problems(rep)
    typer.echo(total)


def _synced(rep: SourceReport) -> list[str]:
    d = rep.as_dict("sync")
    return [f"added {len(d['added'])}, superseded {len(d['superseded'])}, unchanged {d['unchanged']}, "
            f"removed {len(d['removed'])}, skipped {len(d['skipped'])}, conflicts {len(d['conflicts'])}"]


def _drifted(rep: SourceReport) -> list[str]:
    listed = [f"  {kind:<8} {safe(doc_id)}"
              for kind, ids in (("new", rep.new), ("changed", rep.changed), ("removed", rep.removed))
              for doc_id in sorted(ids)]
    return [f"{len(rep.new)} new, {len(rep.changed)} changed, {len(rep.removed)} removed, "
            f"{rep.unchanged} unchanged", *listed]


def _print_problems(rep: Any) -> None:
    if rep.failed:
        typer.echo(f"  failed: {safe(rep.failed)}", err=True)
    for s in rep.skipped:
        typer.echo(f"  skipped {safe(s.item)}: {safe(s.reason)}", err=True)
    for s in rep.errors:
        typer.echo(f"  kept (not readable now) {safe(s.item)}: {safe(s.reason)}", err=True)


@errors
def sync(source: SourceOpt = None, as_json: JsonOpt = False,
         record: Annotated[bool, typer.Option("--record", help=(
             "Also record each source's run in the store's run log, as scheduled runs are (evidex "
             "runs, the page's Operators tab, /metrics)."))] = False) -> None:
    """Bring the index in line with the configured sources.

    New documents are added, changed ones supersede, unchanged ones are skipped without
    writing, documents gone from the source are removed.

    Exit status 1 when a source or an item could not be read (its indexed documents are kept).
    """
    started = datetime.now(UTC)
    report = _run_sources("sync", source, show=not as_json)
    if record:
        from ..sources import run_records

        with open_kb() as kb:
            for run in run_records(need_config(), report, started, datetime.now(UTC)):
                kb.record_run(run)
    totals = ", ".join(f"{k} {v}" for k, v in report.totals().items())
    _show(report, as_json, _synced, f"total: {totals} ({report.seconds:.1f} s)")
    if not report.ok:
        raise typer.Exit(1)


@errors
def drift(
    source: SourceOpt = None,
    notify: Annotated[bool, typer.Option("--notify/--no-notify", help=(
        "Run what follows a drift check: the configured webhook (when something drifted), the "
        "source owners' notices and the registered hooks."))] = True,
    as_json: JsonOpt = False,
    record: Annotated[bool, typer.Option("--record", help=(
        "Also record each source's check in the store's run log, as scheduled checks are (evidex "
        "runs, the page's Operators tab, /metrics)."))] = False,
) -> None:
    """Compare each source with the index without writing: new, changed and removed documents
    per source and owner.

    Exit status 0: in sync; 1: something drifted; 2: a source could not be checked or one of
    the steps after the check (the webhook, an owner's route, a hook) failed.
    """
    started = datetime.now(UTC)
    report = _run_sources("drift", source, show=not as_json)
    t = report.totals()
    _show(report, as_json, _drifted, ("drifted: " if report.drifted else "in sync: ")
          + f"{t['new']} new, {t['changed']} changed, {t['removed']} removed")
    failed = False
    if notify:  # the webhook, the source owners, the registered hooks: a failure stops none
        from ..sources import after_drift, run_after_drift

        problems = run_after_drift(after_drift(_owners_step(as_json)), report, need_config())
        typer.echo("".join(f"error: {safe(p)}\n" for p in problems), nl=False, err=True)
        failed = bool(problems)
    else:
        problems = []
    if record:  # after the steps that follow the check, so a failed one is in the record too
        from ..sources import run_records

        with open_kb() as kb:
            for run in run_records(need_config(), report, started, datetime.now(UTC)):
                kb.record_run(dataclasses.replace(run, ok=False, problems=run.problems + tuple(problems))
                              if problems else run)
    if failed or not report.ok:
        raise typer.Exit(2)
    if report.drifted:
        raise typer.Exit(1)


def _owners_step(as_json: bool) -> DriftHook:
    """The owners step (``sources.notify_owners``) for a person at a terminal: every delivery is printed (with
    --json the failed ones only), and a failed route makes the step fail."""
    from ..model import NotifyError
    from ..sources import notify_owners

    def notify_owners_step(report: SyncReport, config: Config) -> None:
        with open_kb() as kb:
            sent = notify_owners(kb, config, report)
        typer.echo("".join(safe(x) + "\n" for x in sent.lines(failures_only=as_json)), nl=False, err=True)
        if not sent.ok:
            raise NotifyError("an owner was not reached (the FAILED line above)")

    notify_owners_step.__name__ = "notify_owners"
    return notify_owners_step


@errors
def schedule() -> None:
    """Run the configured syncs and drift checks at their times until interrupted.

    Each source's sync runs at its schedule: and the drift check at freshness.drift_check, one
    at a time; every run is recorded (evidex runs). evidex serve does the same alongside the
    service."""
    import signal
    import threading

    from ..sources import Scheduler, after_drift, owners_hook

    # SIGTERM (a service manager stopping it) lets the run in progress finish, then exits 0;
    # Ctrl-C stops at once (a store write is atomic either way). Installed before anything is
    # printed, so whoever saw the first line may stop it.
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    opener = functools.partial(open_kb, create=True)  # its syncs fill a new store
    scheduler = Scheduler(opener, need_config(), after_drift=after_drift(owners_hook(opener)),
                          on_run=lambda run: typer.echo(safe(run.line())))
    if not scheduler.jobs:
        raise EvidexError("nothing is scheduled: no source has a schedule: and there is no drift check")
    for job in scheduler.jobs:
        typer.echo(f"scheduled: {job.name} ({safe(job.cadence.text)}), first {scheduler.next_due[job]}",
                   err=True)
    with contextlib.suppress(KeyboardInterrupt):
        scheduler.run_forever(stop)


COMMANDS = {"sync": sync, "drift": drift, "schedule": schedule}
