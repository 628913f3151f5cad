"""Optional extras: which packages each one brings, and the one-line error when one is missing.

``pip install evidex`` is the library with the embedded SQLite store. The HTTP service and the
MCP server (``evidex[server]``), PostgreSQL (``evidex[postgres]``) and the PDF, Word and HTML
readers (``evidex[formats]``) are extras; the code that needs one calls ``require`` before
importing it, so a missing package is reported as the command that installs it rather than as
a traceback from deep inside an import.
"""

from __future__ import annotations

from importlib.util import find_spec

from .model import MissingExtraError

__all__ = ["EXTRAS", "require"]

#: extra -> {importable module: the PyPI distribution that provides it}
EXTRAS: dict[str, dict[str, str]] = {
    "server": {"fastapi": "fastapi", "uvicorn": "uvicorn", "jwt": "pyjwt", "mcp": "mcp",
               "prometheus_client": "prometheus-client"},
    "postgres": {"psycopg": "psycopg", "psycopg_pool": "psycopg-pool"},
    "formats": {"pypdf": "pypdf", "docx": "python-docx", "selectolax": "selectolax"},
}


def require(extra: str, what: str, *modules: str) -> None:
    """Raise ``MissingExtraError`` naming ``pip install 'evidex[extra]'`` unless ``modules``
    (default: every module of the extra) can be imported. ``what`` names the feature that
    needs them, for the message. Looks the modules up without importing them."""
    for module in modules or tuple(EXTRAS[extra]):
        if find_spec(module) is None:
            raise MissingExtraError(extra, what, EXTRAS[extra].get(module, module))
