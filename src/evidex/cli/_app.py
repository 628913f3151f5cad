"""The ``evidex`` app: the global options, the commands of each subject module, and ``main``,
which ends every failure with one ``error:`` line."""

from __future__ import annotations

import inspect
import os
import re
import sys
from collections.abc import Callable
from typing import Annotated

import typer

from .. import __version__
from ..config import load_config
from ..model import EvidexError
from ..store import ReadSession
from . import _documents, _eval, _feedback, _findings, _scale, _search, _service, _sources, _store
from ._output import fail, safe
from ._settings import command_session, state
from ._tools import tools_app

__all__ = ["app", "main"]

# Help is click's plain text (``rich_markup_mode=None``): it rewraps each paragraph to the
# terminal, so a description breaks only where the width needs it, never where the docstring
# happened to, and it shows a flag as a flag, never with a ``<bool>`` value.
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="evidex: retrieval where every passage traces back to its source.",
)

#: The subjects whose commands ``evidex --help`` lists, in this order (``tools`` last).
SUBJECTS = (_documents, _search, _store, _scale, _eval, _service, _sources, _findings)


def summary(command: Callable[..., object]) -> str:
    """The first sentence of a command's docstring, as ``evidex --help`` lists it: whole, where
    click would cut its own summary off at a fixed length, mid-sentence."""
    first = " ".join(inspect.cleandoc(command.__doc__ or "").split("\n\n")[0].split())
    found = re.match(r"(.+?[.!?])(?=\s|$)", first)
    return found.group(1) if found else first


def _register() -> None:
    for subject in SUBJECTS:
        for name, command in subject.COMMANDS.items():
            app.command(name, short_help=summary(command))(command)
    for info in tools_app.registered_commands:
        info.short_help = summary(info.callback) if info.callback else None
    app.add_typer(tools_app, name="tools")
    # A module, not the Typer, in this namespace: docs/gen_reference.py reads every Typer here.
    for info in _feedback.feedback_app.registered_commands:
        info.short_help = summary(info.callback) if info.callback else None
    app.add_typer(_feedback.feedback_app, name="feedback")


_register()


def _show_version(value: bool) -> None:
    """Eager: runs while the options are parsed, before click asks for a command."""
    if value:
        typer.echo(__version__)
        raise typer.Exit(0)


@app.callback()
def main_options(
    db: Annotated[
        str | None,
        typer.Option("--db", help="Store location (default: $EVIDEX_DB, then the configuration's "
                     "store.default, then ./evidex.db)."),
    ] = None,
    replica: Annotated[
        list[str] | None,
        typer.Option("--replica", help="A streaming read replica of the --db PostgreSQL server "
                     "(repeatable): reads go to the replicas, writes to --db."),
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
    chosen = db or os.environ.get("EVIDEX_DB")
    state.db, state.db_given = chosen or "evidex.db", bool(chosen)
    state.replicas = tuple(replica or ())
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
            first = fail(str(exc))
            for line in str(exc).splitlines()[1:]:
                typer.echo(f"  {safe(line)}", err=True)
            raise first from None
    memory, who = command_session() if state.remembering else (None, "")
    state.session = ReadSession(memory=memory, caller=who)


def main() -> None:
    """Run the app with click's own error printing replaced by one ``error:`` line, in one read
    session that remembers writes across commands (``_settings.command_session``)."""
    state.remembering = True
    try:
        code = app(standalone_mode=False, prog_name="evidex")
    except typer.Exit as exc:
        code = exc.exit_code
    except typer.TyperException as exc:  # usage errors: bad option values, missing options
        if type(exc).__name__ == "NoArgsIsHelpError":  # no arguments: the help is the message
            typer.echo(exc.format_message())
        else:
            typer.echo(f"error: {safe(exc.format_message())}", err=True)
        code = exc.exit_code
    except typer.Abort:
        typer.echo("error: aborted", err=True)
        code = 1
    sys.exit(code if isinstance(code, int) else 0)
