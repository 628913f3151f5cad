"""The service: ``evidex serve`` (HTTP API and web page) and ``evidex mcp`` (MCP over stdio),
both from ``server``, which loads only when one of them runs (the ``server`` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._output import UsageError, errors
from ._settings import state

__all__ = ["COMMANDS"]

ServerConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="Configuration file with a server: section (API keys); "
                                  "default: the global --config."),
]


def _server_config(config: Path | None) -> str:
    chosen = config or state.config_path
    if not chosen:
        raise UsageError("the service needs a configuration with a server: section: give --config FILE")
    return str(chosen)


@errors
def serve(
    config: ServerConfigOpt = None,
    host: Annotated[str | None, typer.Option(help="Address (default: server.host, 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: server.port, 8000).")] = None,
    workers: Annotated[int, typer.Option(min=1, max=64, help="uvicorn worker processes.")] = 1,
    scheduled: Annotated[bool, typer.Option("--schedule/--no-schedule", help=(
        "Also run the configuration's scheduled syncs and drift checks."))] = True,
) -> None:
    """Serve the HTTP API (/v1/...) and the web page over --db until interrupted.

    With the configuration's store: section, over every tenant's store (and its replicas)."""
    from ..server import serve as run_service

    run_service(state.db if state.db_given else "", _server_config(config), host, port, workers,
                schedule=scheduled, replicas=state.replicas)


@errors
def mcp(config: ServerConfigOpt = None) -> None:
    """Serve the MCP tools search, resolve and answer over stdio.

    The caller is the API key in $EVIDEX_API_KEY (one of the configuration's server.api_keys)."""
    from ..server import run_mcp

    run_mcp(state.db if state.db_given else "", _server_config(config), replicas=state.replicas)


COMMANDS = {"serve": serve, "mcp": mcp}
