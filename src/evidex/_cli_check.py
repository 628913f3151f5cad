"""``evidex check`` and ``evidex reindex``: the command-line faces of ``KnowledgeBase.check``
(see ``evidex.check``) and ``KnowledgeBase.reindex``, the store's own maintenance.

``cli`` adds ``check_cmd`` and ``reindex_cmd`` to its commands.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .console import JsonOpt, emit, errors, open_kb, safe

__all__ = ["check_cmd", "reindex_cmd"]


@errors
def check_cmd(as_json: JsonOpt = False) -> None:
    """Verify the store end to end (fingerprints, postings, vectors, history, the database's
    own checks); print each problem with its ids and exit 1 when there is any."""
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
def reindex_cmd(analyzer: Annotated[str, typer.Option("--analyzer", help="auto, exact, english, german.")],
                as_json: JsonOpt = False) -> None:
    """Rebuild the keyword index with another analyzer and switch to it atomically."""
    with open_kb() as kb:
        count = kb.reindex(analyzer)
    emit({"analyzer": analyzer, "passages": count}) if as_json else typer.echo(f"reindexed {count} passages")
