"""Terminal output and error handling of the ``evidex`` commands.

Errors print one line to stderr and exit non-zero; untrusted text (document content, source
names) is made one printable line before it reaches a terminal, so a hostile document can
neither drive the terminal nor forge output lines.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from .config import Config
from .kb import KnowledgeBase
from .model import EvidexError
from .store import is_postgres_url

__all__ = ["JsonOpt", "State", "emit", "errors", "fail", "need_config", "open_kb", "safe", "state"]

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]

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
        except BrokenPipeError:
            # The reader of stdout went away (`| head`): no error of the command's. Leave as cat
            # does, and keep the interpreter's last flush from reporting the pipe again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(141) from None  # 128 + SIGPIPE, as a shell reports it
        except OSError as exc:
            raise fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from None
        except json.JSONDecodeError as exc:
            raise fail(f"invalid JSON input: {exc}") from None

    return wrapper  # type: ignore[return-value]


def print_hits(hits: Any, explain: bool) -> None:
    """Print a search's hits for a reader: fallback, evidence, leg weights, one quote per hit."""
    if hits.fallback:
        typer.echo(f"fallback: keyword ({hits.fallback['reason']}: {hits.fallback['detail']})")
    if not hits:
        typer.echo("No passage you may read matches this query.")
        return
    typer.echo(f"evidence: {hits.evidence}")
    if explain and hits.weights is not None:
        w = hits.weights
        typer.echo(f"leg weights: keyword {w.keyword:.2f}, vector {w.vector:.2f}"
                   f" (query language: {w.language or 'not identified'})")
        for reason in w.why:
            typer.echo(f"   {reason}")
    for h in hits:
        where = " > ".join(h.heading_path) or f"passage {h.passage}"
        typer.echo(f"{h.rank}. [{safe(h.document_id)} v{safe(h.version)} #{h.passage}] "
                   f"{safe(h.title or '')}  ({safe(where)}; score {h.score:.3f})")
        quote = " ".join(safe(h.quote).split())
        typer.echo(f"   {quote[:300]}{'…' if len(quote) > 300 else ''}")
        if h.explain:
            legs = ", ".join(f"{k} #{v['rank']} ({v['score']:.4f})" for k, v in h.explain.items()
                             if isinstance(v, dict) and "rank" in v)
            typer.echo(f"   legs: {legs or 'none'}")


class State:
    """The command line's settings from its callback (--db, --analyzer, --embedder, --config),
    read by every command; one object so the tools commands see what the main ones see."""

    db: str = "evidex.db"
    analyzer: str | None = None
    embedder: str | None = None
    config: Config | None = None
    config_path: str | None = None

    @property
    def cfg(self) -> Config:
        """The --config file's settings, or the built-in defaults when none was given."""
        return self.config or Config()


state = State()


def open_kb(create: bool = False) -> KnowledgeBase:
    """The store of --db with the command line's and the configuration's settings.

    Only commands that add documents (``create``) may create a missing SQLite file: a search
    or an answer from a mistyped --db would otherwise create an empty store and decline every
    question as if the collection lacked the answer."""
    if not create and not is_postgres_url(state.db) \
            and not Path(state.db.removeprefix("sqlite:///")).is_file():
        raise EvidexError(f"no store at {state.db} (evidex ingest creates one; or give --db)")
    r = state.cfg.retrieval
    return KnowledgeBase.open(state.db, analyzer=state.analyzer or r.analyzer,
                              embedder=state.embedder or r.embedder,
                              vector_timeout_ms=r.vector.timeout_ms, tools=state.cfg.tools)


def need_config() -> Config:
    """The --config file's settings, for commands that cannot run on defaults."""
    if state.config is None:
        raise EvidexError("this command reads the sources of a configuration: give --config FILE "
                          "(or set EVIDEX_CONFIG)")
    return state.config
