"""What the ``evidex`` commands print: JSON, hits and citations for a reader, progress bars and
the one-line errors.

Errors print one line to stderr and exit non-zero; untrusted text (document content, source
names) is made one printable line before it reaches a terminal, so a hostile document can
neither drive the terminal nor forge output lines.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import wraps
from typing import Annotated, Any, TypeVar

import typer

from ..decide import shown
from ..model import EvidexError

__all__ = ["JsonOpt", "UsageError", "choice", "citation_line", "decision_lines", "emit", "errors", "fail",
           "print_hits", "progress", "safe"]

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]

F = TypeVar("F", bound=Callable[..., Any])


def safe(text: str) -> str:
    """One printable line of untrusted text for a terminal: control characters and line breaks
    become spaces, so a document can neither drive the terminal nor forge output lines."""
    return "".join(ch if ch.isprintable() else " " for ch in text)


def emit(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


#: Exit status of a command called wrongly (missing, conflicting or malformed options), as
#: click gives its own usage errors; 1 is a command that was called right and failed.
USAGE_STATUS = 2


class UsageError(EvidexError):
    """The command was called wrongly: nothing was done (exit status 2, as click's own)."""


def choice(option: str, value: str | None, allowed: Sequence[str]) -> str | None:
    """``value`` of ``--option`` when it is one of ``allowed`` (or not given): a value outside
    them is a usage error (exit 2), found before anything is opened."""
    if value is not None and value not in allowed:
        raise UsageError(f"--{option} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def fail(message: str, status: int = 1) -> typer.Exit:
    typer.echo(f"error: {message.splitlines()[0] if message else 'failed'}", err=True)
    return typer.Exit(status)


def errors(fn: F) -> F:
    """A command whose library errors end it with one ``error:`` line and exit status 1 (2 for
    a ``UsageError``)."""
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UsageError as exc:
            raise fail(str(exc), USAGE_STATUS) from None
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


@contextmanager
def progress(description: str, show: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A transient progress bar on a terminal, as a ``progress(done, total)`` callback; None
    (and no bar) when output is not for a person watching a terminal."""
    if not (show and sys.stderr.isatty()):
        yield None
        return
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task(description, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


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
        # A flagged passage is searchable and citable but reads as data, never as instructions:
        # its mark is on the hit's own line, so no one reads the quote without it.
        flagged = f"  [flagged: {safe(', '.join(h.flags))}]" if h.flags else ""
        typer.echo(f"{h.rank}. [{safe(h.document_id)} v{safe(h.version)} #{h.passage}] "
                   f"{safe(h.title or '')}  ({safe(where)}; score {h.score:.3f}){flagged}")
        # Sources keep their Markdown; a terminal shows the text as an answer does (no "## ",
        # "**" or table pipes), one line.
        quote = " ".join(safe(shown(h.quote)).split())
        typer.echo(f"   {quote[:300]}{'…' if len(quote) > 300 else ''}")
        if h.explain:
            legs = ", ".join(f"{k} #{v['rank']} ({v['score']:.4f})" for k, v in h.explain.items()
                             if isinstance(v, dict) and "rank" in v)
            typer.echo(f"   legs: {legs or 'none'}")


def citation_line(c: Mapping[str, Any]) -> str:
    """An answer citation's source line on a terminal: a live lookup with its tool and time, a
    passage with its document, version and place (untrusted text made one printable line).
    A citation without a number (a declined answer's related reading) is marked "-"."""
    mark = f"[{c['n']}]" if "n" in c else "-"
    if c.get("kind") == "live":
        return safe(f"  {mark} live lookup {c['tool']} at {c['fetched_at']} ({c['source_url']})")
    where = " > ".join(c["heading_path"]) or f"passage {c['passage']}"
    return (f"  {mark} {safe(c['document_id'])} v{safe(c['version'])} #{c['passage']} "
            f"{safe(c['title'] or '')} ({safe(where)})")


def decision_lines(trace: Mapping[str, Any]) -> list[str]:
    """An answer trace's two decisions on a terminal: each passage read for "on topic" with its
    score, the parts it is made of and the threshold, then the answer-bearing quote's score and
    threshold (extractive answers only; a model decides that itself)."""
    decision = trace.get("decision") or {}
    out: list[str] = []
    topic = decision.get("on_topic")
    if topic is None:
        out.append("on topic: not decided (no passage found)" if not trace.get("available")
                   else "on topic: not decided")
    else:
        # What each passage was compared by: its "score", or its sentence coverage when the
        # search had no cosines (a keyword-only store, or the vector leg past its deadline).
        bars = topic["passages"][0]["thresholds"] if topic["passages"] else {}
        key = next(iter(bars), "score")
        first = bars.get(key)
        bar = f" (a passage's {key.replace('_', ' ')} must reach {first:g})" if first is not None else ""
        out.append(f"on topic: {'yes' if topic['verdict'] else 'no'}{bar}")
        for p in topic["passages"]:
            parts = ", ".join(f"{k} {v:.3f}" for k, v in p["scores"].items()
                              if k != key and v is not None)
            value = p["scores"].get(key)
            lang = ", other language" if p["cross_language"] else ""
            out.append(safe(f"  [{p['n']}] {p['document_id']} #{p['passage']}: "
                            + ("-" if value is None else f"{value:.3f}")
                            + f" ({parts}{lang}) {'on topic' if p['on_topic'] else 'below'}"))
    bearing = decision.get("answer_bearing")
    if bearing is not None:
        verdict = "yes" if bearing["verdict"] else f"no ({bearing['why']})"
        score = "" if bearing["score"] is None else (
            f", quote score {bearing['score']:.3f} against {bearing['threshold']:g}")
        quoted = " ".join(f"[{q['n']}]" for q in bearing["quotes"])
        out.append(f"answer-bearing: {verdict}; asks for: {bearing['asked']}{score}"
                   + (f"; quotes {quoted}" if quoted else ""))
    elif topic is not None and topic["verdict"] and trace.get("generator") == "openai":
        out.append("answer-bearing: decided by the model")
    return out
