"""What the CLI's commands share about live tools: ``--claim NAME=VALUE`` (a local caller is
trusted to state its own verified attributes) and how a live citation reads on a terminal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from .model import EvidexError

__all__ = ["ClaimOpt", "live_line", "pairs"]

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


def live_line(c: Mapping[str, Any]) -> str:
    """A live citation's source line under an answer (the caller makes it terminal-safe)."""
    return f"  [{c['n']}] live lookup {c['tool']} at {c['fetched_at']} ({c['source_url']})"
