"""Sending a drift report to the configured webhook."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from ..model import NotifyError
from ._sync import SyncReport

__all__ = ["NotifyError", "notify_webhook"]


def notify_webhook(url: str, report: SyncReport, *, timeout: float = 10.0, attempts: int = 3,
                   pause: float = 0.5, sleep: Callable[[float], None] = time.sleep) -> int:
    """POST the report as JSON; returns the HTTP status. Tried up to ``attempts`` times with
    pauses of ``pause``, 2x``pause``, ... (as the owners' routes are: a receiver restarting
    should not lose a drift). A last failure raises rather than being logged and forgotten: a
    drift nobody hears about is the failure the check exists for."""
    body = report.as_dict()
    error = ""
    for n in range(1, max(1, attempts) + 1):
        try:
            resp = httpx.post(url, json=body, timeout=timeout, headers={"User-Agent": "evidex-drift/0.1"})
        except httpx.HTTPError as exc:
            error = f"the drift webhook {url} failed: {type(exc).__name__}: {exc}"
        else:
            if 200 <= resp.status_code < 300:
                return resp.status_code
            error = f"the drift webhook {url} answered HTTP {resp.status_code}"
        if n < attempts:
            sleep(pause * 2 ** (n - 1))
    raise NotifyError(f"{error} ({attempts} attempts)" if attempts > 1 else error)
