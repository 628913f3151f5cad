"""``evidex conflicts`` and ``evidex runs``: what the store recorded about its sources (conflicts
found at ingestion, scheduled sync and drift runs), listed for an operator."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from ..model import EvidexError
from ._output import JsonOpt, UsageError, emit, errors, safe
from ._settings import open_kb, state

__all__ = ["COMMANDS"]

STATUSES = ("open", "closed", "dismissed", "all")


@errors
def conflicts(status: Annotated[str, typer.Option(help="open, closed, dismissed or all.")] = "open",
              tenant: Annotated[str | None, typer.Option(help="Only this tenant.")] = None,
              dismiss: Annotated[int | None, typer.Option(help="Dismiss it (and --tenant).")] = None,
              as_json: JsonOpt = False) -> None:
    """Passages of two documents stating different values for one subject (found at ingestion)."""
    if status not in STATUSES:
        raise UsageError(f"--status must be one of {', '.join(STATUSES)}, got {status!r}")
    if dismiss is not None and not tenant:
        raise UsageError("--dismiss needs --tenant: the tenant whose conflict it is")
    with open_kb() as kb:
        by = os.environ.get("USER", "cli")
        if dismiss is not None:
            if not kb.dismiss_conflict(tenant or "", dismiss, by):
                raise EvidexError(f"no open conflict {dismiss} in tenant {tenant!r}")
            # On stderr: the listing that follows (open ones by default) no longer shows it.
            typer.echo(f"dismissed conflict {dismiss} of tenant {safe(tenant or '')} (by {safe(by)})",
                       err=True)
        found = kb.conflicts(tenant, None if status == "all" else status, session=state.session)
    emit({"conflicts": [c.as_dict() for c in found]}) if as_json else typer.echo(
        "".join(f"{safe(c.summary())}\n" for c in found) + f"{len(found)} conflict(s)")


@errors
def runs(limit: Annotated[int, typer.Option(min=1, max=10_000, help="How many, newest first.")] = 50,
         source: Annotated[str | None, typer.Option(help="Only this source's runs.")] = None,
         as_json: JsonOpt = False) -> None:
    """The latest sync and drift runs recorded in the store: start, end, counts, problems."""
    with open_kb() as kb:
        found = kb.runs(limit, source=source)
    if as_json:
        return emit({"runs": [r.as_dict() for r in found]})
    for r in found:
        typer.echo(safe(r.line()))
    if not found:
        # An empty listing would read as a store without a schedule's failures; say why it is empty.
        of = f" of source {safe(source)!r}" if source else ""
        typer.echo(f"no runs{of} recorded: runs are the scheduled syncs and drift checks of "
                   "evidex schedule and evidex serve, and evidex sync --record (evidex drift is not "
                   "recorded)")


COMMANDS = {"conflicts": conflicts, "runs": runs}
