"""The web page: ``GET /`` and its static files. It calls the same ``/v1`` API as any client,
with the key its user types; the server only fills in the page's configuration."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

from .. import __version__
from ..config import ServerSettings
from ._deps import Svc

__all__ = ["DEMO_KEY_ENV", "STATIC", "demo_hint", "render_page", "router", "static_files"]

STATIC = Path(__file__).resolve().parent / "static"
#: Set by `make run` only: the demo key the sign-in form suggests. A real deployment never sets
#: it, so its page suggests no key.
DEMO_KEY_ENV = "EVIDEX_DEMO_KEY"

router = APIRouter()


def demo_hint(settings: ServerSettings, key: str | None) -> dict[str, str] | None:
    """The sign-in form's hint in the demo: the key and whom it signs in as. Only a key that
    the configuration knows (by its SHA-256) is suggested, so a stale or mistyped variable
    never puts a key on the page that would be refused."""
    if not key:
        return None
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    for api_key in settings.api_keys:
        if api_key.key_sha256 == digest:
            return {"key": key, "name": api_key.name or "", "tenant": api_key.tenant}
    return None


def render_page(settings: ServerSettings, demo_key: str | None = None) -> bytes:
    """The page with its configuration; ``demo_key`` defaults to ``$EVIDEX_DEMO_KEY``."""
    if demo_key is None:
        demo_key = os.environ.get(DEMO_KEY_ENV)
    config = json.dumps({"allowedLinkHosts": list(settings.allowed_link_hosts), "version": __version__,
                         "demo": demo_hint(settings, demo_key)})
    # Inside <script type="application/json"> only "</" could end the element early.
    config = config.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    return html.replace("{{CONFIG}}", config).encode("utf-8")


def static_files() -> StaticFiles:
    return StaticFiles(directory=STATIC)


@router.get("/", include_in_schema=False)
async def index(svc: Svc) -> Response:
    return HTMLResponse(svc.page)
