"""The HTTP API and the web page: a thin FastAPI layer over :class:`evidex.KnowledgeBase`.

``create_app`` wires the parts: ``Guard`` (body limit, credentials, rate limits, headers, the
request log) in front of everything, then one router per resource (``_search``, ``_answer``,
``_resolve``, ``_documents``, ``_admin``, ``_health``, ``_page``). Routes take their identity
from ``_deps.Caller`` and everything else from ``Services``; library errors (``EvidexError``)
become 422 with the library's one-line message.

Admin operations over sources (sync, drift) are injected as callables so this package does not
depend on the sources package; without them the endpoints answer 501.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

from .. import __version__
from ..answer import AnswerSettings
from ..config import ServerSettings
from ..knowledge import Knowledge
from ..model import EvidexError, StoreError
from ..store import RecentWrites
from ..tools import Toolbox
from . import (
    _admin,
    _answer,
    _conflicts,
    _documents,
    _feedback,
    _handoff,
    _health,
    _metrics,
    _ops,
    _page,
    _resolve,
    _search,
    _session,
    _tools,
)
from ._consistency import ReadYourWrites
from ._counters import RequestMetrics, ServiceMetrics
from ._deps import DriftFn, Services, SourcesFn, SyncFn
from ._guard import Guard
from ._identity import Authenticator, RateLimiter
from ._logging import STORE_RETRY_AFTER_S, STORE_UNAVAILABLE, log_store_failure, setup_logging
from ._pool import StorePool, as_factory
from ._schemas import max_quote_chars

__all__ = ["create_app"]

#: In the order of the OpenAPI document.
_ROUTERS = (_search, _answer, _resolve, _documents, _admin, _conflicts, _handoff, _tools, _session,
            _health, _feedback, _metrics, _ops, _page)


def create_app(
    kb: Knowledge | Callable[[], Knowledge] | str | Path,
    settings: ServerSettings,
    *,
    sync: SyncFn | None = None,
    drift: DriftFn | None = None,
    answer_settings: AnswerSettings | None = None,
    generator: str = "extractive",
    handoff: Any = None,
    tools: Toolbox | None = None,
    recent_writes: RecentWrites | None = None,
    sources: SourcesFn | None = None,
) -> FastAPI:
    """The service over a store: ``kb`` is a location, a factory of handles, or one handle
    (then every request shares it, one at a time). ``tools``: the live tools the handles
    opened from a location share (closed with the app).

    Per-address limits key on the ASGI scope's client address: run the app under uvicorn with
    ``proxy_options(settings)`` (as ``evidex serve`` does), not uvicorn's defaults, which let
    a connection from 127.0.0.1 name any client address.

    ``recent_writes``: where each caller's last write is remembered, so its next reads see it
    on any replica (``_consistency``; default: this process, for 12 seconds). ``sources``: what
    the configuration says about each tenant's sources, for the operators' view (``_ops``)."""
    auth = Authenticator(settings)
    if not auth.configured:
        raise EvidexError("the server configuration defines no api_keys and no jwt: nobody could sign in")
    factory, single, toolbox = as_factory(kb, tools)
    pool = StorePool(factory, 1 if single else settings.store_handles)
    setup_logging()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> Any:
        yield
        if not single:
            pool.close()
        if tools is not None:
            tools.close()

    app = FastAPI(
        title="evidex",
        version=__version__,
        description="Search, answers with citations that re-resolve, and citation checks over the "
                    "passages the calling key may read. Credentials: `Authorization: Bearer <key>`. "
                    f"Request bodies are at most {settings.max_body_bytes} bytes (413 otherwise).",
        docs_url=None, redoc_url=None, lifespan=lifespan,
    )
    quote_chars = max_quote_chars(settings.max_body_bytes)
    app.state.services = Services(
        pool=pool, answer_settings=answer_settings, generator=generator,
        fusion=(answer_settings or AnswerSettings()).fusion, sync=sync, drift=drift,
        page=_page.render_page(settings), handoff=handoff, max_quote_chars=quote_chars, tools=toolbox,
        metrics=ServiceMetrics() if settings.metrics else None, sources=sources)
    app.openapi = lambda: _openapi(app, quote_chars)  # type: ignore[method-assign]
    app.add_exception_handler(EvidexError, _library_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _invalid)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]
    for module in _ROUTERS:
        app.include_router(module.router)
    app.mount("/static", _page.static_files(), name="static")
    if app.state.services.metrics is not None:  # innermost: the route is known when it returns
        app.add_middleware(RequestMetrics, metrics=app.state.services.metrics)  # type: ignore[arg-type]
    # Inside the guard: the caller is known when the read session starts.
    app.add_middleware(ReadYourWrites, memory=recent_writes or RecentWrites(12.0))  # type: ignore[arg-type]
    app.add_middleware(Guard, auth=auth, limiter=RateLimiter(settings.rate_limit_per_minute),  # type: ignore[arg-type]
                       max_body=settings.max_body_bytes,
                       failures=RateLimiter(settings.failed_auth_per_minute))
    return app


async def _library_error(request: Request, exc: EvidexError) -> JSONResponse:
    if isinstance(exc, StoreError):
        log_store_failure(exc, route=_route_of(request))
        return JSONResponse({"detail": STORE_UNAVAILABLE}, status_code=503,
                            headers={"Retry-After": str(STORE_RETRY_AFTER_S)})
    return JSONResponse({"detail": str(exc)}, status_code=422)


def _route_of(request: Request) -> str:
    route = request.scope.get("route")
    return str(getattr(route, "path", "") or "")


def _openapi(app: FastAPI, quote_chars: int) -> dict[str, Any]:
    """The OpenAPI document with this service's own bounds where they depend on its settings."""
    if app.openapi_schema is None:
        schema = FastAPI.openapi(app)
        quote = schema["components"]["schemas"]["Citation"]["properties"]["quote"]
        quote.update(maxLength=quote_chars, description="the cited passage's text; the whole body "
                     "must also fit the body limit (413 otherwise)")
    return app.openapi_schema  # type: ignore[return-value]


async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
    if exc.status_code == 400:
        # FastAPI's answer to a body it could not decode as JSON at all (not UTF-8, nested past
        # the parser's depth): the same 422 as any other malformed JSON body.
        return JSONResponse({"detail": [{"loc": ["body"], "msg": "the body is not JSON that can be "
                                         "read (UTF-8, nested at most a few hundred levels)",
                                         "type": "json_invalid"}]}, status_code=422)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        # Starlette names the methods of the first route matching the path only; a path served
        # by several routes (GET and DELETE of a document) allows all of theirs.
        path = request.scope["path"]
        allowed = sorted({m for module in _ROUTERS for r in module.router.routes
                          if isinstance(r, APIRoute) and r.path_regex.match(path) for m in r.methods})
        headers["Allow"] = ", ".join(allowed)
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)


async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
    # The input itself is not echoed back: the client has it, and logs must not.
    errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
              for e in exc.errors()]
    return JSONResponse({"detail": errors}, status_code=422)
