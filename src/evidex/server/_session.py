"""``GET /v1/session``: whether the credentials are accepted, and whom the configuration makes
the caller. The web page checks a key here when it is typed, so a mistyped key is refused at
sign-in rather than on the first question; nothing is read from the store."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ._deps import ERRORS, Caller

router = APIRouter(tags=["service"])


@router.get("/v1/session", responses=ERRORS)
def session(who: Caller) -> dict[str, Any]:
    """The caller as the server's configuration makes it: its name in logs, tenant and whether
    it is an admin (never the credential)."""
    return {"name": who.label, "tenant": who.actor.tenant, "admin": who.admin}
