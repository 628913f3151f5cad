"""Beyond one server: ``evidex move-tenant`` (one ``placement.move_tenant`` call) and
``evidex servers`` (where each tenant is served from, and how each server is doing)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..config import StoreLocation, write_placement
from ..model import EvidexError
from ..placement import MoveReport, move_tenant, unfinished_source
from ..store import redacted
from ._output import JsonOpt, UsageError, emit, errors, safe
from ._settings import open_kb, placement, state

__all__ = ["COMMANDS"]


@errors
def move_tenant_command(
    tenant: Annotated[str, typer.Argument(help="The tenant to move.")],
    to: Annotated[str, typer.Option(
        "--to", help="The store to move it to (postgresql:// URL or SQLite file).")],
    to_replica: Annotated[list[str] | None, typer.Option(
        "--to-replica", help="A streaming replica of --to (repeatable), for the configuration line.")] = None,
    source: Annotated[str | None, typer.Option(
        "--from", help="The store it is on (default: its placement in the configuration; give it to "
                       "finish a move whose configuration was already switched).")] = None,
    write_config: Annotated[bool, typer.Option(
        "--write-config", help="Rewrite the --config file's store.tenants entry for the tenant "
                               "(else the line to change is printed).")] = False,
    keep_source: Annotated[bool, typer.Option(
        "--keep-source", help="Leave the tenant's data on the old store (frozen: reads and writes "
                              "follow it to the new one).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Move a tenant to another store while it keeps being served.

    Copies its documents, passages, vectors, history, sync records, conflicts and runs, catches
    up the writes made meanwhile, freezes its writes on the old store for the last catch-up,
    verifies the copy (counts, fingerprints, statistics, a sample of citations and searches
    giving identical results on both), switches the tenant over (processes still configured
    with the old placement follow it), and removes it from the old store. Interrupted at any
    step, run it again: it finishes."""
    where = placement()
    if write_config and not state.config_path:
        raise UsageError("--write-config rewrites the --config file: give --config FILE")
    target = StoreLocation.model_validate({"url": to, "replicas": to_replica or []})
    r = state.cfg.retrieval
    frm = StoreLocation.model_construct(url=source, replicas=()) if source else where.location(tenant)
    if not source and frm.url == target.url:
        # The configuration names the target already: a move killed after writing it. Its old
        # store still marks the tenant as moved there; the same command finishes it.
        frm = unfinished_source(where, tenant, target, vector_timeout_ms=r.vector.timeout_ms) or frm
    show = not as_json

    def progress(step: str, done: int, total: int) -> None:
        if show and total and (done == total or done % 5000 < 200):
            typer.echo(f"  {step}: {done}/{total} documents", err=True)

    def switched(report: MoveReport) -> None:
        if write_config:
            assert state.config_path is not None
            write_placement(state.config_path, tenant, target)
            report.config_written = state.config_path
        elif show:
            typer.echo(f"{safe(tenant)} is served from {redacted(to)} now; set it in the configuration "
                       f"(under store: / tenants:):\n    {safe(report.config_line)}")

    report = move_tenant(tenant, frm, target, keep_source=keep_source, store=state.cfg.store,
                         progress=progress, switched=switched, vector_timeout_ms=r.vector.timeout_ms)
    if as_json:
        emit(report.as_dict())
        return
    c = report.counts
    if c is not None:
        typer.echo(f"verified {c.documents} documents, {c.passages} passages, {c.vectors} vectors, "
                   f"{c.history_versions} history versions, {c.signatures} access signatures, "
                   f"{c.sync_records} sync records, {c.conflicts} conflicts, {c.runs} runs; "
                   f"{report.citations_checked} citations and {report.searches_checked} searches "
                   "identical on both stores")
    if report.config_written:
        typer.echo(f"wrote store.tenants.{safe(tenant)} to {safe(report.config_written)}")
    typer.echo(f"moved {safe(tenant)} from {report.source} to {report.target}"
               + (" (kept on the old store)" if keep_source else
                  f"; removed {report.removed_from_source} documents from the old store")
               + f" in {sum(report.seconds.values()):.1f} s")


@errors
def servers(as_json: JsonOpt = False) -> None:
    """Where each tenant is served from, and each server's state (primary, replicas: generation, lag)."""
    with open_kb() as kb:
        found = kb.servers()
    if as_json:
        emit({"servers": found})
        return
    if not found:
        raise EvidexError("no servers")
    for s in found:
        where = f" [{', '.join(s['placed'])}]" if "placed" in s else ""  # type: ignore[arg-type]
        lag = f", lag {s['lag_s']} s" if s.get("lag_s") is not None else ""
        gen = f", generation {s['generation']}" if s.get("generation") is not None else ""
        error = f": {s['error']}" if s.get("error") else ""
        typer.echo(safe(f"{s['server']}{where}: {s['state']}{gen}{lag}{error}"))


COMMANDS = {"move-tenant": move_tenant_command, "servers": servers}
