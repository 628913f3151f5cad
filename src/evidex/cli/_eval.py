"""``evidex eval``: BEIR-format retrieval sets, question sets and case files (``evaluation``)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from ..model import EvidexError
from ._output import JsonOpt, UsageError, emit, errors, progress, safe
from ._settings import AsOpt, GroupsOpt, TenantOpt, VisOpt, caller, open_kb, state

__all__ = ["COMMANDS"]


@errors
def evaluate(
    ctx: typer.Context,
    beir: Annotated[
        Path | None, typer.Option("--beir", help="BEIR folder (corpus, queries, qrels).")
    ] = None,
    qa: Annotated[
        Path | None, typer.Option("--qa", help="Question set (JSONL) to answer from --db.")
    ] = None,
    cases: Annotated[
        Path | None, typer.Option("--cases", help="Case file (YAML): builds its collection in a "
                                  "new store (temporary unless --db names one) and runs its cases.")
    ] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write the report as one HTML file (--cases).")
    ] = None,
    root: Annotated[
        Path | None, typer.Option("--root", help="Folder the case file may read below (--cases; "
                                  "default: the case file's own folder).")
    ] = None,
    category: Annotated[
        list[str] | None, typer.Option("--category", help="Only cases of this category (repeatable).")
    ] = None,
    case_type: Annotated[
        list[str] | None, typer.Option("--type", help="Only cases of this type (repeatable).")
    ] = None,
    case_id: Annotated[
        list[str] | None, typer.Option("--id", help="Only the case with this id (repeatable).")
    ] = None,
    tenant: TenantOpt = None,
    groups: GroupsOpt = None,
    visibilities: VisOpt = None,
    as_name: AsOpt = None,
    generator: Annotated[str | None, typer.Option(help="extractive or openai (--qa, --cases).")] = None,
    mode: Annotated[str, typer.Option(help="hybrid, keyword or vector.")] = "keyword",
    analyzer: Annotated[str | None, typer.Option("--analyzer", help="Analyzer (default: english).")] = None,
    embedder: Annotated[str | None, typer.Option(help="Embedding model (vector, hybrid).")] = None,
    fusion: Annotated[
        str | None, typer.Option(help="adaptive, convex or rrf (hybrid; default: retrieval.fuse, adaptive).")
    ] = None,
    alpha: Annotated[float, typer.Option(help="Vector weight of convex fusion.")] = 0.5,
    record: Annotated[
        str | None, typer.Option("--record", metavar="TENANT", help=(
            "--cases: build the collection in a temporary store and record the report's summary "
            "(the gate's checks, the figures per category; no case text) for TENANT in the store "
            "--db or the configuration names, for the page's Operators tab."))
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Measure retrieval on a BEIR-format set, answer a question set, or run a case file.

    A BEIR set gives nDCG@10, Recall@100 and MRR@10 (in a temporary store; passage vectors come
    from the embedding cache when they were computed before). A case file exits with status 0
    when its gate passed, 1 when the gate failed, 2 when the case file or its collection is
    invalid."""
    from ..evaluation import evaluate_beir, evaluate_qa

    if sum(x is not None for x in (beir, qa, cases)) != 1:
        raise UsageError("give exactly one of --beir DIR, --qa FILE or --cases FILE")
    if cases is not None:
        explicit_db = ctx.parent.params.get("db") if ctx.parent is not None else None
        _eval_cases(cases, db=None if record else explicit_db, html=html, record=record,
                    categories=tuple(category or ()),
                    types=tuple(case_type or ()), ids=tuple(case_id or ()),
                    embedder=embedder or state.embedder, analyzer=analyzer or state.analyzer,
                    generator=generator or state.cfg.answer.generator, as_json=as_json,
                    tools=state.cfg.tools, root=root)
        return
    if qa is not None:
        who = caller(tenant, groups, visibilities, as_name)  # whom the questions come from
        with open_kb() as kb:
            result = evaluate_qa(kb, qa, who,
                                 generator=generator or state.cfg.answer.generator)
        if as_json:
            emit(result)
        else:
            for k, v in result.items():
                if k != "failures":
                    typer.echo(f"{k}: {v}")
        return
    assert beir is not None
    result = evaluate_beir(beir, mode=mode, analyzer=analyzer or state.analyzer or "english",
                           embedder=embedder, fusion=fusion or state.cfg.retrieval.fuse, alpha=alpha,
                           progress=lambda done, total: typer.echo(f"indexed {done}/{total} documents",
                                                                   err=True))
    if as_json:
        emit(result)
    else:
        for k, v in result.items():
            typer.echo(f"{k}: {v}")


def _eval_cases(path: Path, *, db: str | None, html: Path | None, as_json: bool, record: str | None,
                **options: Any) -> None:
    """``evidex eval --cases``: exit 0 when the gate passes, 1 when it fails, 2 when nothing
    could be measured (invalid case file or collection, or any other error)."""
    from ..evaluation import evaluate_cases, record_summary, render_html, render_text
    from ..store import EvalRecord

    try:
        started = datetime.now(UTC)
        with progress("cases", show=not as_json) as step:
            report = evaluate_cases(path, db=db, settings=state.cfg.answer_settings(),
                                    progress=step, **options)
        if html is not None:
            html.write_text(render_html(report), encoding="utf-8")
        if record is not None:
            run = EvalRecord(record, path.name, started.isoformat(timespec="seconds"),
                             datetime.now(UTC).isoformat(timespec="seconds"), bool(report["gate"]["passed"]),
                             record_summary(report))
            with open_kb(create=True) as kb:
                kb.for_tenant(record).store.record_eval(run)
    except (EvidexError, OSError) as exc:
        message = str(exc) if isinstance(exc, EvidexError) else f"{exc.strerror or exc}: {exc.filename or ''}"
        lines = message.splitlines() or ["failed"]
        typer.echo(f"error: {safe(lines[0])}", err=True)
        for line in lines[1:]:
            typer.echo(f"  {safe(line)}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        emit(report)
    else:
        sys.stdout.write(render_text(report))
    raise typer.Exit(0 if report["gate"]["passed"] else 1)


COMMANDS = {"eval": evaluate}
