"""The store's own maintenance: ``evidex stats``, ``check``, ``reindex``, ``reembed`` and
``migrate``, each one call into ``KnowledgeBase`` (or ``migrate_store``) plus printing."""

from __future__ import annotations

from typing import Annotated

import typer

from ..kb import migrate_store
from ..knowledge import Knowledge
from ._output import JsonOpt, emit, errors, fail, progress, safe
from ._settings import open_kb, state

ServerTenantOpt = Annotated[str | None, typer.Option(
    "--tenant", help="Only the store this tenant is placed on (default: every store).")]


def _chosen(kb: Knowledge, tenant: str | None) -> Knowledge:
    """The handle of ``tenant``'s store, saying so on stderr; ``kb`` (every store) without one."""
    if tenant is None:
        return kb
    typer.echo(f"server: {kb.server_of(tenant)}", err=True)
    return kb.for_tenant(tenant)


def _print_stats(data: dict[str, object], indent: str = "") -> None:
    for k, v in data.items():
        if k == "servers" and isinstance(v, list):
            for s in v:
                if "location" in s:  # a store of the placement, with its own counts
                    typer.echo(f"{indent}server {s['location']} [{', '.join(s['placed'])}]:")
                    own = {x: y for x, y in s.items() if x not in ("location", "placed")}
                    _print_stats(own, indent + "  ")
                else:  # a primary or replica of one store
                    lag = f", lag {s['lag_s']} s" if s.get("lag_s") is not None else ""
                    error = f": {s['error']}" if s.get("error") else ""
                    typer.echo(safe(f"{indent}{s['server']}: {s['state']}, generation {s['generation']}{lag}"
                                    f"{error}"))
        else:
            typer.echo(f"{indent}{k}: {v}")

__all__ = ["COMMANDS"]


@errors
def stats(tenant: ServerTenantOpt = None, as_json: JsonOpt = False) -> None:
    """Counts of documents, passages, versions and index segments.

    With tenants on several stores: per store (which tenants are placed there) and in total;
    with read replicas: each server's state, generation and lag."""
    with open_kb() as kb:
        data = _chosen(kb, tenant).stats()
    if as_json:
        emit(data)
    else:
        _print_stats(data)


@errors
def check(tenant: ServerTenantOpt = None, as_json: JsonOpt = False) -> None:
    """Verify the store end to end.

    Fingerprints, postings, vectors, history and the database's own checks: each problem is
    printed with its ids (and its store, with tenants on several), and the exit status is 1
    when there is any."""
    with open_kb() as kb:
        report = _chosen(kb, tenant).check()
    if as_json:
        emit(report.as_dict())
    else:
        for p in report.problems:
            typer.echo(safe(str(p)))
        if report.problem_count > len(report.problems):
            typer.echo(f"... and {report.problem_count - len(report.problems)} more")
        typer.echo(f"checked {report.documents} documents, {report.passages} passages, "
                   f"{report.terms} terms, {report.vectors} vectors, {report.history_versions} "
                   f"superseded versions in {report.seconds:.1f} s: "
                   + ("no problems" if report.ok else f"{report.problem_count} problem"
                      + ("s" if report.problem_count > 1 else "")),
                   err=not report.ok)
    if not report.ok:
        raise typer.Exit(1)


@errors
def reindex(analyzer: Annotated[str, typer.Option("--analyzer", help="auto, exact, english, german.")],
            tenant: ServerTenantOpt = None, as_json: JsonOpt = False) -> None:
    """Rebuild the keyword index with another analyzer and switch to it atomically."""
    with open_kb() as kb:
        count = _chosen(kb, tenant).reindex(analyzer, session=state.session)
    emit({"analyzer": analyzer, "passages": count}) if as_json else typer.echo(f"reindexed {count} passages")


@errors
def reembed(
    model: Annotated[str, typer.Option("--model", help="Embedding model id.")],
    tenant: ServerTenantOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Rebuild every passage vector with another model and switch to it atomically."""
    with open_kb() as kb, progress(f"embedding with {model}", show=not as_json) as step:
        count = _chosen(kb, tenant).reembed(model, progress=step, session=state.session)
    if as_json:
        emit({"model": model, "passages": count})
    else:
        typer.echo(f"re-embedded {count} passages with {model}")


@errors
def migrate(
    source: Annotated[str, typer.Option("--from", help="Store to copy (SQLite file or postgresql:// URL).")],
    target: Annotated[str, typer.Option("--to", help="Empty store to create or fill.")],
    as_json: JsonOpt = False,
) -> None:
    """Copy a store with its history to another backend and verify the copy.

    Every document is verified by its fingerprint, passage count and history in the target."""
    report = migrate_store(source, target)
    if as_json:
        emit({"from": source, "to": target, **report.as_dict()})
    else:
        typer.echo(f"copied {report.documents} documents, {report.passages} passages, "
                   f"{report.history_versions} history versions; verified {report.verified}")
    if report.mismatches:
        raise fail("the copy differs from the source: " + "; ".join(report.mismatches[:5]))


COMMANDS = {"stats": stats, "check": check, "reindex": reindex, "reembed": reembed, "migrate": migrate}
