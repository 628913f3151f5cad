"""The command line's live tools: ``--claim NAME=VALUE`` (a local caller is trusted to state its
own verified attributes), how a citation, live or not, reads on a terminal, and the operators'
``evidex tools list`` / ``evidex tools call`` (``evidex ask --claim`` is where the tools serve an
answer). ``cli`` adds ``tools_app`` to its commands."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from .console import JsonOpt, emit, errors, need_config, safe
from .model import Actor, EvidexError
from .tools import Toolbox

__all__ = ["ClaimOpt", "citation_line", "pairs", "tools_app"]

ClaimOpt = Annotated[
    list[str] | None,
    typer.Option("--claim", help="A verified attribute of the caller, NAME=VALUE (repeatable), e.g. "
                                 "customer_id=C-1001: live tools take their actor parameters from it."),
]


def pairs(values: list[str] | None, option: str) -> dict[str, str]:
    """``k=v`` option values as a mapping; a value without ``=`` or a repeated key is an error
    (``!r`` escapes control characters in the message)."""
    out: dict[str, str] = {}
    for item in values or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise EvidexError(f"{option} takes NAME=VALUE, got {item!r}")
        if key.strip() in out:
            raise EvidexError(f"{option} {key.strip()!r} is given twice")
        out[key.strip()] = value
    return out


def citation_line(c: Mapping[str, Any]) -> str:
    """An answer citation's source line on a terminal: a live lookup with its tool and time, a
    passage with its document, version and place (untrusted text made one printable line)."""
    if c.get("kind") == "live":
        return safe(f"  [{c['n']}] live lookup {c['tool']} at {c['fetched_at']} ({c['source_url']})")
    where = " > ".join(c["heading_path"]) or f"passage {c['passage']}"
    return (f"  [{c['n']}] {safe(c['document_id'])} v{safe(c['version'])} #{c['passage']} "
            f"{safe(c['title'] or '')} ({safe(where)})")

tools_app = typer.Typer(no_args_is_help=True, help="The live tools of --config (operators).")


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
