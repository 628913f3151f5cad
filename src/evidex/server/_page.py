"""The web page: ``GET /`` and its static files. It calls the same ``/v1`` API as any client,
with the key its user types; the server only fills in the page's configuration."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

from .. import __version__
from ..config import ServerSettings
from ._deps import Svc

__all__ = ["STATIC", "render_page", "router", "static_files"]

STATIC = Path(__file__).resolve().parent / "static"

router = APIRouter()


def render_page(settings: ServerSettings) -> bytes:
    config = json.dumps({"allowedLinkHosts": list(settings.allowed_link_hosts), "version": __version__})
    # Inside <script type="application/json"> only "</" could end the element early.
    config = config.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    return html.replace("{{CONFIG}}", config).encode("utf-8")


def static_files() -> StaticFiles:
    return StaticFiles(directory=STATIC)


@router.get("/", include_in_schema=False)
async def index(svc: Svc) -> Response:
    return HTMLResponse(svc.page)
