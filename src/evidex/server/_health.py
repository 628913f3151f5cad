"""``GET /healthz``: liveness and store readability, for load balancers; no credentials."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from ._deps import Svc
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
