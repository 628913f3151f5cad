"""Terminal output and error handling of the ``evidex`` commands.

Errors print one line to stderr and exit non-zero; untrusted text (document content, source
names) is made one printable line before it reaches a terminal, so a hostile document can
neither drive the terminal nor forge output lines.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import typer

from .model import EvidexError

__all__ = ["emit", "errors", "fail", "safe"]

F = TypeVar("F", bound=Callable[..., Any])


def safe(text: str) -> str:
    """One printable line of untrusted text for a terminal: control characters and line breaks
    become spaces, so a document can neither drive the terminal nor forge output lines."""
    return "".join(ch if ch.isprintable() else " " for ch in text)


def emit(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message.splitlines()[0] if message else 'failed'}", err=True)
    return typer.Exit(1)


def errors(fn: F) -> F:
    """A command whose library errors end it with one ``error:`` line and exit status 1."""
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EvidexError as exc:
            raise fail(str(exc)) from None
        except OSError as exc:
            raise fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from None
        except json.JSONDecodeError as exc:
            raise fail(f"invalid JSON input: {exc}") from None

    return wrapper  # type: ignore[return-value]
