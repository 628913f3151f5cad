"""``evidex tools list`` and ``evidex tools call``: the operators' view of the live tools of
--config (``evidex ask --claim`` is where the tools serve an answer; a local caller is trusted to
state its own verified attributes with ``--claim NAME=VALUE``)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..model import Actor, EvidexError
from ..tools import Toolbox
from ._output import JsonOpt, emit, errors, safe
from ._settings import ClaimOpt, need_config, pairs

__all__ = ["tools_app"]

tools_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                        help="The live tools of --config (operators).")


def _toolbox() -> Toolbox:
    tools = need_config().tools
    if not tools:
        raise EvidexError("the configuration defines no tools: (see the README's live tools section)")
    return Toolbox(tools)


@tools_app.command("list")
@errors
def tools_list(as_json: JsonOpt = False) -> None:
    """The configured tools: id, URL template, parameters and who may use them."""
    tools = _toolbox().tools
    if as_json:
        emit({"tools": [t.summary() for t in tools]})
        return
    for t in tools:
        params = ", ".join(f"{n} ({'claim ' + (p.claim or '') if p.source == 'actor' else 'question'})"
                           for n, p in t.parameters.items())
        typer.echo(f"{t.id}: {safe(t.description)}")
        typer.echo(f"  GET {t.url}  [{params or 'no parameters'}]")
        typer.echo(f"  tenant {t.tenant}, groups {', '.join(t.groups)}, {t.visibility}; "
                   f"{t.timeout_ms} ms x {t.retries + 1} attempts, at most {t.max_response_bytes} bytes")


@tools_app.command("call")
@errors
def tools_call(
    tool_id: Annotated[str, typer.Argument(help="Tool id.")],
    param: Annotated[list[str] | None, typer.Option(
        "--param", help="A question parameter, NAME=VALUE (repeatable); checked by its pattern.")] = None,
    claim: ClaimOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Look up once, as the tool's tenant's operator: question parameters from --param, actor
    parameters from --claim. Exit status 1 when the lookup did not give a usable value."""
    box = _toolbox()
    try:
        tool = box.get(tool_id)
        if tool is None:
            raise EvidexError(f"no tool {tool_id!r} in the configuration; configured: "
                              f"{', '.join(t.id for t in box.tools)}")
        operator = Actor(tool.tenant, frozenset(), claims=pairs(claim, "--claim"))
        result = box.call(operator, tool_id, pairs(param, "--param"), operator=True)
    finally:
        box.close()
    if as_json:
        emit(result.as_dict())
    elif result.ok:
        typer.echo(safe(result.quote))
        c = result.citation or {}
        typer.echo(f"  fetched {c.get('fetched_at')} from {safe(str(c.get('source_url')))} in "
                   f"{result.ms:.0f} ms (response sha256 {str(result.response_sha256)[:12]})")
    else:
        typer.echo(f"{result.status}: {safe(result.detail)}")
    if not result.ok:
        raise typer.Exit(1)
