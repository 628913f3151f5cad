"""``GET /metrics``: the admin key's tenant's series in the Prometheus text format (what is
counted and how labels stay bounded: ``_counters``)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ._deps import ADMIN_ERRORS, Admin, Svc

router = APIRouter(tags=["service"])


@router.get("/metrics", responses={**ADMIN_ERRORS, 200: {
    "content": {"text/plain": {}}, "description": "the Prometheus text exposition format"}})
async def metrics(who: Admin, svc: Svc) -> Response:
    """The admin key's tenant's metrics in the Prometheus text format (404 when the server's
    configuration turns metrics off: ``server.metrics: false``)."""
    if svc.metrics is None:
        return JSONResponse({"detail": "metrics are turned off on this server (server.metrics)"},
                            status_code=404)

    def scrape() -> bytes:
        with svc.pool.handle() as kb:
            return svc.metrics.exposition(who.actor.tenant, kb)  # type: ignore[union-attr]

    return Response(await run_in_threadpool(scrape), media_type=CONTENT_TYPE_LATEST)
