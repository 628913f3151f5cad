"""CLI commands of knowledge operations: ``evidex schedule`` and ``evidex runs``.

Registered on ``evidex.cli.app`` when that module is imported; kept apart so the command module
stays small. Each command is one call into the library (``sources.Scheduler``, ``KnowledgeBase.
runs``).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Annotated

import typer

from .cli import JsonOpt, _emit, _errors, _need_config, _safe, app, state
from .kb import KnowledgeBase
from .store import RunRecord

__all__: list[str] = []


def _line(r: RunRecord) -> str:
    counts = ", ".join(f"{k} {v}" for k, v in sorted(r.counts.items()) if v)
    status = "ok" if r.ok else f"{len(r.problems)} problem{'s' if len(r.problems) != 1 else ''}"
    return (f"{r.started_at} .. {r.ended_at[11:]}  {r.kind:5} {_safe(r.source)}: {status}"
            f"{'; ' + counts if counts else ''}")


@app.command()
@_errors
def schedule() -> None:
    """Run scheduled syncs and drift checks until interrupted.

    Each source's sync runs at its schedule:, the drift check at freshness.drift_check, one at a
    time; every run is recorded in the store (see evidex runs). evidex serve does the same
    alongside the service (unless --no-schedule)."""
    from .sources import Scheduler

    config = _need_config()
    r = config.retrieval

    def open_kb() -> KnowledgeBase:
        return KnowledgeBase.open(state.db, analyzer=state.analyzer or r.analyzer,
                                  embedder=state.embedder or r.embedder,
                                  vector_timeout_ms=r.vector.timeout_ms)

    scheduler = Scheduler(open_kb, config, on_run=lambda run: typer.echo(_line(run)))
    if not scheduler.jobs:
        raise typer.BadParameter("nothing is scheduled: no source sets schedule: and "
                                 "freshness.drift_check is off (or there are no sources)")
    for job in scheduler.jobs:
        typer.echo(f"scheduled: {job.name} ({job.cadence.text}), next {scheduler.next_due[job].isoformat()}",
                   err=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        scheduler.run_forever(stop)


@app.command()
@_errors
def runs(
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="How many of the latest runs.")] = 50,
    source: Annotated[str | None, typer.Option(help="Only the runs of this source.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """The latest scheduled sync and drift runs recorded in the store, newest first."""
    with KnowledgeBase.open(state.db) as kb:
        found = kb.runs(limit, source=source)
    if as_json:
        _emit({"runs": [r.as_dict() for r in found]})
        return
    if not found:
        typer.echo("No runs recorded.")
    for r in found:
        typer.echo(_line(r))
        for p in r.problems:
            typer.echo(f"    {_safe(p)}")
