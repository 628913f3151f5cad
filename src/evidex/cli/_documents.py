"""Documents in and out: ``evidex ingest`` (files and folders, loaded by ``ingest.load_paths``)
and ``evidex remove``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..ingest import DEFAULT_MAX_FILE_BYTES, FORMATS, load_paths
from ..model import EvidexError
from ._output import JsonOpt, emit, errors, fail, progress, safe
from ._settings import AsOpt, TenantOpt, open_kb, server_note, split_csv, state, tenant_of

__all__ = ["COMMANDS", "INGEST_BATCH"]

#: Documents per transaction of ``evidex ingest``.
INGEST_BATCH = 500


@errors
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
        "groups": split_csv(groups) or None,
        "visibility": visibility,
        "language": language,
        "version": version,
    }
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise EvidexError(f"no such file or folder: {safe(missing[0])}; nothing was ingested")
    loaded = load_paths(list(paths), defaults, max_bytes=int(max_file_mb * 1024 * 1024))
    if not loaded.documents and not loaded.rejected:  # a wrong folder, not an empty success
        raise EvidexError(f"nothing to ingest in {safe(', '.join(map(str, paths)))}: no document in a "
                          f"{', '.join(sorted(FORMATS))} file; nothing was written")
    with open_kb(create=True) as kb, progress("ingesting", show=not as_json) as step:
        # Large inputs go in batches, each atomic; the whole input is checked before any write.
        report = kb.ingest(loaded.documents, split=split, batch_size=INGEST_BATCH,
                           identify_languages=True, progress=step, session=state.session)
        notes = sorted({n for t in {d.tenant for d in loaded.documents} if (n := server_note(kb, t))})
    for note in notes:  # tenants on several servers, or replicas: which server was written
        typer.echo(f"{note}" + (f" (generation {report.generation})" if report.generation else ""), err=True)
    summary = {**report.as_dict(), "rejected": len(loaded.rejected)}
    if as_json:
        emit({**summary, "rejections": [r.__dict__ for r in loaded.rejected]})
    else:
        for r in loaded.rejected:
            typer.echo(f"rejected {safe(r.source)}: {safe(r.reason)}", err=True)
        typer.echo(", ".join(f"{k.replace('_', ' ')} {v}" for k, v in summary.items() if k != "conflicts"))
        typer.echo("".join(safe(c.summary()) + "\n" for c in report.conflicts), nl=False)
    if loaded.rejected:
        raise typer.Exit(1)


@errors
def remove(
    document_id: Annotated[str, typer.Argument(help="Document id.")],
    tenant: TenantOpt = None,
    as_name: AsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete a document with all its passages and history."""
    tenant = tenant_of(tenant, as_name)
    with open_kb() as kb:
        existed = kb.remove(tenant, document_id, session=state.session)
        note = server_note(kb, tenant)
    if note:
        typer.echo(note, err=True)
    if as_json:
        emit({"removed": existed, "document_id": document_id})
    elif existed:
        typer.echo(f"removed {document_id}")
    if not existed:
        raise fail(f"no document {document_id!r} in tenant {tenant!r}")


COMMANDS = {"ingest": ingest, "remove": remove}
