"""``evidex check``: the command-line face of ``KnowledgeBase.check`` (see ``evidex.check``).

Registered on the app by ``cli`` (imported at its end, so the shared options exist here).
"""

from __future__ import annotations

from pathlib import Path

import typer

from .cli import JsonOpt, _emit, _errors, _open, _safe, app, state
from .model import EvidexError
from .store import is_postgres_url


@app.command("check")
@_errors
def check_cmd(as_json: JsonOpt = False) -> None:
    """Verify the store end to end (fingerprints, postings, vectors, history, the database's
    own checks); print each problem with its ids and exit 1 when there is any."""
    if not is_postgres_url(state.db) and not Path(state.db.removeprefix("sqlite:///")).is_file():
        raise EvidexError(f"no store at {state.db}")  # opening would create an empty one
    with _open() as kb:
        report = kb.check()
    if as_json:
        _emit(report.as_dict())
    else:
        for p in report.problems:
            typer.echo(_safe(str(p)))
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
