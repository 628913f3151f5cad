"""The store's own maintenance: ``evidex stats``, ``check``, ``reindex``, ``reembed`` and
``migrate``, each one call into ``KnowledgeBase`` (or ``migrate_store``) plus printing."""

from __future__ import annotations

from typing import Annotated

import typer

from ..kb import migrate_store
from ._output import JsonOpt, emit, errors, fail, progress, safe
from ._settings import open_kb

__all__ = ["COMMANDS"]


@errors
def stats(as_json: JsonOpt = False) -> None:
    """Counts of documents, passages, versions and index segments."""
    with open_kb() as kb:
        data = kb.stats()
    if as_json:
        emit(data)
    else:
        for k, v in data.items():
            typer.echo(f"{k}: {v}")


@errors
def check(as_json: JsonOpt = False) -> None:
    """Verify the store end to end.

    Fingerprints, postings, vectors, history and the database's own checks: each problem is
    printed with its ids, and the exit status is 1 when there is any."""
    with open_kb() as kb:
        report = kb.check()
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
            as_json: JsonOpt = False) -> None:
    """Rebuild the keyword index with another analyzer and switch to it atomically."""
    with open_kb() as kb:
        count = kb.reindex(analyzer)
    emit({"analyzer": analyzer, "passages": count}) if as_json else typer.echo(f"reindexed {count} passages")


@errors
def reembed(
    model: Annotated[str, typer.Option("--model", help="Embedding model id.")],
    as_json: JsonOpt = False,
) -> None:
    """Rebuild every passage vector with another model and switch to it atomically."""
    with open_kb() as kb, progress(f"embedding with {model}", show=not as_json) as step:
        count = kb.reembed(model, progress=step)
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
