"""The HTTP API and the web page: a thin FastAPI layer over :class:`evidex.KnowledgeBase`.

Order of checks for every request, in one ASGI middleware before any routing or body parsing:
body size (413), credentials (401, for ``/v1/*``), rate limit (429). Only then does FastAPI parse
and validate the body (422). Identity is therefore settled before a single byte of the body is
interpreted, and nothing in a body can change it.

Admin operations over sources (sync, drift) are injected as callables so this module does not
depend on the sources package; without them the endpoints answer 501.
"""

from __future__ import annotations

import json
import math
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Annotated, Any, Protocol

import numpy as np
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles

from .. import __version__
from ..answer import AnswerSettings
from ..kb import KnowledgeBase
from ..model import EvidexError, can_access
from ._identity import Authenticator, Principal, RateLimiter
from ._logging import log_event, log_failure, setup_logging
from ._schemas import (
    AnswerRequest,
    AnswerResponse,
    Citation,
    DocumentResponse,
    Problem,
    ResolveResponse,
    SearchRequest,
    SearchResponse,
    SyncRequest,
)
from ._settings import ServerSettings

__all__ = ["DriftFn", "StorePool", "SyncFn", "create_app"]

STATIC = Path(__file__).resolve().parent / "static"


class SyncFn(Protocol):
    """Runs a sync of the caller's tenant (one source or all) and reports what changed."""

    def __call__(self, *, tenant: str, source: str | None) -> Mapping[str, Any]: ...


class DriftFn(Protocol):
    """Reports how the caller's tenant's store differs from its sources, changing nothing."""

    def __call__(self, *, tenant: str) -> Mapping[str, Any]: ...


class StorePool:
    """A bounded set of open KnowledgeBase handles, one request per handle at a time.

    A KnowledgeBase serialises its reads on its connection's lock, and its query-vector cache is
    a plain dict, so handles are not shared between concurrent requests; a few handles let a
    slow request (an answer from a model server) not hold up the searches behind it.
    """

    def __init__(self, factory: Callable[[], KnowledgeBase], size: int, wait_s: float = 30.0) -> None:
        self._factory = factory
        self._size = size
        self._wait_s = wait_s
        self._idle: queue.LifoQueue[KnowledgeBase] = queue.LifoQueue()
        self._made: list[KnowledgeBase] = []
        self._lock = threading.Lock()

    @contextmanager
    def handle(self) -> Iterator[KnowledgeBase]:
        kb = self._take()
        try:
            yield kb
        finally:
            self._idle.put(kb)

    def _take(self) -> KnowledgeBase:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            make = len(self._made) < self._size
            if make:
                kb = self._factory()
                self._made.append(kb)
                return kb
        try:
            return self._idle.get(timeout=self._wait_s)
        except queue.Empty:
            raise HTTPException(503, "the service is busy; try again") from None

    def close(self) -> None:
        with self._lock:
            for kb in self._made:
                kb.close()
            self._made.clear()


def _as_factory(kb: KnowledgeBase | Callable[[], KnowledgeBase] | str | Path) -> tuple[
        Callable[[], KnowledgeBase], bool]:
    if isinstance(kb, KnowledgeBase):
        return (lambda: kb), True
    if isinstance(kb, str | Path):
        location = kb
        return (lambda: KnowledgeBase.open(location)), False
    if callable(kb):
        return kb, False
    raise TypeError("create_app needs a KnowledgeBase, a factory of them, or a store location")


_SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy",
     b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
     b"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
]
_NO_STORE = (b"cache-control", b"no-store")


def _route(path: str) -> str:
    """The route template for logs: document ids are data and stay out of them."""
    if path.startswith("/v1/documents/"):
        return "/v1/documents/{document_id}"
    if path.startswith("/static/"):
        return "/static/*"
    if path in ("/", "/healthz", "/openapi.json") or path.startswith("/v1/"):
        return path if len(path) <= 64 else path[:64] + "..."
    return "other"


class _Guard:
    """Body limit, authentication, rate limit, security headers, request log, last-resort 500."""

    def __init__(self, app: Any, auth: Authenticator, limiter: RateLimiter, max_body: int,
                 failures: RateLimiter) -> None:
        self.app, self.auth, self.limiter, self.max_body = app, auth, limiter, max_body
        self.failures = failures

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        state = {"status": 0, "started": False, "closed": False}
        path = scope.get("path", "")
        api = path.startswith("/v1/")
        who: Principal | None = None

        async def send_wrapped(message: dict[str, Any]) -> None:
            if state["closed"]:
                return  # the guard already answered (413 mid-stream); the app's reply is dropped
            if message["type"] == "http.response.start":
                state["status"], state["started"] = message["status"], True
                headers = list(message.get("headers", []))
                headers.extend(_SECURITY_HEADERS)
                if api:
                    headers.append(_NO_STORE)
                message = {**message, "headers": headers}
            await send(message)

        async def reply(status: int, detail: str, extra: tuple[tuple[bytes, bytes], ...] = ()) -> None:
            body = json.dumps({"detail": detail}).encode()
            await send_wrapped({"type": "http.response.start", "status": status, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                *extra]})
            await send_wrapped({"type": "http.response.body", "body": body})

        try:
            length, authorization = None, None
            for name, value in scope.get("headers", ()):
                if name == b"content-length":
                    length = value
                elif name == b"authorization":
                    authorization = value.decode("latin-1")
            if length is not None:
                try:
                    n = int(length)
                except ValueError:
                    await reply(400, "invalid Content-Length")
                    return
                if n > self.max_body:
                    await reply(413, f"the request body is larger than {self.max_body} bytes")
                    return
            if api:
                # An address that failed too often is refused before its credentials are looked
                # at: answering a guess (200 or 401) would let guessing go on at full speed.
                client = scope.get("client")
                address = str(client[0]) if client else "unknown"
                wait = self.failures.waiting(address)
                if wait > 0:
                    await reply(429, "too many failed credential checks from this address",
                                ((b"retry-after", str(max(1, math.ceil(wait))).encode()),))
                    return
                who = self.auth.from_header(authorization)
                if who is None:
                    self.failures.take(address)
                    await reply(401, "missing or invalid credentials",
                                ((b"www-authenticate", b'Bearer realm="evidex"'),))
                    return
                wait = self.limiter.take(who.label)
                if wait > 0:
                    await reply(429, "rate limit exceeded for this key",
                                ((b"retry-after", str(max(1, math.ceil(wait))).encode()),))
                    return
                scope.setdefault("state", {})["principal"] = who
            seen = 0

            async def receive_limited() -> dict[str, Any]:
                # A body without Content-Length is counted as it arrives; past the limit the
                # guard answers 413 itself and tells the app the client went away, so the app
                # stops reading without parsing a truncated body.
                nonlocal seen
                if state["closed"]:
                    return {"type": "http.disconnect"}
                message = await receive()
                if message["type"] == "http.request":
                    seen += len(message.get("body", b""))
                    if seen > self.max_body:
                        if not state["started"]:
                            await reply(413, f"the request body is larger than {self.max_body} bytes")
                        state["closed"] = True
                        return {"type": "http.disconnect"}
                return message

            await self.app(scope, receive_limited, send_wrapped)
        except Exception as exc:
            log_failure("unhandled_error", exc, route=_route(path))
            if not state["started"]:
                await reply(500, "internal error")
        finally:
            fields: dict[str, Any] = {
                "method": scope.get("method"), "route": _route(path), "status": state["status"],
                "ms": round((time.perf_counter() - t0) * 1000, 2)}
            if who is not None:
                fields.update(key=who.label, tenant=who.actor.tenant)
            log_event("request", **fields)


_bearer = HTTPBearer(auto_error=False, description="An API key from the server configuration, or a JWT "
                                                   "signed by a configured key.")


async def _principal(request: Request,
                     _: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> Principal:
    who = request.scope.get("state", {}).get("principal")
    if not isinstance(who, Principal):  # the guard authenticates every /v1 request first
        raise HTTPException(401, "missing or invalid credentials")
    return who


async def _admin(who: Annotated[Principal, Depends(_principal)]) -> Principal:
    if not who.admin:
        raise HTTPException(403, "this operation needs an admin key")
    return who


Caller = Annotated[Principal, Depends(_principal)]
Admin = Annotated[Principal, Depends(_admin)]

_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "missing or invalid credentials"},
    413: {"model": Problem, "description": "the body exceeds the configured size limit"},
    422: {"model": Problem, "description": "the body or a value breaks the API or query contract"},
    429: {"model": Problem, "description": "rate limit of this key, or of failed credential checks "
                                           "from this address, exceeded (see Retry-After)"},
}
_ADMIN_ERRORS = {**_ERRORS, 403: {"model": Problem, "description": "not an admin key"},
                 501: {"model": Problem, "description": "no sources are configured on this server"}}


def _page(settings: ServerSettings) -> bytes:
    config = json.dumps({"allowedLinkHosts": list(settings.allowed_link_hosts), "version": __version__})
    # Inside <script type="application/json"> only "</" could end the element early.
    config = config.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    return html.replace("{{CONFIG}}", config).encode("utf-8")


def create_app(
    kb: KnowledgeBase | Callable[[], KnowledgeBase] | str | Path,
    settings: ServerSettings,
    *,
    sync: SyncFn | None = None,
    drift: DriftFn | None = None,
    answer_settings: AnswerSettings | None = None,
    generator: str = "extractive",
) -> FastAPI:
    """The service over a store: ``kb`` is a location, a factory of handles, or one handle
    (then every request shares it, one at a time)."""
    auth = Authenticator(settings)
    if not auth.configured:
        raise EvidexError("the server configuration defines no api_keys and no jwt: nobody could sign in")
    factory, single = _as_factory(kb)
    pool = StorePool(factory, 1 if single else settings.store_handles)
    page = _page(settings)
    # A search request's fusion defaults to the configured one (``retrieval:``), as answers do.
    configured_fusion = (answer_settings or AnswerSettings()).fusion
    setup_logging()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> Any:
        yield
        if not single:
            pool.close()

    app = FastAPI(
        title="evidex",
        version=__version__,
        description="Search, answers with citations that re-resolve, and citation checks over the "
                    "passages the calling key may read. Credentials: `Authorization: Bearer <key>`.",
        docs_url=None, redoc_url=None, lifespan=lifespan,
    )
    app.state.pool = pool

    @app.exception_handler(EvidexError)
    async def _library_error(_: Request, exc: EvidexError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=422)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        # The input itself is not echoed back: the client has it, and logs must not.
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
                  for e in exc.errors()]
        return JSONResponse({"detail": errors}, status_code=422)

    @app.post("/v1/search", response_model=SearchResponse, responses=_ERRORS, tags=["retrieval"])
    def search(body: SearchRequest, who: Caller) -> Response:
        """Passages the caller may read, best first. Scores order one result list only."""
        flt = body.filters.model_dump() if body.filters else None
        with pool.handle() as base:
            hits = base.search(who.actor, body.query, limit=body.top_k, match=body.match, mode=body.mode,
                               filters=flt, max_per_document=body.max_per_document, explain=body.explain,
                               fusion=body.fusion_over(configured_fusion))
        return JSONResponse({"hits": [h.as_dict() for h in hits], "evidence": hits.evidence})

    @app.post("/v1/answer", response_model=AnswerResponse, responses=_ERRORS, tags=["retrieval"])
    def answer(body: AnswerRequest, who: Caller) -> Response:
        """An answer whose every sentence cites a passage the caller may read, or a decline
        with its reason and the handoff."""
        flt = body.filters.model_dump() if body.filters else None
        with pool.handle() as base:
            ans = base.answer(who.actor, body.question, generator=generator, filters=flt,
                              settings=answer_settings)
        return JSONResponse(ans.as_dict())

    @app.post("/v1/resolve", response_model=ResolveResponse, responses=_ERRORS, tags=["retrieval"])
    def resolve(body: Citation, who: Caller) -> Response:
        """Re-check a citation now: ``unavailable`` (unknown, or not readable by this caller),
        ``source_changed`` or ``quote_mismatch``."""
        with pool.handle() as base:
            res = base.resolve(who.actor, body.model_dump())
        return JSONResponse(res.as_dict())

    @app.get("/v1/documents/{document_id:path}", response_model=DocumentResponse,
             responses={**_ERRORS, 404: {"model": Problem, "description": "no such document for you"}},
             tags=["retrieval"])
    def document(document_id: str, who: Caller) -> Response:
        """A document's metadata and its passages, when the caller may read it (404 otherwise:
        unknown and not readable are indistinguishable)."""
        with pool.handle() as base, base.store.read() as view:
            doc = view.document(who.actor.tenant, document_id)
            if doc is None or not can_access(who.actor, doc.tenant, doc.groups, doc.visibility):
                raise HTTPException(404, "no such document is available to you")
            n = min(len(view.dkey), len(view.sig))
            pids = np.flatnonzero((view.dkey[:n] == doc.dkey) & (view.sig[:n] >= 0))
            rows = sorted(view.passages(int(p) for p in pids).values(), key=lambda p: p.number)
        return JSONResponse({
            "document_id": doc.id, "version": doc.version, "content_sha256": doc.content_sha256,
            "title": doc.title, "source_url": doc.source_url, "language": doc.language,
            "tags": list(doc.tags), "published_at": doc.published_at, "indexed_at": doc.indexed_at,
            "passages": [{"passage": p.number, "start": p.start, "end": p.end, "quote": p.text,
                          "heading_path": list(p.heading_path), "anchor": p.anchor, "page": p.page,
                          "flags": list(p.flags)} for p in rows],
        })

    @app.delete("/v1/documents/{document_id:path}",
                responses={**_ADMIN_ERRORS, 404: {"model": Problem, "description": "no such document"}},
                tags=["admin"])
    def remove(document_id: str, who: Admin) -> dict[str, Any]:
        """Erase a document of the admin key's tenant with its passages and history."""
        with pool.handle() as base:
            if not base.remove(who.actor.tenant, document_id):
                raise HTTPException(404, "no such document in your tenant")
        return {"removed": True, "document_id": document_id}

    @app.post("/v1/sync", responses=_ADMIN_ERRORS, tags=["admin"])
    def run_sync(body: SyncRequest, who: Admin) -> dict[str, Any]:
        """Sync the admin key's tenant from its configured sources."""
        if sync is None:
            raise HTTPException(501, "this server was started without sources configured; sync is "
                                     "not available")
        return dict(sync(tenant=who.actor.tenant, source=body.source))

    @app.get("/v1/drift", responses=_ADMIN_ERRORS, tags=["admin"])
    def run_drift(who: Admin) -> dict[str, Any]:
        """How the admin key's tenant's store differs from its sources (changes nothing)."""
        if drift is None:
            raise HTTPException(501, "this server was started without sources configured; drift is "
                                     "not available")
        return dict(drift(tenant=who.actor.tenant))

    @app.get("/healthz", tags=["service"], responses={503: {"model": Problem}})
    def healthz() -> Response:
        """Liveness and store readability; no credentials needed, no data returned."""
        try:
            with pool.handle() as base, base.store.read():
                pass
        except Exception as exc:
            log_failure("health_check_failed", exc)
            return JSONResponse({"detail": "store unavailable"}, status_code=503)
        return JSONResponse({"status": "ok"})

    @app.get("/", include_in_schema=False)
    async def index() -> Response:
        return HTMLResponse(page)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_middleware(_Guard, auth=auth, limiter=RateLimiter(settings.rate_limit_per_minute),  # type: ignore[arg-type]
                       max_body=settings.max_body_bytes,
                       failures=RateLimiter(settings.failed_auth_per_minute))
    return app
