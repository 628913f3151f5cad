"""``evidex feedback export``: users' feedback on answers as a draft case file for review (one
call into ``evaluation.feedback_cases``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from ..evaluation import feedback_cases
from ._output import UsageError, errors, safe
from ._settings import open_kb

__all__ = ["feedback_app"]

feedback_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                           help="Answer feedback from the service's users (operators).")


@feedback_app.command("export")
@errors
def export(
    since: Annotated[str, typer.Option(help="Feedback given at or after this ISO 8601 date or time "
                                            "(UTC), e.g. 2026-12-06.")],
    tenant: Annotated[str, typer.Option(help="The tenant whose feedback is exported.")],
    out: Annotated[Path, typer.Option(help="The draft case file to write.")],
    ingest: Annotated[list[str] | None, typer.Option(
        "--ingest", help="A folder of the tenant's documents, relative to --out (repeatable): the "
                         "draft's collection.ingest, which evidex eval --cases builds its store "
                         "from.")] = None,
    like: Annotated[Path | None, typer.Option(
        "--like", help="A case file whose collection the drafts use (its folders, read below the "
                       "case file's parent folder, with their groups, visibility and language, "
                       "rebased on --out), instead of --ingest.")] = None,
) -> None:
    """Write the tenant's feedback since a date as draft evaluation cases (evidex eval --cases
    loads the file as written): helpful answers as answerable cases expecting what they cited,
    unhelpful ones as cases to label with their note, declined ones that were handed off as
    answerable candidates."""
    if (like is None) == (not ingest):
        raise UsageError("give --ingest FOLDER (repeatable) or --like CASEFILE, not both")
    entries: list[str | dict[str, Any]] = list(ingest or [])
    if like is not None:
        from ..evaluation import load_cases

        entries = [{"path": os.path.relpath(e.path, out.resolve().parent),
                    **({"groups": list(e.groups)} if e.groups else {}),
                    **({"visibility": e.visibility} if e.visibility else {}),
                    **({"language": e.language} if e.language else {})}
                   for e in load_cases(like, root=like.resolve().parents[1]).collection
                   if e.tenant == tenant]  # another tenant's folders have no place in these drafts
    with open_kb() as kb:
        draft = feedback_cases(kb, tenant, since, entries)
    out.write_text(draft.text, encoding="utf-8")
    counts = ", ".join(f"{n} {kind}" for kind, n in draft.counts.items())
    typer.echo(f"wrote {safe(str(out))}: {counts}")
