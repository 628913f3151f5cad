"""Starting the service: ``evidex serve`` and the app factory uvicorn's worker processes call.

Worker processes are started by uvicorn from an import string, so they learn the store and the
configuration from two environment variables set here; each worker opens its own store
handles (SQLite handles never cross a fork).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ..model import EvidexError
from ._settings import ConfigError, ServerSettings, load_server_settings

__all__ = ["app_from_env", "require_settings", "serve"]

DB_ENV = "EVIDEX_DB"
CONFIG_ENV = "EVIDEX_SERVER_CONFIG"


def require_settings(config: str | Path) -> ServerSettings:
    settings = load_server_settings(config)
    if settings is None:
        raise ConfigError(f"{config} has no server: section (api_keys or jwt are needed to sign in)")
    if not settings.api_keys and settings.jwt is None:
        raise ConfigError(f"{config}: server: defines no api_keys and no jwt; nobody could sign in")
    return settings


def _require_store(db: str) -> None:
    if "://" not in db and not Path(db).is_file():
        raise EvidexError(f"no store at {db}; ingest documents first (evidex --db {db} ingest ...)")


def app_from_env() -> Any:
    """The ASGI app of one worker process."""
    from ._app import create_app

    db, config = os.environ[DB_ENV], os.environ[CONFIG_ENV]
    return create_app(db, require_settings(config))


def serve(db: str, config: str | Path, host: str | None = None, port: int | None = None,
          workers: int = 1) -> None:
    import uvicorn

    settings = require_settings(config)
    _require_store(db)
    host = host or settings.host
    port = port or settings.port
    os.environ[DB_ENV] = str(Path(db).resolve()) if "://" not in db else db
    os.environ[CONFIG_ENV] = str(Path(config).resolve())
    shown = f"[{host}]" if ":" in host else host
    print(f"evidex serving {os.environ[DB_ENV]} at http://{shown}:{port}/ "
          f"({workers} worker{'s' if workers != 1 else ''})", file=sys.stderr, flush=True)
    uvicorn.run("evidex.server._run:app_from_env", factory=True, host=host, port=port, workers=workers,
                access_log=False, log_level="warning", server_header=False,
                limit_concurrency=512, timeout_keep_alive=15)
