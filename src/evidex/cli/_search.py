"""Reading as a caller: ``evidex search``, ``ask`` and ``resolve``, each one ``KnowledgeBase``
call for the caller the options name, plus printing."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from ..kb import MATCHES, MODES
from ..knowledge import Knowledge
from ..model import EvidexError
from ._output import JsonOpt, choice, citation_line, decision_lines, emit, errors, print_hits, safe
from ._settings import AsOpt, ClaimOpt, GroupsOpt, TenantOpt, VisOpt, caller, open_kb, server_note, state


def _served(kb: Knowledge, tenant: str) -> None:
    """Which server answered, at which generation (stderr), when there is more than one."""
    session = state.session
    if server_note(kb, tenant) is not None and session.served:
        last = session.served[-1]
        typer.echo(f"served by {last.server} at generation {last.generation}", err=True)

__all__ = ["COMMANDS"]

#: Declines that report something broken rather than a decision about the passages.
FAILURES = frozenset({"tool_unavailable", "generator_error", "invalid_model_output"})


@errors
def search(
    query: Annotated[str, typer.Argument(help="Words to search for (no operators).")],
    tenant: TenantOpt = None,
    groups: GroupsOpt = None,
    visibilities: VisOpt = None,
    as_name: AsOpt = None,
    limit: Annotated[int | None, typer.Option(help="Number of passages (config top_k, else 6).")] = None,
    match: Annotated[str | None, typer.Option(help="any or all query words.")] = None,
    mode: Annotated[str | None, typer.Option(help="hybrid, keyword or vector.")] = None,
    fusion: Annotated[str | None, typer.Option(help="adaptive, convex or rrf (hybrid mode).")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show each leg's rank and score.")] = False,
    language: Annotated[str | None, typer.Option(help="Only documents in this language.")] = None,
    tag: Annotated[list[str] | None, typer.Option(help="Only documents with this tag.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Search the passages the caller may read (defaults from --config's retrieval section)."""
    mode, match = choice("mode", mode, MODES), choice("match", match, MATCHES)
    who = caller(tenant, groups, visibilities, as_name)
    filters = {"language": language, "tags": tag or []}
    r = state.cfg.retrieval
    with open_kb() as kb:
        hits = kb.search(who, query, limit=r.top_k if limit is None else limit,
                         match=r.match if match is None else match, filters=filters,
                         mode=r.mode if mode is None else mode, explain=explain,
                         fusion=r.fuse if fusion is None else fusion, rrf_k=r.rrf_k,
                         window=r.window, alpha=r.alpha, max_per_document=r.max_per_document,
                         evidence=True, session=state.session)  # the output shows the evidence level
        _served(kb, who.tenant)
    if as_json:
        emit({"hits": [h.as_dict() for h in hits], "evidence": hits.evidence,
              "fallback": hits.fallback})
        return
    print_hits(hits, explain)


@errors
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    tenant: TenantOpt = None,
    groups: GroupsOpt = None,
    visibilities: VisOpt = None,
    as_name: AsOpt = None,
    generator: Annotated[str | None, typer.Option(help="extractive or openai.")] = None,
    handoff: Annotated[str | None, typer.Option(help="How to reach a person when declining.")] = None,
    claim: ClaimOpt = None,
    explain: Annotated[bool, typer.Option(
        "--explain", help="Show both decisions: each passage's on-topic score and the quote's "
                          "answer-bearing score, each against its threshold.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Answer from the passages the caller may read and its live lookups, citing every claim, or decline."""
    with open_kb() as kb:
        who = caller(tenant, groups, visibilities, as_name, claim)
        ans = kb.answer(who, question, generator=generator or state.cfg.answer.generator,
                        settings=state.cfg.answer_settings(handoff), session=state.session)
        _served(kb, who.tenant)
    if as_json:
        emit(ans.as_dict())
        return
    typer.echo(safe(ans.text))
    if ans.status == "answered":
        typer.echo("\n".join(citation_line(c) for c in ans.citations))
    else:
        # A failure someone must mend (a lookup's missing credential, an unreachable generator)
        # is named here, as in --json; a decision's reason is explained by --explain.
        failed = f" ({safe(ans.detail)})" if ans.reason in FAILURES and ans.detail else ""
        typer.echo(f"  reason: {ans.reason}{failed}")
        if ans.handoff:
            typer.echo(f"  {safe(ans.handoff)}")
        if ans.related:
            typer.echo("related reading (not an answer):")
            typer.echo("\n".join(citation_line(c) for c in ans.related))
    if explain:
        typer.echo("\n".join(decision_lines(ans.trace or {})))


@errors
def resolve(
    tenant: TenantOpt = None,
    groups: GroupsOpt = None,
    visibilities: VisOpt = None,
    as_name: AsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Re-check a citation read as JSON from standard input."""
    who = caller(tenant, groups, visibilities, as_name)
    text = sys.stdin.read()
    if not text.strip():
        raise EvidexError("no citation on standard input: pipe one hit of `evidex search --json` into it")
    citation = json.loads(text)
    with open_kb() as kb:
        res = kb.resolve(who, citation, session=state.session)
        _served(kb, who.tenant)
    if as_json:
        emit(res.as_dict())
    else:
        typer.echo("ok: the citation holds" if res.ok else f"{res.reason}: {safe(res.detail)}")
    if not res.ok:
        raise typer.Exit(2)


COMMANDS = {"search": search, "ask": ask, "resolve": resolve}
