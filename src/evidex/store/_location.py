"""Store locations: which backend a location names, and the parts of a PostgreSQL URL.

Kept apart from the PostgreSQL backend so that choosing a backend (``open_store``, the CLI)
never imports the PostgreSQL driver.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..model import StoreError

__all__ = ["VECTOR_SEARCH_MODES", "is_postgres_url", "redacted", "split_url", "without_password"]

VECTOR_SEARCH_MODES = ("exact", "hnsw")
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def is_postgres_url(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


def split_url(url: str) -> tuple[str, str, str]:
    """(libpq conninfo, schema, vector search mode): evidex's own query parameters removed."""
    parts = urlsplit(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    own = {k: v for k, v in params if k in ("schema", "vector_search")}
    rest = [(k, v) for k, v in params if k not in own]
    schema = own.get("schema", "evidex")
    if not _IDENT.match(schema):
        raise StoreError(f"schema must be a lower-case SQL identifier (letters, digits, _), got {schema!r}")
    mode = own.get("vector_search", "exact")
    if mode not in VECTOR_SEARCH_MODES:
        raise StoreError(f"vector_search must be one of {', '.join(VECTOR_SEARCH_MODES)}, got {mode!r}")
    return urlunsplit(parts._replace(query=urlencode(rest))), schema, mode


def redacted(url: str) -> str:
    """The URL without its password, for messages and ``stats``."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def without_password(url: str) -> str:
    """The URL with its password left out (stored where others read it: libpq finds the
    password of whoever connects in their password file or environment)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{user}@{host}" if user else host))
