"""What every route depends on: the caller's identity and the services of this app.

Routes never build an identity: ``Guard`` authenticated the request before routing and left the
principal in the ASGI scope; ``caller`` only reads it. ``Services`` is everything
``create_app`` was configured with, one object per app (``app.state.services``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..answer import AnswerSettings
from ..retrieve import Fusion
from ..store import ReadSession
from ..tools import Toolbox
from ._counters import ServiceMetrics
from ._identity import Principal
from ._pool import StorePool
from ._schemas import Problem

__all__ = ["ADMIN_ERRORS", "DENIAL_FLOOR_S", "ERRORS", "Admin", "Caller", "DriftFn", "Reads", "Services",
           "SourcesFn", "Svc", "SyncFn", "uniform_denial"]


class SyncFn(Protocol):
    """Runs a sync of the caller's tenant (one source or all) and reports what changed; its
    writes are told to ``session``, the request's (see ``_consistency``)."""

    def __call__(self, *, tenant: str, source: str | None,
                 session: ReadSession | None = None) -> Mapping[str, Any]: ...


class DriftFn(Protocol):
    """Reports how the caller's tenant's store differs from its sources, changing nothing."""

    def __call__(self, *, tenant: str) -> Mapping[str, Any]: ...


class SourcesFn(Protocol):
    """What the configuration says about the caller's tenant's sources (``_ops.overview``)."""

    def __call__(self, *, tenant: str) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Services:
    pool: StorePool
    #: The configured answer settings (None: the library's defaults).
    answer_settings: AnswerSettings | None
    generator: str
    #: A search request's fusion defaults to the configured one (``retrieval:``), as answers do.
    fusion: Fusion
    #: Admin operations over sources; None when the server runs without sources (501).
    sync: SyncFn | None
    drift: DriftFn | None
    #: The web page with its configuration filled in.
    page: bytes
    #: The longest citation quote accepted (derived from the body limit; see ``_schemas``).
    max_quote_chars: int
    #: Sends handoffs to the configured person (``answer.handoff``); None: no route (501).
    handoff: Any = None
    #: The live tools the handles share, so lookups run without a handle (None: unknown, the
    #: handles make their own).
    tools: Toolbox | None = None
    #: The counters of ``GET /metrics`` (None: ``server.metrics`` is off).
    metrics: ServiceMetrics | None = None
    #: The configured sources for the operators' view (None: no sources configured).
    sources: SourcesFn | None = None


_bearer = HTTPBearer(auto_error=False, description="An API key from the server configuration, or a JWT "
                                                   "signed by a configured key.")


async def caller(request: Request,
                 _: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> Principal:
    who = request.scope.get("state", {}).get("principal")
    if not isinstance(who, Principal):  # the guard authenticates every /v1 request first
        raise HTTPException(401, "missing or invalid credentials")
    return who


async def reads(request: Request) -> ReadSession:
    """The request's read session: every store call of the route takes it (``session=``), so
    the caller reads its own writes (``_consistency.ReadYourWrites`` made it)."""
    session = request.scope.get("state", {}).get("reads")
    if not isinstance(session, ReadSession):
        raise RuntimeError("no read session: the ReadYourWrites middleware wraps every route")
    return session


async def admin(who: Annotated[Principal, Depends(caller)]) -> Principal:
    if not who.admin:
        raise HTTPException(403, "this operation needs an admin key")
    return who


async def services(request: Request) -> Services:
    return request.app.state.services  # type: ignore[no-any-return]


#: The least time a "not available to you" answer takes, from the start of its lookup.
DENIAL_FLOOR_S = 0.002


async def uniform_denial(started: float) -> None:
    """Wait until ``DENIAL_FLOOR_S`` has passed since ``started`` (``time.perf_counter()``).

    A document that exists but is not readable and one that does not exist get the same answer;
    the lookup behind it does not take the same time (a found row is decoded and checked, its
    pages may be cached or not). Every denial is held to one floor, far above that difference,
    so the answer's timing says nothing either; readable documents are not delayed."""
    remaining = started + DENIAL_FLOOR_S - time.perf_counter()
    if remaining > 0:
        await asyncio.sleep(remaining)


Caller = Annotated[Principal, Depends(caller)]
Admin = Annotated[Principal, Depends(admin)]
Svc = Annotated[Services, Depends(services)]
Reads = Annotated[ReadSession, Depends(reads)]

ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "missing or invalid credentials"},
    413: {"model": Problem, "description": "the body exceeds the configured size limit"},
    422: {"model": Problem, "description": "the body or a value breaks the API or query contract"},
    429: {"model": Problem, "description": "rate limit of this key, or of failed credential checks "
                                           "from this address, exceeded (see Retry-After)"},
    503: {"model": Problem, "description": "the store is unavailable (a server down, a tenant being moved) "
                                           "or the service is busy; try again (see Retry-After)"},
}
ADMIN_ERRORS = {**ERRORS, 403: {"model": Problem, "description": "not an admin key"},
                501: {"model": Problem, "description": "no sources are configured on this server"}}
