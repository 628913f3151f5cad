"""The ``evidex`` command: a thin layer of commands over the library.

Every command takes ``--json`` for machine-readable output; errors print one line to stderr and
exit non-zero. Human output strips control characters from document text so a hostile document
cannot drive the terminal.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from . import __version__
from ._cli_check import check_cmd, reindex_cmd
from ._cli_findings import conflicts_cmd, runs_cmd
from ._cli_tools import ClaimOpt, citation_line, pairs, tools_app
from .config import load_config
from .console import JsonOpt, print_hits, state
from .console import emit as _emit
from .console import errors as _errors
from .console import fail as _fail
from .console import need_config as _need_config
from .console import open_kb as _open
from .console import safe as _safe
from .ingest import DEFAULT_MAX_FILE_BYTES, FORMATS, FRONT_MATTER_KEYS, load_paths
from .kb import migrate_store
from .model import Actor, EvidexError

if TYPE_CHECKING:  # the sources layer loads lazily: a fast start for every command
    from .sources import SyncReport

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="evidex: retrieval where every passage traces back to its source.",
)
app.add_typer(tools_app, name="tools")




TenantOpt = Annotated[str, typer.Option("--tenant", help="Tenant of the caller.")]
GroupsOpt = Annotated[str, typer.Option("--groups", help="Comma-separated groups of the caller.")]
VisOpt = Annotated[
    str, typer.Option("--visibilities", help="Comma-separated visibilities the caller may read "
                      "(default: public only; add internal, confidential, restricted explicitly).")
]


def _split_csv(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _actor(tenant: str, groups: str, visibilities: str, claims: list[str] | None = None) -> Actor:
    named = frozenset(_split_csv(groups))
    if not named:  # a caller in no group reads nothing: every search would come back empty
        raise EvidexError("--groups names no group: give the caller's groups, comma-separated")
    return Actor(tenant, named, visibilities=frozenset(_split_csv(visibilities)),
                 claims=pairs(claims, "--claim"))


@contextmanager
def _progress(description: str, show: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A transient progress bar on a terminal, as a ``progress(done, total)`` callback; None
    (and no bar) when output is not for a person watching a terminal."""
    if not (show and sys.stderr.isatty()):
        yield None
        return
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task(description, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def _show_version(value: bool) -> None:
    """Eager: runs while the options are parsed, before click asks for a command."""
    if value:
        typer.echo(__version__)
        raise typer.Exit(0)


@app.callback()
def main_options(
    db: Annotated[
        str | None,
        typer.Option("--db", help="Store location (default: $EVIDEX_DB, then ./evidex.db)."),
    ] = None,
    analyzer: Annotated[str | None, typer.Option(
        "--analyzer", help="Analyzer for a new store: auto (default), exact, english, german.")] = None,
    embedder: Annotated[
        str | None,
        typer.Option("--embedder", help="Embedding model for a new store (none = keyword only)."),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option("--config", help="knowledge.config.yaml: sources and retrieval/answer defaults "
                     "for every command (default: $EVIDEX_CONFIG)."),
    ] = None,
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_show_version,
                                          help="Show the version.")] = False,
) -> None:
    state.db = db or os.environ.get("EVIDEX_DB") or "evidex.db"
    state.analyzer = analyzer
    state.embedder = embedder
    state.config_path = config or os.environ.get("EVIDEX_CONFIG") or None
    state.config = None
    if state.config_path:
        try:
            state.config = load_config(state.config_path)
        except EvidexError as exc:
            # The header ("error: file:line: ... (and N more)") first, then one line per
            # further problem.
            first = _fail(str(exc))
            for line in str(exc).splitlines()[1:]:
                typer.echo(f"  {_safe(line)}", err=True)
            raise first from None


@app.command()
@_errors
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (.md, .txt, .jsonl).")],
    tenant: Annotated[str | None, typer.Option(help="Tenant for documents that set none.")] = None,
    groups: Annotated[str | None, typer.Option(help="Comma-separated groups.")] = None,
    visibility: Annotated[str | None, typer.Option(help="public, internal, ...")] = None,
    language: Annotated[str | None, typer.Option(help="Language tag, e.g. en or de.")] = None,
    version: Annotated[str | None, typer.Option(help="Version for documents that set none.")] = None,
    split: Annotated[str, typer.Option(help="paragraph, heading or document.")] = "paragraph",
    max_file_mb: Annotated[float, typer.Option(
        "--max-file-mb", min=0.001, help="Largest file read, in MiB; larger files are rejected.")
    ] = DEFAULT_MAX_FILE_BYTES / (1024 * 1024),
    as_json: JsonOpt = False,
) -> None:
    """Ingest documents: new ones are added, changed ones supersede, unchanged ones are skipped.

    Markdown and text files may start with YAML front matter setting
    id, version, groups, visibility, language, title, source_url, tags, published_at.
    """
    defaults: dict[str, Any] = {
        "tenant": tenant,
        "groups": _split_csv(groups) or None,
        "visibility": visibility,
        "language": language,
        "version": version,
    }
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise EvidexError(f"no such file or folder: {_safe(missing[0])}; nothing was ingested")
    loaded = load_paths(list(paths), defaults, max_bytes=int(max_file_mb * 1024 * 1024))
    if not loaded.documents and not loaded.rejected:  # a wrong folder, not an empty success
        raise EvidexError(f"nothing to ingest in {_safe(', '.join(map(str, paths)))}: no document in a "
                          f"{', '.join(sorted(FORMATS))} file; nothing was written")
    with _open(create=True) as kb, _progress("ingesting", show=not as_json) as progress:
        # Large inputs go in batches, each atomic; the whole input is checked before any write.
        report = kb.ingest(loaded.documents, split=split, batch_size=INGEST_BATCH,
                           identify_languages=True, progress=progress)
    summary = {**report.as_dict(), "rejected": len(loaded.rejected)}
    if as_json:
        _emit({**summary, "rejections": [r.__dict__ for r in loaded.rejected]})
    else:
        for r in loaded.rejected:
            typer.echo(f"rejected {_safe(r.source)}: {_safe(r.reason)}", err=True)
        typer.echo(", ".join(f"{k.replace('_', ' ')} {v}" for k, v in summary.items() if k != "conflicts"))
        typer.echo("".join(_safe(c.summary()) + "\n" for c in report.conflicts), nl=False)
    if loaded.rejected:
        raise typer.Exit(1)


#: Documents per transaction of ``evidex ingest``.
INGEST_BATCH = 500


@app.command()
@_errors
def search(
    query: Annotated[str, typer.Argument(help="Words to search for (no operators).")],
    tenant: TenantOpt,
    groups: GroupsOpt,
    visibilities: VisOpt = "public",
    limit: Annotated[int | None, typer.Option(help="Number of passages (config top_k, else 6).")] = None,
    match: Annotated[str | None, typer.Option(help="any or all query words.")] = None,
    mode: Annotated[str | None, typer.Option(help="hybrid, keyword or vector.")] = None,
    fusion: Annotated[str | None, typer.Option(help="adaptive, convex or rrf (hybrid mode).")] = None,
    explain: Annotated[bool, typer.Option(help="Show each leg's rank and score.")] = False,
    language: Annotated[str | None, typer.Option(help="Only documents in this language.")] = None,
    tag: Annotated[list[str] | None, typer.Option(help="Only documents with this tag.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Search the passages the caller may read (defaults from --config's retrieval section)."""
    actor = _actor(tenant, groups, visibilities)
    filters = {"language": language, "tags": tag or []}
    r = state.cfg.retrieval
    with _open() as kb:
        hits = kb.search(actor, query, limit=r.top_k if limit is None else limit,
                         match=r.match if match is None else match, filters=filters,
                         mode=r.mode if mode is None else mode, explain=explain,
                         fusion=r.fuse if fusion is None else fusion, rrf_k=r.rrf_k,
                         window=r.window, alpha=r.alpha, max_per_document=r.max_per_document)
    if as_json:
        _emit({"hits": [h.as_dict() for h in hits], "evidence": hits.evidence,
               "fallback": hits.fallback})
        return
    print_hits(hits, explain)


@app.command()
@_errors
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    tenant: TenantOpt,
    groups: GroupsOpt,
    visibilities: VisOpt = "public",
    generator: Annotated[str | None, typer.Option(help="extractive or openai.")] = None,
    handoff: Annotated[str | None, typer.Option(help="How to reach a person when declining.")] = None,
    claim: ClaimOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer from the passages the caller may read and its live lookups, citing every claim, or decline."""
    with _open() as kb:
        ans = kb.answer(_actor(tenant, groups, visibilities, claim), question,
                        generator=generator or state.cfg.answer.generator,
                        settings=state.cfg.answer_settings(handoff))
    if as_json:
        _emit(ans.as_dict())
        return
    typer.echo(_safe(ans.text))
    if ans.status == "answered":
        typer.echo("\n".join(citation_line(c) for c in ans.citations))
    else:
        typer.echo(f"  reason: {ans.reason}")
        if ans.handoff:
            typer.echo(f"  {_safe(ans.handoff)}")


@app.command()
@_errors
def resolve(
    tenant: TenantOpt,
    groups: GroupsOpt,
    visibilities: VisOpt = "public",
    as_json: JsonOpt = False,
) -> None:
    """Re-check a citation read as JSON from standard input."""
    text = sys.stdin.read()
    if not text.strip():
        raise EvidexError("no citation on standard input: pipe one hit of `evidex search --json` into it")
    citation = json.loads(text)
    with _open() as kb:
        res = kb.resolve(_actor(tenant, groups, visibilities), citation)
    if as_json:
        _emit(res.as_dict())
    else:
        typer.echo("ok: the citation holds" if res.ok else f"{res.reason}: {_safe(res.detail)}")
    if not res.ok:
        raise typer.Exit(2)


@app.command()
@_errors
def remove(
    document_id: Annotated[str, typer.Argument(help="Document id.")],
    tenant: TenantOpt,
    as_json: JsonOpt = False,
) -> None:
    """Delete a document with all its passages and history."""
    with _open() as kb:
        existed = kb.remove(tenant, document_id)
    if as_json:
        _emit({"removed": existed, "document_id": document_id})
    elif existed:
        typer.echo(f"removed {document_id}")
    if not existed:
        raise _fail(f"no document {document_id!r} in tenant {tenant!r}")


@app.command()
@_errors
def stats(as_json: JsonOpt = False) -> None:
    """Counts of documents, passages, versions and index segments."""
    with _open() as kb:
        data = kb.stats()
    if as_json:
        _emit(data)
    else:
        for k, v in data.items():
            typer.echo(f"{k}: {v}")


@app.command()
@_errors
def reembed(
    model: Annotated[str, typer.Option("--model", help="Embedding model id.")],
    as_json: JsonOpt = False,
) -> None:
    """Rebuild every passage vector with another model and switch to it atomically."""
    with _open() as kb, _progress(f"embedding with {model}", show=not as_json) as progress:
        count = kb.reembed(model, progress=progress)
    if as_json:
        _emit({"model": model, "passages": count})
    else:
        typer.echo(f"re-embedded {count} passages with {model}")


@app.command()
@_errors
def migrate(
    source: Annotated[str, typer.Option("--from", help="Store to copy (SQLite file or postgresql:// URL).")],
    target: Annotated[str, typer.Option("--to", help="Empty store to create or fill.")],
    as_json: JsonOpt = False,
) -> None:
    """Copy a store with its history to another backend, then verify every document by its
    fingerprint, passage count and history in the target."""
    report = migrate_store(source, target)
    if as_json:
        _emit({"from": source, "to": target, **report.as_dict()})
    else:
        typer.echo(f"copied {report.documents} documents, {report.passages} passages, "
                   f"{report.history_versions} history versions; verified {report.verified}")
    if report.mismatches:
        raise _fail("the copy differs from the source: " + "; ".join(report.mismatches[:5]))


@app.command("eval")
@_errors
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
    tenant: Annotated[str | None, typer.Option(help="Caller tenant (--qa).")] = None,
    groups: Annotated[str | None, typer.Option(help="Caller groups (--qa).")] = None,
    visibilities: VisOpt = "public",
    generator: Annotated[str | None, typer.Option(help="extractive or openai (--qa, --cases).")] = None,
    mode: Annotated[str, typer.Option(help="hybrid, keyword or vector.")] = "keyword",
    analyzer: Annotated[str | None, typer.Option("--analyzer", help="Analyzer (default: english).")] = None,
    embedder: Annotated[str | None, typer.Option(help="Embedding model (vector, hybrid).")] = None,
    fusion: Annotated[
        str | None, typer.Option(help="adaptive, convex or rrf (hybrid; default: retrieval.fuse, adaptive).")
    ] = None,
    alpha: Annotated[float, typer.Option(help="Vector weight of convex fusion.")] = 0.5,
    as_json: JsonOpt = False,
) -> None:
    """Measure nDCG@10, Recall@100 and MRR@10 on a BEIR-format set (temporary store; passage
    vectors come from the embedding cache when they were computed before), answer a question
    set, or run a case file (exit status 0: its gate passed, 1: the gate failed, 2: the case
    file or its collection is invalid)."""
    from .evaluation import evaluate_beir, evaluate_qa

    if sum(x is not None for x in (beir, qa, cases)) != 1:
        raise EvidexError("give exactly one of --beir DIR, --qa FILE or --cases FILE")
    if cases is not None:
        explicit_db = ctx.parent.params.get("db") if ctx.parent is not None else None
        _eval_cases(cases, db=explicit_db, html=html, categories=tuple(category or ()),
                    types=tuple(case_type or ()), ids=tuple(case_id or ()),
                    embedder=embedder or state.embedder, analyzer=analyzer or state.analyzer,
                    generator=generator or state.cfg.answer.generator, as_json=as_json,
                    tools=state.cfg.tools, root=root)
        return
    if qa is not None:
        if not tenant or not groups:
            raise EvidexError("--qa needs --tenant and --groups (the caller the questions come from)")
        with _open() as kb:
            result = evaluate_qa(kb, qa, _actor(tenant, groups, visibilities),
                                 generator=generator or state.cfg.answer.generator)
        if as_json:
            _emit(result)
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
        _emit(result)
    else:
        for k, v in result.items():
            typer.echo(f"{k}: {v}")


def _eval_cases(path: Path, *, db: str | None, html: Path | None, as_json: bool,
                **options: Any) -> None:
    """``evidex eval --cases``: exit 0 when the gate passes, 1 when it fails, 2 when nothing
    could be measured (invalid case file or collection, or any other error)."""
    from .evaluation import evaluate_cases, render_html, render_text

    try:
        with _progress("cases", show=not as_json) as progress:
            report = evaluate_cases(path, db=db, settings=state.cfg.answer_settings(),
                                    progress=progress, **options)
        if html is not None:
            html.write_text(render_html(report), encoding="utf-8")
    except (EvidexError, OSError) as exc:
        message = str(exc) if isinstance(exc, EvidexError) else f"{exc.strerror or exc}: {exc.filename or ''}"
        lines = message.splitlines() or ["failed"]
        typer.echo(f"error: {_safe(lines[0])}", err=True)
        for line in lines[1:]:
            typer.echo(f"  {_safe(line)}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        _emit(report)
    else:
        sys.stdout.write(render_text(report))
    raise typer.Exit(0 if report["gate"]["passed"] else 1)


# -- service: evidex serve, evidex mcp ------------------------------------------------------------
ServerConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="Configuration file with a server: section (API keys); "
                                  "default: the global --config."),
]


def _server_config(config: Path | None) -> str:
    chosen = config or state.config_path
    if not chosen:
        raise EvidexError("the service needs a configuration with a server: section: give --config FILE")
    return str(chosen)


@app.command()
@_errors
def serve(
    config: ServerConfigOpt = None,
    host: Annotated[str | None, typer.Option(help="Address (default: server.host, 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: server.port, 8000).")] = None,
    workers: Annotated[int, typer.Option(min=1, max=64, help="uvicorn worker processes.")] = 1,
    scheduled: Annotated[bool, typer.Option("--schedule/--no-schedule", help=(
        "Also run the configuration's scheduled syncs and drift checks."))] = True,
) -> None:
    """Serve the HTTP API (/v1/...) and the web page over --db until interrupted."""
    from .server import serve as run_service

    run_service(state.db, _server_config(config), host, port, workers, schedule=scheduled)


@app.command("mcp")
@_errors
def mcp_server(config: ServerConfigOpt = None) -> None:
    """Serve the MCP tools search, resolve and answer over stdio, as the API key in
    $EVIDEX_API_KEY (one of the configuration's server.api_keys)."""
    from .server import run_mcp

    run_mcp(state.db, _server_config(config))
# -- end of service commands -------------------------------------------------------------------------


def _run_sources(kind: str, source: list[str] | None, show: bool) -> SyncReport:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .sources import drift, sync

    config = _need_config()
    run = sync if kind == "sync" else drift
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), disable=not (show and sys.stderr.isatty()), transient=True)
    # The configuration names the store its sources fill: before the first sync, drift
    # reports every source document as new.
    with _open(create=True) as kb, bar:
        tasks: dict[str, Any] = {}

        def progress(what: str, done: int, total: int) -> None:
            if what not in tasks:
                tasks[what] = bar.add_task(_safe(what), total=total)
            bar.update(tasks[what], completed=done, total=total)

        return run(kb, config, source or None, progress=progress)


def _print_problems(rep: Any) -> None:
    if rep.failed:
        typer.echo(f"  failed: {_safe(rep.failed)}", err=True)
    for s in rep.skipped:
        typer.echo(f"  skipped {_safe(s.item)}: {_safe(s.reason)}", err=True)
    for s in rep.errors:
        typer.echo(f"  kept (not readable now) {_safe(s.item)}: {_safe(s.reason)}", err=True)


SourceOpt = Annotated[
    list[str] | None, typer.Option("--source", help="Only this source id (repeatable).")
]


@app.command("sync")
@_errors
def sync_cmd(source: SourceOpt = None, as_json: JsonOpt = False) -> None:
    """Bring the index in line with the configured sources: add new documents, supersede
    changed ones, skip unchanged ones without writing, remove documents gone from the source.

    Exit status 1 when a source or an item could not be read (its indexed documents are kept).
    """
    report = _run_sources("sync", source, show=not as_json)
    if as_json:
        _emit(report.as_dict())
    else:
        for rep in report.sources:
            owner = f" (owner {_safe(rep.owner)})" if rep.owner else ""
            d = rep.as_dict("sync")
            typer.echo(f"{_safe(rep.source)}{owner}: added {len(d['added'])}, superseded "
                       f"{len(d['superseded'])}, unchanged {d['unchanged']}, removed "
                       f"{len(d['removed'])}, skipped {len(d['skipped'])}, conflicts {len(d['conflicts'])}")
            _print_problems(rep)
        totals = ", ".join(f"{k} {v}" for k, v in report.totals().items())
        typer.echo(f"total: {totals} ({report.seconds:.1f} s)")
    if not report.ok:
        raise typer.Exit(1)


@app.command("drift")
@_errors
def drift_cmd(
    source: SourceOpt = None,
    notify: Annotated[bool, typer.Option("--notify/--no-notify",
                                         help="POST the report to the configured webhook when "
                                              "something drifted.")] = True,
    as_json: JsonOpt = False,
) -> None:
    """Compare each source with the index without writing: new, changed and removed documents
    per source and owner.

    Exit status 0: in sync; 1: something drifted; 2: a source could not be checked or the
    webhook failed.
    """
    from .sources import notify_webhook

    report = _run_sources("drift", source, show=not as_json)
    if as_json:
        _emit(report.as_dict())
    else:
        for rep in report.sources:
            owner = f" (owner {_safe(rep.owner)})" if rep.owner else ""
            typer.echo(f"{_safe(rep.source)}{owner}: {len(rep.new)} new, {len(rep.changed)} "
                       f"changed, {len(rep.removed)} removed, {rep.unchanged} unchanged")
            for kind, ids in (("new", rep.new), ("changed", rep.changed), ("removed", rep.removed)):
                for doc_id in sorted(ids):
                    typer.echo(f"  {kind:<8} {_safe(doc_id)}")
            _print_problems(rep)
        t = report.totals()
        typer.echo(("drifted: " if report.drifted else "in sync: ")
                   + f"{t['new']} new, {t['changed']} changed, {t['removed']} removed")
    hook = state.cfg.freshness.notify  # "content_owner" (a name) has no webhook of its own
    failed = False  # a failing route is reported and never keeps the owners from being told
    if notify and report.drifted and getattr(hook, "webhook", None):
        try:
            notify_webhook(hook.webhook, report, timeout=hook.timeout_seconds)
        except EvidexError as exc:
            typer.echo(f"error: {_safe(str(exc))}", err=True)
            failed = True
    if notify:  # each source owner hears about their drift and open conflicts
        from .sources import notify_owners

        with _open() as kb:
            sent = notify_owners(kb, _need_config(), report)
        typer.echo("".join(_safe(x) + "\n" for x in sent.lines(failures_only=as_json)), nl=False, err=True)
        failed = failed or not sent.ok
    if failed or not report.ok:
        raise typer.Exit(2)
    if report.drifted:
        raise typer.Exit(1)


@app.command()
@_errors
def schedule() -> None:
    """Run each source's sync at its schedule: and the drift check at freshness.drift_check,
    one at a time, until interrupted; every run is recorded (evidex runs). evidex serve does the
    same alongside the service."""
    import signal
    import threading

    from .sources import DRIFT_HOOKS, Scheduler, owners_hook

    # SIGTERM (a service manager stopping it) lets the run in progress finish, then exits 0;
    # Ctrl-C stops at once (a store write is atomic either way). Installed before anything is
    # printed, so whoever saw the first line may stop it.
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    opener = functools.partial(_open, create=True)  # its syncs fill a new store
    scheduler = Scheduler(opener, _need_config(), after_drift=[owners_hook(opener), *DRIFT_HOOKS],
                          on_run=lambda run: typer.echo(_safe(run.line())))
    if not scheduler.jobs:
        raise EvidexError("nothing is scheduled: no source has a schedule: and there is no drift check")
    for job in scheduler.jobs:
        typer.echo(f"scheduled: {job.name} ({_safe(job.cadence.text)}), first {scheduler.next_due[job]}",
                   err=True)
    with contextlib.suppress(KeyboardInterrupt):
        scheduler.run_forever(stop)


app.command("check")(check_cmd)
app.command("conflicts")(conflicts_cmd)
app.command("runs")(runs_cmd)
app.command("reindex")(reindex_cmd)


def main() -> None:
    """Run the app with click's own error printing replaced by one ``error:`` line."""
    try:
        code = app(standalone_mode=False)
    except typer.Exit as exc:
        code = exc.exit_code
    except typer.TyperException as exc:  # usage errors: bad option values, missing options
        if message := exc.format_message():  # empty when no arguments printed the help
            typer.echo(f"error: {_safe(message)}", err=True)
        code = exc.exit_code
    except typer.Abort:
        typer.echo("error: aborted", err=True)
        code = 1
    sys.exit(code if isinstance(code, int) else 0)


__all__ = ["FRONT_MATTER_KEYS", "app", "main"]
