"""Sending a drift report to the configured webhook."""

from __future__ import annotations

import httpx

from ..model import NotifyError
from ._sync import SyncReport

__all__ = ["NotifyError", "notify_webhook"]


def notify_webhook(url: str, report: SyncReport, *, timeout: float = 10.0) -> int:
    """POST the report as JSON; returns the HTTP status. A failure raises rather than being
    logged and forgotten: a drift nobody hears about is the failure the check exists for."""
    try:
        resp = httpx.post(url, json=report.as_dict(), timeout=timeout,
                          headers={"User-Agent": "evidex-drift/0.1"})
    except httpx.HTTPError as exc:
        raise NotifyError(f"the drift webhook {url} failed: {type(exc).__name__}: {exc}") from None
    if not 200 <= resp.status_code < 300:
        raise NotifyError(f"the drift webhook {url} answered HTTP {resp.status_code}")
    return resp.status_code
