"""``GET /healthz``: liveness and store readability, for load balancers; no credentials.
``GET /v1/health``: for admins, every database server behind the service (tenants' stores,
primaries, replicas) with its state, generation and lag."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from ._consistency import server_id
from ._deps import ADMIN_ERRORS, Admin, Svc
from ._logging import log_failure
from ._schemas import Problem

router = APIRouter(tags=["service"])


@router.get("/healthz", responses={503: {"model": Problem}})
def healthz(svc: Svc) -> Response:
    """Liveness and store readability; no credentials needed, no data returned."""
    try:
        with svc.pool.handle() as kb:
            kb.check_readable()
    except Exception as exc:
        log_failure("health_check_failed", exc)
        return JSONResponse({"detail": "store unavailable"}, status_code=503)
    return JSONResponse({"status": "ok"})


#: What ``/v1/health`` shows of a server to a tenant's admin: no address, location, error text
#: or other tenants' names (the operator reads those with ``evidex servers`` and in the log).
#: Its ``generation`` is the tenant's own on that server (its newest write the server holds):
#: the server's counts every tenant's writes, and another tenant's would move it (issue 45).
SHOWN = ("role", "state", "lag_s", "since")


def _shown(s: dict[str, object], tenant: str) -> dict[str, object]:
    shown: dict[str, object] = {"id": server_id(str(s["server"])), **{k: s[k] for k in SHOWN if k in s}}
    if "generation" in s:  # a server that counts generations (a primary, a replica)
        tenants = s.get("tenant_generations")
        shown["generation"] = tenants.get(tenant) if isinstance(tenants, dict) else None
    return shown


@router.get("/v1/health", responses=ADMIN_ERRORS)
def health(who: Admin, svc: Svc) -> Response:
    """The servers of the caller's tenant's store (its primary and replicas): role, state (ok,
    lagging, down), the generation of the tenant's newest write it holds (null: none recorded
    there), lag in seconds, and the id the ``X-Evidex-Server`` header names it by; ``status``
    is ``degraded`` when one is not ok (reads then go to the others, writes fail while a
    primary is down). Other tenants' stores and writes are not shown."""
    with svc.pool.handle() as kb:
        servers = kb.for_tenant(who.actor.tenant).servers()
    shown = [_shown(s, who.actor.tenant) for s in servers]
    status = "ok" if all(s.get("state") == "ok" for s in servers) else "degraded"
    return JSONResponse({"status": status, "servers": shown})
