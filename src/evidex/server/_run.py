"""Starting the service: ``evidex serve``, ``evidex mcp``, and the app factory of uvicorn's
worker processes.

Worker processes are started by uvicorn from an import string, so they learn the store, its
replicas, the configuration and the file of recent writes (read your writes across workers,
``store.RecentWrites``) from environment variables set here; each worker opens its own store
handles (SQLite handles never cross a fork). The stores are the configuration's ``store:``
placement when it has one (``placement``), else --db.
"""

from __future__ import annotations

import ctypes
import functools
import os
import secrets
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..config import Config, ServerSettings, load_config
from ..embed import QUERY_THREADS_ENV, THREADS_ENV, thread_count
from ..knowledge import Knowledge
from ..model import ConfigError, EvidexError
from ..notify import HandoffRoute
from ..placement import SERVICE_MOVE_WAIT_S, Placement, open_configured, require_stores
from ..sources import Scheduler, after_drift, drift, owners_hook, sync
from ..store import ReadSession, RecentWrites, is_postgres_url, redacted
from ..tools import Toolbox
from ._counters import MULTIPROC_ENV
from ._handoff import TRACE_KEY_ENV
from ._logging import log_failure, setup_logging

__all__ = [
    "app_from_env",
    "build_app",
    "opener",
    "proxy_options",
    "release_freed_memory",
    "require_settings",
    "run_mcp",
    "serve",
    "service_scheduler",
    "source_operations",
    "start_scheduler",
]

DB_ENV = "EVIDEX_DB"
CONFIG_ENV = "EVIDEX_SERVER_CONFIG"
REPLICAS_ENV = "EVIDEX_SERVE_REPLICAS"
RECENT_WRITES_ENV = "EVIDEX_RECENT_WRITES"


def require_settings(config: str | Path | Config) -> ServerSettings:
    """The ``server:`` section of ``config`` (a file or a loaded configuration), which must let
    someone sign in."""
    cfg = load_config(config) if isinstance(config, str | Path) else config
    name = config if isinstance(config, str | Path) else "the configuration"
    settings = cfg.server
    if settings is None:
        raise ConfigError(f"{name} has no server: section (api_keys or jwt are needed to sign in)")
    if not settings.api_keys and settings.jwt is None:
        raise ConfigError(f"{name}: server: defines no api_keys and no jwt; nobody could sign in")
    return settings


def placement(db: str, cfg: Config, replicas: Sequence[str] = ()) -> Placement:
    """The stores served: the configuration's ``store:`` placement, or ``db`` ("" when the
    command line named none) with its ``replicas``."""
    return Placement.of(cfg.store, db or None, replicas)


def _require_thread_settings() -> None:
    """A bad thread count is the deployment's mistake: refuse it at start, not at a client's
    first question (where it would look like a fault of the request)."""
    thread_count(THREADS_ENV)
    thread_count(QUERY_THREADS_ENV, 1)


def _require_free_address(host: str, port: int) -> None:
    """Refuse an address this process cannot listen on (another service holds the port, the
    host is not one of this machine's) with one line, before anything says it serves: uvicorn
    would report serving, then print its bind error and exit with status 3. The probe binds
    as uvicorn does (``SO_REUSEADDR``), so it refuses exactly what uvicorn would."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            reason = (exc.strerror or str(exc)).lower()
            raise EvidexError(f"cannot listen on {host}:{port}: {reason}") from None


def opener(db: str, cfg: Config, replicas: Sequence[str] = ()) -> Callable[[], Knowledge]:
    """Opens a handle on the stores (``placement``) with the configuration's retrieval settings."""
    return functools.partial(open_configured, cfg, placement(db, cfg, replicas), create=True)


def service_scheduler(db: str, cfg: Config, replicas: Sequence[str] = ()) -> Scheduler:
    """The scheduler of the configuration's syncs and drift checks; after each run it hands the
    memory the run freed back to the system (see ``release_freed_memory``). A due run the store
    failed is logged as a failure (class and place, no message) and the scheduler carries on."""
    setup_logging()
    return Scheduler(opener(db, cfg, replicas), cfg,
                     after_drift=after_drift(owners_hook(opener(db, cfg, replicas))),
                     on_run=lambda _record: release_freed_memory(),
                     on_failure=lambda job, due, exc: log_failure(
                         "scheduled run failed", exc, job=job.name, due=due.isoformat()))


def start_scheduler(db: str, cfg: Config, replicas: Sequence[str] = ()) -> threading.Event | None:
    """Run the configuration's scheduled syncs and drift checks on a background thread of this
    process (see ``sources.Scheduler``); returns the event that stops it, None when nothing is
    scheduled."""
    scheduler = service_scheduler(db, cfg, replicas)
    if not scheduler.jobs:
        return None
    stop = threading.Event()
    threading.Thread(target=scheduler.run_forever, args=(stop,), name="evidex-scheduler",
                     daemon=True).start()
    return stop


def source_operations(db: str, cfg: Config, replicas: Sequence[str] = ()) -> tuple[Any, Any]:
    """sync and drift callables for the service, confined to the calling admin's tenant: an
    admin key may run exactly the configured sources whose documents belong to its tenant."""
    def chosen(tenant: str, source: str | None) -> list[str]:
        mine = cfg.tenant_sources(tenant)
        if source is not None:
            if source not in mine:
                raise EvidexError(f"no configured source {source!r} for this tenant")
            return [source]
        if not mine:
            raise EvidexError("no sources are configured for this tenant")
        return mine

    open_kb = opener(db, cfg, replicas)

    def run_sync(*, tenant: str, source: str | None, session: ReadSession | None = None) -> dict[str, Any]:
        ids = chosen(tenant, source)
        try:
            with open_kb() as kb:
                return sync(kb, cfg, ids, session=session).as_dict()
        finally:
            release_freed_memory()

    def run_drift(*, tenant: str) -> dict[str, Any]:
        ids = chosen(tenant, None)
        with open_kb() as kb:
            return drift(kb, cfg, ids).as_dict()

    return run_sync, run_drift


def build_app(db: str, config: str | Path | Config, *, replicas: Sequence[str] = (),
              recent_writes: str | None = None) -> Any:
    """The app over the stores (``db`` or the configuration's placement) with everything the
    configuration sets: identity, answer settings, generator, and sync/drift when it names
    sources. ``recent_writes``: the file in which workers share each key's last write."""
    from ._app import create_app
    from ._handoff import HandoffSender
    from ._ops import overview

    cfg = load_config(config) if isinstance(config, str | Path) else config
    run_sync, run_drift = source_operations(db, cfg, replicas) if cfg.sources else (None, None)
    # Request handles open the store as it is (never with the configuration's analyzer or model)
    # and share one toolbox (its HTTP client and lookup threads), closed with the app.
    tools = Toolbox(cfg.tools)
    handles = functools.partial(open_configured, cfg, placement(db, cfg, replicas), as_is=True,
                                tools=tools, move_wait_s=SERVICE_MOVE_WAIT_S)
    seconds = cfg.store.remember_writes_s if cfg.store is not None else 12.0
    settings = require_settings(cfg)
    route = cfg.answer.handoff
    handoff = HandoffSender(route, settings.smtp) if isinstance(route, HandoffRoute) else None
    return create_app(handles, settings, sync=run_sync, drift=run_drift,
                      answer_settings=cfg.answer_settings(), generator=cfg.answer.generator,
                      handoff=handoff, tools=tools, recent_writes=RecentWrites(seconds, recent_writes),
                      sources=overview(cfg) if cfg.sources else None)


def app_from_env() -> Any:
    """The ASGI app of one worker process."""
    replicas = [r for r in os.environ.get(REPLICAS_ENV, "").split("\n") if r]
    return build_app(os.environ[DB_ENV], os.environ[CONFIG_ENV], replicas=replicas,
                     recent_writes=os.environ.get(RECENT_WRITES_ENV) or None)


def proxy_options(settings: ServerSettings) -> dict[str, Any]:
    """uvicorn's proxy-header settings for ``settings``: X-Forwarded-For and -Proto are read only
    from the configured ``trusted_proxies``. uvicorn's own default believes them from
    127.0.0.1, so any local process (or a proxy passing the header through) could choose the
    address the failed-credential limit counts against, and get another client blocked."""
    if not settings.trusted_proxies:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": list(settings.trusted_proxies)}


#: glibc gives a thread that allocates under contention an arena of its own (up to eight per
#: core) and keeps what is freed in it for that arena; a service's request threads, each
#: allocating and freeing numpy arrays, then hold freed memory in many arenas and the resident
#: size creeps up. Two arenas bound that (``MALLOC_ARENA_MAX`` set by the operator wins).
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # mallopt's parameter number in glibc's malloc.h


def limit_malloc_arenas() -> None:
    """Cap glibc's malloc arenas for this process (``mallopt``) and for worker processes (the
    environment, read when they start). Other C libraries have no arenas: nothing to do."""
    arenas = os.environ.setdefault("MALLOC_ARENA_MAX", str(MALLOC_ARENAS))
    libc = _glibc()
    if libc is not None and arenas.isdigit():
        libc.mallopt(_M_ARENA_MAX, int(arenas))


def release_freed_memory() -> None:
    """Hand the free pages inside glibc's heaps back to the system (``malloc_trim``).

    glibc gives freed memory back on its own only from the top of a heap. What a sync frees
    between the long-lived blocks it leaves behind (new passages, statistics, connections)
    stays resident until something happens to reuse it: without this the service's resident
    size creeps up with every sync while the memory in use stays the same. Called after each sync; with
    other C libraries (no glibc): nothing to do."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


@functools.cache
def _glibc() -> Any:
    """glibc's C library, or None elsewhere (musl has neither arenas to cap nor ``malloc_trim``)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") else None


def serve(db: str, config: str | Path, host: str | None = None, port: int | None = None,
          workers: int = 1, schedule: bool = True, replicas: Sequence[str] = ()) -> None:
    """Serve until interrupted; with ``schedule``, this (main) process also runs the
    configuration's scheduled syncs and drift checks, once for all workers."""
    import uvicorn

    limit_malloc_arenas()  # before the scheduler's and the server's threads allocate
    settings = require_settings(config)
    cfg = load_config(config)
    where = placement(db, cfg, replicas)
    require_stores(where)
    _require_thread_settings()
    host = host or settings.host
    port = port or settings.port
    _require_free_address(host, port)
    stop = start_scheduler(db, cfg, replicas) if schedule else None
    shared = tempfile.mkdtemp(prefix="evidex-serve-")  # the workers' file of recent writes
    if workers > 1 and THREADS_ENV not in os.environ:
        # Each worker embeds queries with its own OpenMP/onnxruntime thread pool; N pools of
        # all cores oversubscribe the machine and every query waits. Split the cores instead.
        os.environ[THREADS_ENV] = str(max(1, (os.cpu_count() or 1) // workers))
    os.environ[DB_ENV] = str(Path(db).resolve()) if db and "://" not in db else db
    os.environ[CONFIG_ENV] = str(Path(config).resolve())
    os.environ[REPLICAS_ENV] = "\n".join(replicas)
    os.environ[RECENT_WRITES_ENV] = str(Path(shared) / "recent-writes.sqlite")
    if workers > 1 and MULTIPROC_ENV not in os.environ:
        # Each worker counts into files of one folder, and a scrape sums them (``_counters``).
        (Path(shared) / "metrics").mkdir()
        os.environ[MULTIPROC_ENV] = str(Path(shared) / "metrics")
    # One key for the trace ids of every worker: a handoff may reach another worker than the
    # answer it names.
    os.environ.setdefault(TRACE_KEY_ENV, secrets.token_hex(32))
    shown = f"[{host}]" if ":" in host else host
    stores = redacted(str(Path(where.default.url).resolve()) if not is_postgres_url(where.default.url)
                      else where.default.url)
    others = len(where.locations()) - 1
    more = f" and {others} more stores" if others else ""
    print(f"evidex serving {stores}{more} at http://{shown}:{port}/ "
          f"({workers} worker{'s' if workers != 1 else ''})", file=sys.stderr, flush=True)
    try:
        uvicorn.run("evidex.server._run:app_from_env", factory=True, host=host, port=port,
                    workers=workers, access_log=False, log_level="warning", server_header=False,
                    limit_concurrency=512, timeout_keep_alive=15,
                    **proxy_options(settings))
    finally:
        if stop is not None:
            stop.set()
        shutil.rmtree(shared, ignore_errors=True)


def run_mcp(db: str, config: str | Path, replicas: Sequence[str] = ()) -> None:
    """``evidex mcp``: the MCP tools over stdio for the API key in ``$EVIDEX_API_KEY``."""
    from ._mcp import run_stdio

    cfg = load_config(config)
    where = placement(db, cfg, replicas)
    require_stores(where)
    _require_thread_settings()
    run_stdio(functools.partial(open_configured, cfg, where, as_is=True), require_settings(cfg),
              tools=cfg.tools, answer_settings=cfg.answer_settings(),
              generator=cfg.answer.generator)
