"""Store locations: which backend a location names, and the parts of a PostgreSQL URL.

Kept apart from the PostgreSQL backend so that choosing a backend (``open_store``, the CLI)
never imports the PostgreSQL driver.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import SplitResult, parse_qsl, quote, unquote, urlencode, urlsplit

from ..model import StoreError

__all__ = ["SECRET_PARAMS", "VECTOR_SEARCH_MODES", "is_postgres_url", "redacted", "scrubbed", "split_url",
           "store_exists", "without_password"]

VECTOR_SEARCH_MODES = ("exact", "hnsw")
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def is_postgres_url(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


def store_exists(location: str) -> bool:
    """Whether ``location`` names a store that exists: a PostgreSQL URL is taken to (its server
    says otherwise when connected to), a SQLite file must exist. The one presence check: a read
    from a mistyped location would otherwise create an empty store and answer from nothing."""
    return is_postgres_url(location) or Path(location.removeprefix("sqlite:///")).is_file()


def split_url(url: str) -> tuple[str, str, str]:
    """(libpq conninfo, schema, vector search mode): evidex's own query parameters removed."""
    parts = _parts(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    own = {k: v for k, v in params if k in ("schema", "vector_search")}
    rest = [(k, v) for k, v in params if k not in own]
    schema = own.get("schema", "evidex")
    if not _IDENT.match(schema):
        raise StoreError(f"schema must be a lower-case SQL identifier (letters, digits, _), got {schema!r}")
    mode = own.get("vector_search", "exact")
    if mode not in VECTOR_SEARCH_MODES:
        raise StoreError(f"vector_search must be one of {', '.join(VECTOR_SEARCH_MODES)}, got {mode!r}")
    return _unsplit(parts._replace(query=urlencode(rest))), schema, mode


#: libpq connection parameters whose value is a credential or names where one is kept: never
#: shown (``redacted``) nor stored (``without_password``).
SECRET_PARAMS = frozenset({"password", "sslpassword", "passfile", "service", "servicefile", "sslkey"})
_MASK = "***"
#: ``key=value`` pairs of a libpq keyword/value string or a URL's query (value quoted or not).
_PAIR = re.compile(r"(?<![\w.-])(" + "|".join(sorted(SECRET_PARAMS, key=len, reverse=True))
                   + r")(\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&#]*)", re.IGNORECASE)


#: A URL's ``user:password@`` inside free text.
_USERINFO = re.compile(r"(://[^/@:\s]*:)[^/@\s]+@")


def _parts(url: str) -> SplitResult:
    try:
        return urlsplit(url)
    except ValueError as exc:  # "Invalid IPv6 URL": one line, not a traceback
        raise StoreError(f"{_masked_userinfo(url)} is not a PostgreSQL URL libpq accepts: {exc}") from None


def _masked_userinfo(url: str) -> str:
    """``url`` with whatever stands between ``user:`` and ``@`` masked (for a URL that does not
    even split)."""
    masked = re.sub(r"(//[^/@:]*:)[^/@]*@", r"\1***@", url)
    return _PAIR.sub(lambda m: m.group(1) + m.group(2) + _MASK, masked)


def redacted(location: str) -> str:
    """``location`` for messages, logs and listings: a URL's userinfo password and the value of
    every credential parameter (``password``, ``sslpassword``, ``passfile``, ``service``,
    ``servicefile``, ``sslkey``; in the query or a keyword/value string) replaced by ``***``.
    The one redaction every printer, log line and error uses; a path is returned as it is."""
    if not is_postgres_url(location):
        return _PAIR.sub(lambda m: m.group(1) + m.group(2) + _MASK, location) if "=" in location else location
    try:
        parts = urlsplit(location)
    except ValueError:
        return _masked_userinfo(location)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            netloc = f"{userinfo.split(':', 1)[0]}:{_MASK}@{host}"
    query = "&".join(_mask_pair(kv) for kv in parts.query.split("&")) if parts.query else ""
    return _unsplit(parts._replace(netloc=netloc, query=query))


def _unsplit(parts: SplitResult) -> str:
    """``urlunsplit`` that keeps an empty authority: ``postgresql:///db?host=/run`` is a valid
    libpq URL (host in the query), which ``urlunsplit`` would turn into ``postgresql:/db``."""
    out = f"{parts.scheme}://{parts.netloc}{parts.path}"
    if parts.query:
        out += f"?{parts.query}"
    if parts.fragment:
        out += f"#{parts.fragment}"
    return out


def _mask_pair(pair: str) -> str:
    key, eq, _ = pair.partition("=")
    return f"{key}={_MASK}" if eq and unquote(key).strip().lower() in SECRET_PARAMS else pair


def scrubbed(text: str, *locations: str) -> str:
    """``text`` (a driver's error message, say) with every credential of ``locations`` and
    every ``password=...``-style pair replaced by ``***``: a message quoting a connection
    string shows no secret either."""
    for location in locations:
        for secret in _secrets(location):
            if len(secret) >= 3:  # a one- or two-letter secret would mask unrelated text
                text = text.replace(secret, _MASK)
        redacted_form = redacted(location)
        if location != redacted_form:
            text = text.replace(location, redacted_form)
    text = _USERINFO.sub(r"\1***@", text)  # any URL's user:password@ the message quotes
    return _PAIR.sub(lambda m: m.group(1) + m.group(2) + _MASK, text)


def _secrets(location: str) -> list[str]:
    try:
        parts = urlsplit(location)
    except ValueError:
        parts = None
    if not is_postgres_url(location) or parts is None:
        return [m.group(3).strip("'") for m in _PAIR.finditer(location) if m.group(3)]
    out = [parts.password, unquote(parts.password)] if parts.password else []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key.strip().lower() in SECRET_PARAMS and value:
            out += [value, quote(value, safe="")]
    return sorted(set(out), key=len, reverse=True)


def without_password(url: str) -> str:
    """The URL without its credentials (userinfo password, every ``SECRET_PARAMS`` parameter),
    stored where others read it (a tenant's move mark): libpq finds the password of whoever
    connects in their own configuration, password file or environment."""
    if not is_postgres_url(url):
        return url
    parts = _parts(url)
    netloc = parts.netloc
    if parts.password is not None:
        user = parts.username or ""
        host = parts.netloc.rsplit("@", 1)[1]
        netloc = f"{user}@{host}" if user else host
    kept = [kv for kv in parts.query.split("&") if kv
            and unquote(kv.partition("=")[0]).strip().lower() not in SECRET_PARAMS] if parts.query else []
    return _unsplit(parts._replace(netloc=netloc, query="&".join(kept)))
