"""The HTTP service, the web page and the MCP server: thin layers over :class:`evidex.KnowledgeBase`.

Needs the ``server`` extra (``pip install 'evidex[server]'``): importing this package without
it raises ``MissingExtraError`` with that line. The library never imports this package; the
``evidex serve`` and ``evidex mcp`` commands do, when they run.
"""

from ..extras import require

require("server", "the evidex service")

from ._app import create_app  # noqa: E402
from ._deps import DriftFn, SyncFn  # noqa: E402
from ._pool import StorePool  # noqa: E402
from ._run import build_app, proxy_options, run_mcp, serve  # noqa: E402

__all__ = ["DriftFn", "StorePool", "SyncFn", "build_app", "create_app", "proxy_options", "run_mcp", "serve"]
