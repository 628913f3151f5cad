"""The HTTP service, the web page and the MCP server: thin layers over :class:`evidex.KnowledgeBase`.

Needs the ``server`` extra (``pip install 'evidex[server]'``): importing this package without
it raises ``MissingExtraError`` with that line. The library never imports this package; the
``evidex serve`` and ``evidex mcp`` commands do, when they run.

Besides the app and the servers: ``render_page`` (the web page with its configuration, as the
app serves it at ``/``), ``service_scheduler`` (the configuration's scheduled syncs and drift
checks as ``evidex serve`` runs them) and ``start_scheduler`` (the same on a background thread).
"""

from ..extras import require

require("server", "the evidex service")

from ._app import create_app  # noqa: E402
from ._deps import DriftFn, SyncFn  # noqa: E402
from ._page import render_page  # noqa: E402
from ._pool import StorePool  # noqa: E402
from ._run import build_app, proxy_options, run_mcp, serve, service_scheduler, start_scheduler  # noqa: E402

__all__ = ["DriftFn", "StorePool", "SyncFn", "build_app", "create_app", "proxy_options", "render_page",
           "run_mcp", "serve", "service_scheduler", "start_scheduler"]
