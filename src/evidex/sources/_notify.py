"""Sending a drift report to the configured webhook."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from ..model import NotifyError
from ..routes import try_route
from ._sync import SyncReport

__all__ = ["NotifyError", "notify_webhook"]


def notify_webhook(url: str, report: SyncReport, *, timeout: float = 10.0, attempts: int = 3,
                   pause: float = 0.5, sleep: Callable[[float], None] = time.sleep) -> int:
    """POST the report as JSON; returns the HTTP status. Tried as every route is
    (``routes.try_route``). A last failure raises rather than being logged and forgotten: a
    drift nobody hears about is the failure the check exists for."""
    body = report.as_dict()
    status: list[int] = []

    def send() -> None:
        try:
            resp = httpx.post(url, json=body, timeout=timeout, headers={"User-Agent": "evidex-drift/0.1"})
        except httpx.HTTPError as exc:
            raise NotifyError(f"the drift webhook {url} failed: {type(exc).__name__}: {exc}") from None
        if not 200 <= resp.status_code < 300:
            raise NotifyError(f"the drift webhook {url} answered HTTP {resp.status_code}")
        status.append(resp.status_code)

    made, error = try_route(send, attempts, pause, sleep)
    if error is not None:
        raise NotifyError(f"{error} ({made} attempts)" if made > 1 else error)
    return status[-1]
